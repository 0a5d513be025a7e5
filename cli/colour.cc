#include "cli/colour.h"

#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <map>

namespace clusterd::cli {

namespace {

const std::map<std::string, const char*>& Colours() {
  static const std::map<std::string, const char*> colours = {
      {"ALIVE", "32"},    {"SUCCEEDED", "32"},  {"DEAD", "31"},    {"FAILED", "31"},  {"INFEASIBLE", "31"},
      {"DRAINING", "33"}, {"PENDING", "33"},    {"RESTARTING", "33"}, {"STOPPED", "33"}, {"RUNNING", "36"},
  };
  return colours;
}

bool WordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

}  // namespace

bool UseColour(int fd) {
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color && *no_color) return false;
  return isatty(fd) == 1;
}

std::string ColourStates(const std::string& text) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    if (!std::isupper(static_cast<unsigned char>(text[i])) || (i > 0 && WordChar(text[i - 1]))) {
      out += text[i++];
      continue;
    }
    size_t end = i;
    while (end < text.size() && WordChar(text[end])) ++end;
    std::string word = text.substr(i, end - i);
    auto colour = Colours().find(word);
    out += colour == Colours().end() ? word : std::string("\x1b[") + colour->second + "m" + word + "\x1b[0m";
    i = end;
  }
  return out;
}

std::string ForStdout(const std::string& text) { return UseColour(STDOUT_FILENO) ? ColourStates(text) : text; }

}  // namespace clusterd::cli
