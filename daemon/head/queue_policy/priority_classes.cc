#include "daemon/head/queue_policy/priority_classes.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>

#include <fmt/format.h>

namespace clusterd {

namespace {

bool ValidClassName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return false;
  }
  return true;
}

}  // namespace

Result<PriorityClasses> PriorityClasses::Parse(const std::string& text) {
  PriorityClasses parsed;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(start, comma - start);
    start = comma + 1;
    if (item.empty()) {
      if (comma == text.size()) break;
      continue;
    }
    const size_t eq = item.find('=');
    const std::string name = item.substr(0, eq);
    if (eq == std::string::npos || !ValidClassName(name)) {
      return Status::InvalidArgument(fmt::format(
          "priority_class: '{}' is not NAME=N (a name of letters, digits, '_', '-' or '.', then a whole number)", item));
    }
    const std::string number = item.substr(eq + 1);
    errno = 0;
    char* end = nullptr;
    const long value = std::strtol(number.c_str(), &end, 10);
    if (number.empty() || *end != '\0' || errno != 0 || value < kMin || value > kMax) {
      return Status::InvalidArgument(
          fmt::format("priority_class: {}'s priority '{}' is not a whole number from {} to {}", name, number, kMin, kMax));
    }
    if (!parsed.classes_.emplace(name, static_cast<int>(value)).second) {
      return Status::InvalidArgument(fmt::format("priority_class: {} is defined twice", name));
    }
  }
  return parsed;
}

Result<int> PriorityClasses::Resolve(const std::string& name) const {
  auto it = classes_.find(name);
  if (it != classes_.end()) return it->second;
  return Status::InvalidArgument(fmt::format(
      "priority: no priority class '{}' on this cluster ({}); give a number, or a class the head's "
      "--priority-class defines",
      name, classes_.empty() ? "none are defined" : "known: " + Names()));
}

std::string PriorityClasses::Names() const {
  if (classes_.empty()) return "none are defined";
  std::string names;
  for (const auto& [name, value] : classes_) {
    if (!names.empty()) names += ", ";
    names += fmt::format("{} ({})", name, value);
  }
  return names;
}

}  // namespace clusterd
