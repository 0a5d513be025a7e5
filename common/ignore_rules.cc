#include "common/ignore_rules.h"

#include <optional>

#include "common/glob_match.h"

namespace clusterd {
namespace {

// Trailing spaces go unless escaped with '\' (git's trim_trailing_spaces).
void TrimTrailingSpaces(std::string* line) {
  std::optional<size_t> last_space;
  for (size_t i = 0; i < line->size(); ++i) {
    char c = (*line)[i];
    if (c == ' ') {
      if (!last_space) last_space = i;
      continue;
    }
    if (c == '\\' && ++i == line->size()) return;  // a lone trailing '\' keeps all
    last_space.reset();
  }
  if (last_space) line->resize(*last_space);
}

std::optional<IgnoreRule> Parse(std::string line, const std::string& base_dir, const std::string& source) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line.empty() || line[0] == '#') return std::nullopt;
  TrimTrailingSpaces(&line);
  IgnoreRule rule;
  rule.base_dir = base_dir;
  rule.source = source;
  size_t begin = 0;
  if (line[0] == '!') {
    rule.negated = true;
    begin = 1;
  }
  std::string pattern = line.substr(begin);
  if (!pattern.empty() && pattern.back() == '/') {
    rule.dir_only = true;
    pattern.pop_back();
  }
  rule.anchored = pattern.find('/') != std::string::npos;
  if (rule.anchored && pattern[0] == '/') pattern.erase(0, 1);
  if (pattern.empty()) return std::nullopt;
  rule.pattern = std::move(pattern);
  return rule;
}

bool RuleMatches(const IgnoreRule& rule, const std::string& path, bool is_dir) {
  if (rule.dir_only && !is_dir) return false;
  std::string_view under(path);
  if (!rule.base_dir.empty()) {
    if (path.size() <= rule.base_dir.size() + 1 || path.compare(0, rule.base_dir.size(), rule.base_dir) != 0 ||
        path[rule.base_dir.size()] != '/') {
      return false;
    }
    under.remove_prefix(rule.base_dir.size() + 1);
  }
  if (rule.anchored) return GlobMatch(rule.pattern, under);
  size_t slash = under.rfind('/');
  return GlobMatch(rule.pattern, slash == std::string_view::npos ? under : under.substr(slash + 1));
}

const IgnoreRule* LastMatch(const std::vector<IgnoreRule>& rules, const std::string& path, bool is_dir) {
  for (auto it = rules.rbegin(); it != rules.rend(); ++it) {
    if (RuleMatches(*it, path, is_dir)) return &*it;
  }
  return nullptr;
}

}  // namespace

IgnoreRules::IgnoreRules() { Add(".git", "", "built-in"); }

bool IgnoreRules::Add(const std::string& line, const std::string& base_dir, const std::string& source) {
  auto rule = Parse(line, base_dir, source);
  if (!rule) return false;
  file_rules_.push_back(std::move(*rule));
  return true;
}

void IgnoreRules::AddFile(const std::string& text, const std::string& base_dir, const std::string& label) {
  size_t begin = 0;
  for (int number = 1; begin < text.size(); ++number) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    Add(text.substr(begin, end - begin), base_dir, label + ":" + std::to_string(number));
    begin = end + 1;
  }
}

bool IgnoreRules::AddOverride(const std::string& line, const std::string& source) {
  auto rule = Parse(line, "", source);
  if (!rule) return false;
  override_rules_.push_back(std::move(*rule));
  return true;
}

const IgnoreRule* IgnoreRules::DecidingRule(const std::string& path, bool is_dir) const {
  if (const IgnoreRule* rule = LastMatch(override_rules_, path, is_dir)) return rule;
  return LastMatch(file_rules_, path, is_dir);
}

bool IgnoreRules::IsIgnoredInWalk(const std::string& path, bool is_dir) const {
  const IgnoreRule* rule = DecidingRule(path, is_dir);
  return rule != nullptr && !rule->negated;
}

bool IgnoreRules::IsIgnored(const std::string& path, bool is_dir) const {
  for (size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1)) {
    if (IsIgnoredInWalk(path.substr(0, slash), true)) return true;
  }
  return IsIgnoredInWalk(path, is_dir);
}

}  // namespace clusterd
