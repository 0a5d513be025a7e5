// Which paths of a working_dir stay out of its package: gitignore semantics
// for a job's `excludes:` and the folder's .clusterignore files (the root's
// and any subfolder's, each relative to its own folder, as git reads
// .gitignore files).
#pragma once

#include <string>
#include <vector>

namespace clusterd {

// One parsed rule: a gitignore line without its '!', leading '/' or
// trailing '/'.
struct IgnoreRule {
  std::string pattern;   // a GlobMatch pattern
  std::string base_dir;  // the folder it applies under, relative ("" = the root)
  std::string source;    // for messages: ".clusterignore:3", "excludes[0]", "built-in"
  bool negated = false;  // "!x": x is kept
  bool dir_only = false; // "x/": matches folders only
  bool anchored = false; // had a leading or middle '/': matched against the path
                         // under base_dir, else against the name at any depth
};

// Precedence, lowest first: the built-in ".git" rule, then folder files in the
// order added (a parent's .clusterignore before its subfolders'), then the
// job's `excludes:`, which like git's command line has the last word. Within
// each, the last matching rule wins. Not thread-safe; immutable use is.
class IgnoreRules {
 public:
  // Starts with the built-in rule ".git" (a "!.git" anywhere undoes it).
  IgnoreRules();

  // Adds one gitignore line of a file in folder `base_dir` ("" or "a/b").
  // Returns false (adding nothing) for blank lines and comments.
  bool Add(const std::string& line, const std::string& base_dir, const std::string& source);
  // Adds each line of an ignore file's text; sources read "label:N".
  void AddFile(const std::string& text, const std::string& base_dir, const std::string& label);
  // Adds one line of the job's `excludes:`; it applies from the root.
  bool AddOverride(const std::string& line, const std::string& source);

  // Git's answer for `path` (relative, '/'-separated, no "./"): ignored when
  // its deciding rule is not a negation, or when any parent folder is ignored
  // (a file under an excluded folder cannot be re-included).
  bool IsIgnored(const std::string& path, bool is_dir) const;
  // The same without looking at parents, for a walk that never enters an
  // ignored folder. REQUIRES: no parent folder of `path` is ignored.
  bool IsIgnoredInWalk(const std::string& path, bool is_dir) const;
  // The rule that decides `path` itself, or null when none matches.
  const IgnoreRule* DecidingRule(const std::string& path, bool is_dir) const;

  const std::vector<IgnoreRule>& file_rules() const { return file_rules_; }
  const std::vector<IgnoreRule>& override_rules() const { return override_rules_; }

 private:
  std::vector<IgnoreRule> file_rules_;      // built-in first, then folder files
  std::vector<IgnoreRule> override_rules_;  // the job's excludes
};

}  // namespace clusterd
