// The YAML side of the job-file parser: where an error points (a file
// position or a --set override), typed reads of scalars, map iteration
// with unknown-key and duplicate-key errors, --set overrides, and the
// YAML-to-JSON conversion of the free `config` map. Internal to job_spec.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "common/status.h"

namespace clusterd::job_spec_internal {

// One `--set dotted.key=value` argument.
struct Override {
  std::string text;               // as given, for messages
  std::vector<std::string> keys;  // {"resources_per_worker", "GPU"}
  std::string path;               // "resources_per_worker.GPU"
  YAML::Node value;               // the value parsed as YAML
};
Result<Override> ParseOverride(const std::string& text);
// Sets the override's value at its path in `root` (a map), making maps on
// the way. REQUIRES: root->IsMap().
Status ApplyOverride(const Override& override, YAML::Node* root);

// Says where an error is: "job.yaml:7:3", or "--set x=1" when the key at
// `path` was last written by an override (marks there mean nothing).
class Locator {
 public:
  Locator(std::string file_name, std::vector<Override> overrides)
      : file_name_(std::move(file_name)), overrides_(std::move(overrides)) {}
  const std::string& file_name() const { return file_name_; }
  // "loc: key 'path': message"; the key part is left out for the top
  // level (path "") and when the location is an override of that key.
  Status Error(const YAML::Mark& mark, const std::string& path, const std::string& message) const;
  // "loc: message", for messages that name the key themselves.
  Status ErrorNoKey(const YAML::Mark& mark, const std::string& path, const std::string& message) const;
  // "job.yaml: message".
  Status FileError(const std::string& message) const;

 private:
  const Override* OverrideFor(const std::string& path) const;
  std::string Where(const YAML::Mark& mark, const Override* override) const;

  std::string file_name_;
  std::vector<Override> overrides_;
};

// A node of the tree with its key path ("checkpoint.keep", "entrypoint[1]")
// and the marks needed to complain about it.
class Field {
 public:
  Field(const Locator* locator, YAML::Node node, std::string path, YAML::Mark key_mark)
      : locator_(locator), node_(std::move(node)), path_(std::move(path)), key_mark_(key_mark) {}

  const YAML::Node& node() const { return node_; }
  const std::string& path() const { return path_; }
  const Locator& locator() const { return *locator_; }
  Field Child(const YAML::Node& key, const YAML::Node& value) const;
  Field Item(size_t index, const YAML::Node& value) const;

  // At the value, or at its key when the value is empty (an empty value's
  // mark is wherever the next token happens to be).
  Status Error(const std::string& message) const;
  // "expected <what>, got 'text'" (or "got a list", "got nothing", ...).
  Status TypeError(const std::string& what) const;
  // Adds this field's location to a location-free check result.
  Status Check(const Status& status) const;
  // The same at the key, for a check of the key itself (a resource or
  // variable name).
  Status CheckKey(const Status& status) const;

 private:
  YAML::Mark ErrorMark() const;
  const Locator* locator_;
  YAML::Node node_;
  std::string path_;
  YAML::Mark key_mark_;
};

// Typed reads; each refuses other types with a TypeError. Strings take any
// scalar as written ("yes", "1.0", "") but not an empty value. Integers
// take whole numbers written as floats ("1e3") and refuse what does not
// fit in 64 bits.
Result<std::string> ReadString(const Field& field);
Result<int64_t> ReadInteger(const Field& field);
Result<double> ReadNumber(const Field& field);

// Calls `fn` for each entry of a map field, in document order, after
// refusing a non-map, non-scalar keys, duplicate keys and, when `known` is
// given, unknown keys (with a did-you-mean).
using EntryFn = std::function<Status(const std::string& key, const Field& value)>;
Status ForEachEntry(const Field& map, const std::vector<std::string>* known, const EntryFn& fn);
// Calls `fn` for each item of a list field, refusing a non-list.
Status ForEachItem(const Field& list, const std::function<Status(const Field& item)>& fn);

// Compact JSON for any YAML value, typed by YAML 1.2's core schema: plain
// ints, floats, true/false and null become JSON values, everything else a
// string. Refuses .inf/.nan, non-scalar keys, nesting past a depth and
// output past kMaxConfigJsonBytes (anchors can make a small file expand
// exponentially, or refer to themselves).
Result<std::string> ToJson(const Field& field);

}  // namespace clusterd::job_spec_internal
