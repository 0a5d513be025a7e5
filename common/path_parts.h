// A relative path as its parts and back, for what walks a tree by name
// (the tree upload's scan, a working folder's outputs).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

namespace clusterd {

// Path components, "." and empty ones dropped ("a//./b/" -> {"a", "b"}).
inline std::vector<std::string> PathParts(const std::string& path) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (begin <= path.size()) {
    size_t end = std::min(path.find('/', begin), path.size());
    std::string part = path.substr(begin, end - begin);
    if (!part.empty() && part != ".") out.push_back(std::move(part));
    begin = end + 1;
  }
  return out;
}

// parts[from, to) joined with '/'.
inline std::string JoinParts(const std::vector<std::string>& parts, size_t from, size_t to) {
  std::string out;
  for (size_t i = from; i < to; ++i) out += (out.empty() ? "" : "/") + parts[i];
  return out;
}

inline std::string JoinParts(const std::vector<std::string>& parts) { return JoinParts(parts, 0, parts.size()); }

}  // namespace clusterd
