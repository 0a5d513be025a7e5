#include "common/storage/s3_xml.h"

namespace clusterd {

namespace {

std::string Decode(const std::string& text) {
  static const std::pair<const char*, char> kEntities[] = {
      {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
  std::string out;
  for (size_t i = 0; i < text.size();) {
    bool matched = false;
    if (text[i] == '&') {
      for (const auto& [entity, c] : kEntities) {
        if (text.compare(i, std::char_traits<char>::length(entity), entity) == 0) {
          out.push_back(c);
          i += std::char_traits<char>::length(entity);
          matched = true;
          break;
        }
      }
    }
    if (!matched) out.push_back(text[i++]);
  }
  return out;
}

}  // namespace

std::vector<std::string> XmlValues(const std::string& xml, const std::string& name) {
  std::vector<std::string> values;
  const std::string open = "<" + name + ">", close = "</" + name + ">";
  for (size_t at = xml.find(open); at != std::string::npos; at = xml.find(open, at)) {
    size_t begin = at + open.size();
    size_t end = xml.find(close, begin);
    if (end == std::string::npos) break;
    values.push_back(Decode(xml.substr(begin, end - begin)));
    at = end + close.size();
  }
  return values;
}

std::string XmlValue(const std::string& xml, const std::string& name) {
  auto values = XmlValues(xml, name);
  return values.empty() ? "" : values.front();
}

std::string XmlEscape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

}  // namespace clusterd
