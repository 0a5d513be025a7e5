// The walk both folder scans share (common/folder_walk.h): the working_dir
// packer's and the tree upload's.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "common/folder_walk.h"
#include "temp_tree.h"

using namespace clusterd;

namespace {

// Records what a walk shows it; enters every folder but `skip`.
struct Recorder final : FolderVisitor {
  std::string skip;
  std::vector<std::string> folders;
  std::set<std::string> names;
  Status OnFolder(int /*dir_fd*/, const std::string& rel) override {
    folders.push_back(rel);
    return Status::Ok();
  }
  Status OnName(int dir_fd, const std::string& name, const std::string& rel, bool* enter) override {
    struct stat st;
    REQUIRE(fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0);
    names.insert(rel);
    *enter = S_ISDIR(st.st_mode) && rel != skip;
    return Status::Ok();
  }
  Status Unreadable(const std::string& rel, int err) const override {
    return Status::IOError("cannot read folder '" + rel + "': " + std::strerror(err));
  }
};

}  // namespace

TEST_CASE("a folder walk lists each folder before entering the ones it is told to, never through a symlink",
          "[scan][tree]") {
  testing::TempTree tree;
  tree.Write("a/one.txt", "1");
  tree.Write("a/b/two.txt", "2");
  tree.Write("skipped/three.txt", "3");
  tree.Symlink("link", "a");
  Recorder recorder;
  recorder.skip = "skipped";
  REQUIRE(WalkFolder(tree.root(), "", &recorder).ok());
  CHECK(recorder.folders == std::vector<std::string>{"", "a", "a/b"});
  CHECK(recorder.names == std::set<std::string>{"a", "a/one.txt", "a/b", "a/b/two.txt", "skipped", "link"});

  // Below the root a symlink is not followed even when asked for.
  Recorder through_link;
  Status refused = WalkFolder(tree.root(), "link", &through_link);
  CHECK(refused.code() == Status::Code::kIOError);
  CHECK(refused.message().find("cannot read folder 'link'") != std::string::npos);
  CHECK(through_link.names.empty());
}

TEST_CASE("an absolute symlink target inside the folder becomes relative to the link's folder", "[scan][tree]") {
  const std::vector<std::string> root = LexicalParts("/w/./proj/");
  const std::vector<std::string> real = LexicalParts("/mnt/x/../disk/proj");
  CHECK(root == std::vector<std::string>{"w", "proj"});
  CHECK(real == std::vector<std::string>{"mnt", "disk", "proj"});
  CHECK(RelativeTargetInside("a/b/link", "/w/proj/a/c/file", {&root}) == "../c/file");
  CHECK(RelativeTargetInside("link", "/w/proj/data", {&root}) == "data");
  CHECK(RelativeTargetInside("a/link", "/w/proj/a", {&root}) == ".");
  CHECK(RelativeTargetInside("a/link", "/w/proj", {&root}) == "..");
  CHECK(RelativeTargetInside("a/link", "/mnt/disk/proj/b", {&root, &real}) == "../b");
  CHECK_FALSE(RelativeTargetInside("a/link", "/etc/passwd", {&root, &real}).has_value());
  CHECK_FALSE(RelativeTargetInside("a/link", "/w/project", {&root}).has_value());
}

TEST_CASE("a skipped name says what it is", "[scan][tree]") {
  CHECK(std::string(SpecialFileKind(S_IFIFO)) == "a FIFO");
  CHECK(std::string(SpecialFileKind(S_IFSOCK)) == "a socket");
  CHECK(std::string(SpecialFileKind(S_IFCHR)) == "a device file");
  CHECK(std::string(SpecialFileKind(S_IFBLK)) == "a device file");
}
