#include "flags.h"

#include <cstdlib>
#include <sstream>

namespace clusterd::bench {

bool ParseFlags(int argc, char** argv, std::set<std::string>* parts, const std::map<std::string, int*>& numbers,
                const std::map<std::string, std::string*>& strings) {
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (i + 1 >= argc) return false;
    std::string value = argv[++i];
    if (flag == "--only") {
      parts->clear();
      for (size_t start = 0, comma; start <= value.size(); start = comma + 1) {
        comma = value.find(',', start);
        if (comma == std::string::npos) comma = value.size();
        parts->insert(value.substr(start, comma - start));
      }
    } else if (strings.count(flag)) {
      *strings.at(flag) = value;
    } else if (numbers.count(flag) && std::atoi(value.c_str()) > 0) {
      *numbers.at(flag) = std::atoi(value.c_str());
    } else {
      return false;
    }
  }
  return true;
}

std::vector<int> ParseNumberList(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::atoi(item.c_str()));
  return out;
}

}  // namespace clusterd::bench
