#include "daemon/http/http_query.h"

#include <vector>

namespace clusterd {

namespace {

// The query's `key=value` parts, as sent.
std::vector<std::string> QueryParts(const std::string& target) {
  std::vector<std::string> parts;
  auto query = target.find('?');
  if (query == std::string::npos) return parts;
  for (size_t at = query + 1; at <= target.size();) {
    size_t end = target.find('&', at);
    if (end == std::string::npos) end = target.size();
    if (end > at) parts.push_back(target.substr(at, end - at));
    at = end + 1;
  }
  return parts;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<std::string> PercentDecoded(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out += ' ';
    } else if (text[i] != '%') {
      out += text[i];
    } else {
      if (i + 2 >= text.size()) return std::nullopt;  // "%" or "%4" at the end
      int high = HexDigit(text[i + 1]), low = HexDigit(text[i + 2]);
      if (high < 0 || low < 0) return std::nullopt;
      out += static_cast<char>(high * 16 + low);
      i += 2;
    }
  }
  return out;
}

bool IsParam(const std::string& part, const std::string& name) {
  return part.size() >= name.size() + 1 && part.compare(0, name.size(), name) == 0 && part[name.size()] == '=';
}

}  // namespace

std::string TargetPath(const std::string& target) { return target.substr(0, target.find('?')); }

std::optional<std::string> QueryParam(const std::string& target, const std::string& name) {
  for (const auto& part : QueryParts(target)) {
    if (IsParam(part, name)) return PercentDecoded(part.substr(name.size() + 1));
  }
  return std::nullopt;
}

std::string WithoutParam(const std::string& target, const std::string& name) {
  std::string out = TargetPath(target);
  char separator = '?';
  for (const auto& part : QueryParts(target)) {
    if (IsParam(part, name)) continue;
    out += separator + part;
    separator = '&';
  }
  return out;
}

std::string CookieValue(const std::string& header, const std::string& name) {
  for (size_t at = 0; at < header.size();) {
    size_t end = header.find(';', at);
    if (end == std::string::npos) end = header.size();
    size_t start = header.find_first_not_of(' ', at);
    if (start < end && header.compare(start, name.size(), name) == 0 && start + name.size() < end &&
        header[start + name.size()] == '=') {
      return header.substr(start + name.size() + 1, end - start - name.size() - 1);
    }
    at = end + 1;
  }
  return "";
}

}  // namespace clusterd
