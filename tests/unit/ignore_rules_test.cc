#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "common/ignore_rules.h"

using namespace clusterd;

namespace {

struct Expect {
  const char* path;
  bool is_dir;
  bool ignored;
};

void CheckAll(const IgnoreRules& rules, const std::vector<Expect>& table) {
  for (const auto& e : table) {
    INFO((e.is_dir ? "folder " : "file ") << e.path);
    CHECK(rules.IsIgnored(e.path, e.is_dir) == e.ignored);
  }
}

}  // namespace

// The examples of git's gitignore(5), checked against `git check-ignore`.
TEST_CASE("ignore rules follow gitignore(5)'s examples", "[package][ignore]") {
  IgnoreRules rules;
  rules.AddFile(
      "# a comment\n"
      "hello.*\n"
      "doc/frotz/\n"
      "nitfol/\n"
      "foo/*\n"
      "**/anyfoo\n"
      "**/foo2/bar\n"
      "abc/**\n"
      "a/**/b\n"
      "/rootonly\n"
      "*.html\n"
      "!keep.html\n"
      "\\#hash\n"
      "\\!bang\n"
      "trail\\ \n"
      "spaces   \n"
      "cr\r\n"
      "\n"
      "   \n"
      "[0-9]*.dat\n",
      "", ".clusterignore");
  CheckAll(rules, {
                      {"hello.c", false, true},
                      {"sub/hello.txt", false, true},
                      {"hello", false, false},
                      {"doc/frotz", true, true},
                      {"a/doc/frotz", true, false},
                      {"doc/frotz", false, false},
                      {"nitfol", true, true},
                      {"a/nitfol", true, true},
                      {"nitfol", false, false},
                      {"foo/test.json", false, true},
                      {"foo/bar", true, true},
                      {"foo/bar/main.c", false, true},  // its folder is out
                      {"anyfoo", false, true},
                      {"x/y/anyfoo", true, true},
                      {"foo2/bar", false, true},
                      {"x/foo2/bar", false, true},
                      {"foo2/x/bar", false, false},
                      {"abc", true, false},
                      {"abc/x", false, true},
                      {"abc/x/y", false, true},
                      {"a/b", false, true},
                      {"a/x/b", false, true},
                      {"a/x/y/b", true, true},
                      {"a/xb", false, false},
                      {"rootonly", false, true},
                      {"sub/rootonly", false, false},
                      {"x.html", false, true},
                      {"sub/x.html", false, true},
                      {"keep.html", false, false},
                      {"sub/keep.html", false, false},
                      {"#hash", false, true},
                      {"!bang", false, true},
                      {"trail ", false, true},
                      {"trail", false, false},
                      {"spaces", false, true},
                      {"cr", false, true},
                      {"7days.dat", false, true},
                      {"days.dat", false, false},
                  });
  // "foo/*" itself does not match below foo/bar: only the walk's rule of not
  // entering ignored folders keeps foo/bar/main.c out.
  CHECK_FALSE(rules.IsIgnoredInWalk("foo/bar/main.c", false));
  const IgnoreRule* rule = rules.DecidingRule("keep.html", false);
  REQUIRE(rule != nullptr);
  CHECK(rule->negated);
  CHECK(rule->source == ".clusterignore:12");
}

TEST_CASE("ignore rules: everything except foo/bar (gitignore(5))", "[package][ignore]") {
  IgnoreRules rules;
  rules.AddFile("/*\n!/foo\n/foo/*\n!/foo/bar\n", "", ".clusterignore");
  CheckAll(rules, {
                      {"foo", true, false},
                      {"foo/bar", true, false},
                      {"foo/bar/x.py", false, false},
                      {"foo/baz", false, true},
                      {"other", true, true},
                      {"other/x", false, true},
                      {"top.txt", false, true},
                  });
}

TEST_CASE("subfolder .clusterignore files apply under their folder", "[package][ignore]") {
  IgnoreRules rules;
  rules.AddFile("*.log\nbuild/\n!keep.log\n!build/keep.txt\n", "", ".clusterignore");
  rules.AddFile("!debug.log\n/local.txt\ndata/\n", "sub", "sub/.clusterignore");
  CheckAll(rules, {
                      {"x.log", false, true},
                      {"keep.log", false, false},
                      {"debug.log", false, true},
                      {"sub/debug.log", false, false},
                      {"sub/deeper/debug.log", false, false},
                      {"sub/other.log", false, true},
                      {"sub/local.txt", false, true},
                      {"local.txt", false, false},
                      {"sub/deeper/local.txt", false, false},
                      {"build", true, true},
                      {"sub/build", true, true},
                      {"build", false, false},
                      {"build/keep.txt", false, true},  // no re-including under an excluded folder
                      {"sub/data", true, true},
                      {"data", true, false},
                      {"subway/data", true, false},
                  });
}

TEST_CASE(".git is left out unless a rule takes it back", "[package][ignore]") {
  IgnoreRules rules;
  CheckAll(rules, {
                      {".git", true, true},
                      {".git/config", false, true},
                      {"vendor/lib/.git", false, true},  // a submodule's .git file
                      {".gitignore", false, false},
                      {".github", true, false},
                  });
  rules.Add("!.git", "", "excludes[0]");
  CHECK_FALSE(rules.IsIgnored(".git/config", false));
}

TEST_CASE("the job's excludes have the last word over .clusterignore", "[package][ignore]") {
  IgnoreRules rules;
  rules.AddOverride("*.bin", "excludes[0]");
  rules.AddOverride("!wanted.log", "excludes[1]");
  rules.AddFile("!model.bin\n*.log\n", "", ".clusterignore");
  CheckAll(rules, {
                      {"model.bin", false, true},
                      {"wanted.log", false, false},
                      {"other.log", false, true},
                  });
  CHECK(rules.DecidingRule("model.bin", false)->source == "excludes[0]");
  CHECK_FALSE(rules.AddOverride("# nothing", "excludes[2]"));
  CHECK_FALSE(rules.Add("   ", "", "x"));
  CHECK_FALSE(rules.Add("!", "", "x"));
  CHECK(rules.DecidingRule("plain.txt", false) == nullptr);
}
