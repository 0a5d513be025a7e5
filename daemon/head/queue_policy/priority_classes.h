// The head's named priorities (the config table's priority_class,
// "high=100,low=-10"): what a job file's `priority: high` means. A job's
// priority is resolved once, at submit, so that changing the classes later
// does not reorder jobs already queued.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "common/status.h"

namespace clusterd {

class PriorityClasses {
 public:
  // Parses "NAME=N[,NAME=N...]" ("" for none). A name is as a job's name
  // may be; N a whole number in [-1000000, 1000000].
  static Result<PriorityClasses> Parse(const std::string& text);

  // The class's priority; an error naming the known classes when it has none.
  Result<int> Resolve(const std::string& name) const;
  // "high, low" (in name order), or "none are defined".
  std::string Names() const;
  const std::map<std::string, int>& classes() const { return classes_; }

  // The range a job's priority may take, classes' and integers' alike.
  static constexpr int kMin = -1000000;
  static constexpr int kMax = 1000000;

 private:
  std::map<std::string, int> classes_;
};

}  // namespace clusterd
