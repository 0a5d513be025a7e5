#include <catch2/catch.hpp>

#include <string>

#include "common/glob_match.h"

using namespace clusterd;

namespace {
struct GlobCase {
  const char* pattern;
  const char* text;
  bool match;
};
}  // namespace

// From git's t/t3070-wildmatch.sh (the WM_PATHNAME column), the matcher
// behind .gitignore.
TEST_CASE("GlobMatch agrees with git's wildmatch table", "[package][glob]") {
  const GlobCase cases[] = {
      {"foo", "foo", true},
      {"bar", "foo", false},
      {"", "", true},
      {"???", "foo", true},
      {"??", "foo", false},
      {"*", "foo", true},
      {"f*", "foo", true},
      {"*f", "foo", false},
      {"*foo*", "foo", true},
      {"*ob*a*r*", "foobar", true},
      {"*ab", "aaaaaaabababab", true},
      {"foo\\*", "foo*", true},
      {"foo\\*bar", "foobar", false},
      {"f\\\\oo", "f\\oo", true},
      {"*[al]?", "ball", true},
      {"[ten]", "ten", false},
      {"**[!te]", "ten", true},
      {"**[!ten]", "ten", false},
      {"t[a-g]n", "ten", true},
      {"t[!a-g]n", "ten", false},
      {"t[!a-g]n", "ton", true},
      {"t[^a-g]n", "ton", true},
      {"a[]]b", "a]b", true},
      {"a[]-]b", "a-b", true},
      {"a[]-]b", "a]b", true},
      {"a[]-]b", "aab", false},
      {"a[]a-]b", "aab", true},
      {"]", "]", true},
      // Slashes: only "**" between them crosses one.
      {"foo*bar", "foo/baz/bar", false},
      {"foo**bar", "foo/baz/bar", false},
      {"foo**bar", "foobazbar", true},
      {"foo/**/bar", "foo/baz/bar", true},
      {"foo/**/**/bar", "foo/baz/bar", true},
      {"foo/**/bar", "foo/b/a/z/bar", true},
      {"foo/**/**/bar", "foo/b/a/z/bar", true},
      {"foo/**/bar", "foo/bar", true},
      {"foo/**/**/bar", "foo/bar", true},
      {"foo?bar", "foo/bar", false},
      {"foo[/]bar", "foo/bar", false},
      {"foo[^a-z]bar", "foo/bar", false},
      {"f[^eiu][^eiu][^eiu][^eiu][^eiu]r", "foo/bar", false},
      {"f[^eiu][^eiu][^eiu][^eiu][^eiu]r", "foo-bar", true},
      {"**/foo", "foo", true},
      {"**/foo", "XXX/foo", true},
      {"**/foo", "bar/baz/foo", true},
      {"*/foo", "bar/baz/foo", false},
      {"**/bar*", "foo/bar/baz", false},
      {"**/bar/*", "deep/foo/bar/baz", true},
      {"**/bar/*", "deep/foo/bar/baz/", false},
      {"**/bar/**", "deep/foo/bar/baz/", true},
      {"**/bar/*", "deep/foo/bar", false},
      {"**/bar/**", "deep/foo/bar/", true},
      {"**/bar**", "foo/bar/baz", false},
      {"*/bar/**", "foo/bar/baz/x", true},
      {"*/bar/**", "deep/foo/bar/baz/x", false},
      {"**/bar/*/*", "deep/foo/bar/baz/x", true},
      {"abc/**", "abc/x/y", true},
      {"abc/**", "abc", false},
      {"a/**/b", "a/x/y/b", true},
      {"a/**/b", "a/xb", false},
      // Classes, escapes and malformed patterns.
      {"[[:digit:]][[:alpha:]]", "1x", true},
      {"[[:digit:]]", "x", false},
      {"[[:upper:][:space:]]", " ", true},
      {"[a-c\\]]", "]", true},
      {"\\[x]", "[x]", true},
      {"[abc", "a", false},
      {"abc\\", "abc", false},
      {"*.py[co]", "x.pyc", true},
      {"*.py[co]", "x.py", false},
      // Many stars against a long miss stays fast (abort propagation).
      {"*a*a*a*a*a*a*a*a*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false},
      {"**/*a*a*a*a*a*a*a*b", "a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false},
  };
  for (const auto& c : cases) {
    INFO("pattern '" << c.pattern << "' text '" << c.text << "'");
    CHECK(GlobMatch(c.pattern, c.text) == c.match);
  }
}
