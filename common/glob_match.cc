#include "common/glob_match.h"

#include <cctype>
#include <cstring>

namespace clusterd {
namespace {

// Beyond match/no match, the two abort outcomes let a failed attempt tell the
// '*' loops above it that trying further positions cannot help (git's
// wildmatch does the same); without them "*a*a*a*b" is exponential.
enum Outcome { kMatch, kNoMatch, kAbortAll, kAbortToDoubleStar };

// 1 or 0 for a known class name, -1 for an unknown one.
int InNamedClass(std::string_view name, unsigned char c) {
  if (name == "alnum") return std::isalnum(c) != 0;
  if (name == "alpha") return std::isalpha(c) != 0;
  if (name == "blank") return c == ' ' || c == '\t';
  if (name == "cntrl") return std::iscntrl(c) != 0;
  if (name == "digit") return std::isdigit(c) != 0;
  if (name == "graph") return std::isgraph(c) != 0;
  if (name == "lower") return std::islower(c) != 0;
  if (name == "print") return std::isprint(c) != 0;
  if (name == "punct") return std::ispunct(c) != 0;
  if (name == "space") return std::isspace(c) != 0;
  if (name == "upper") return std::isupper(c) != 0;
  if (name == "xdigit") return std::isxdigit(c) != 0;
  return -1;
}

class Matcher {
 public:
  Matcher(std::string_view pattern, std::string_view text) : p_(pattern), t_(text) {}
  bool Matches() { return Run(0, 0) == kMatch; }

 private:
  char P(size_t i) const { return i < p_.size() ? p_[i] : '\0'; }

  // Matches the class starting at p_[*pi] == '[' against c; leaves *pi on
  // its closing ']'. Returns kAbortAll for an unclosed class.
  Outcome Class(size_t* pi, unsigned char c) {
    size_t i = *pi + 1;
    bool negated = P(i) == '!' || P(i) == '^';
    if (negated) ++i;
    bool matched = false;
    unsigned char prev = 0;
    // The first character is a member even when it is ']'.
    for (bool first = true; first || P(i) != ']'; first = false, ++i) {
      unsigned char pc = static_cast<unsigned char>(P(i));
      if (i >= p_.size()) return kAbortAll;
      if (pc == '\\') {
        if (++i >= p_.size()) return kAbortAll;
        pc = static_cast<unsigned char>(p_[i]);
        if (c == pc) matched = true;
      } else if (pc == '-' && prev != 0 && i + 1 < p_.size() && p_[i + 1] != ']') {
        unsigned char hi = static_cast<unsigned char>(p_[++i]);
        if (hi == '\\') {
          if (++i >= p_.size()) return kAbortAll;
          hi = static_cast<unsigned char>(p_[i]);
        }
        if (c >= prev && c <= hi) matched = true;
        pc = 0;  // a range cannot start another range
      } else if (pc == '[' && P(i + 1) == ':') {
        size_t end = p_.find(":]", i + 2);
        if (end == std::string_view::npos) {
          if (c == '[') matched = true;  // no name follows: a plain '['
        } else {
          int member = InNamedClass(p_.substr(i + 2, end - i - 2), c);
          if (member < 0) return kAbortAll;  // as git: a misspelt class matches nothing
          if (member == 1) matched = true;
          i = end + 1;
          pc = 0;
        }
      } else if (c == pc) {
        matched = true;
      }
      prev = pc;
    }
    *pi = i;
    return (matched != negated && c != '/') ? kMatch : kNoMatch;
  }

  Outcome Run(size_t pi, size_t ti) {
    for (; pi < p_.size(); ++pi, ++ti) {
      char pc = p_[pi];
      if (ti >= t_.size() && pc != '*') return kAbortAll;
      char tc = ti < t_.size() ? t_[ti] : '\0';
      switch (pc) {
        case '\\':
          if (++pi >= p_.size()) return kAbortAll;
          if (tc != p_[pi]) return kNoMatch;
          break;
        case '?':
          if (tc == '/') return kNoMatch;
          break;
        case '[': {
          Outcome o = Class(&pi, static_cast<unsigned char>(tc));
          if (o != kMatch) return o;
          break;
        }
        case '*':
          return Star(pi, ti);
        default:
          if (tc != pc) return kNoMatch;
      }
    }
    return ti == t_.size() ? kMatch : kNoMatch;
  }

  // p_[pi] is the first of one or more '*'.
  Outcome Star(size_t pi, size_t ti) {
    size_t first = pi;
    while (P(pi + 1) == '*') ++pi;
    ++pi;  // now past the stars
    bool crosses_slash = false;
    bool slash_after = P(pi) == '/' || (P(pi) == '\\' && P(pi + 1) == '/');
    if (pi - first >= 2 && (first == 0 || p_[first - 1] == '/') && (pi == p_.size() || slash_after)) {
      crosses_slash = true;
      // "a/**/b" also matches "a/b": let "**/" match no folder at all.
      if (P(pi) == '/' && Run(pi + 1, ti) == kMatch) return kMatch;
    }
    if (pi == p_.size()) {
      if (!crosses_slash && t_.find('/', ti) != std::string_view::npos) return kNoMatch;
      return kMatch;
    }
    for (; ti < t_.size(); ++ti) {
      Outcome o = Run(pi, ti);
      if (o != kNoMatch) {
        if (!crosses_slash || o != kAbortToDoubleStar) return o;
      } else if (!crosses_slash && t_[ti] == '/') {
        return kAbortToDoubleStar;
      }
    }
    return kAbortAll;
  }

  std::string_view p_;
  std::string_view t_;
};

}  // namespace

bool GlobMatch(std::string_view pattern, std::string_view text) { return Matcher(pattern, text).Matches(); }

}  // namespace clusterd
