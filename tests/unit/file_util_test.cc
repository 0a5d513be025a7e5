// MakeDirs, WriteFileAtomic and RemoveTree: the folders and files every daemon writes.
#include <sys/stat.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "common/file_util.h"
#include "job_spec_test_util.h"

using clusterd::Durability;
using clusterd::MakeDirs;
using clusterd::Status;
using clusterd::WriteFileAtomic;
using clusterd::testing::TempDir;

namespace {

namespace fs = std::filesystem;

bool IsDir(const fs::path& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

TEST_CASE("MakeDirs makes every missing folder of a path, and is happy with one that exists", "[files]") {
  TempDir dir;
  const fs::path deep = dir.path / "a" / "b" / "c";
  REQUIRE(MakeDirs(deep.string()).ok());
  CHECK(IsDir(dir.path / "a"));
  CHECK(IsDir(deep));
  REQUIRE(MakeDirs(deep.string()).ok());          // again: nothing to do
  REQUIRE(MakeDirs(deep.string() + "//").ok());   // trailing slashes are the same folder
  REQUIRE(MakeDirs((deep / "d").string()).ok());  // only the leaf is new
  CHECK(IsDir(deep / "d"));
}

TEST_CASE("MakeDirs names the path when a file stands where a folder must go", "[files]") {
  TempDir dir;
  const std::string file = dir.Write("plain", "x");
  Status in_the_way = MakeDirs(file);
  CHECK(in_the_way.code() == Status::Code::kIOError);
  CHECK(in_the_way.message().find(file) != std::string::npos);
  Status below_a_file = MakeDirs(file + "/sub");
  CHECK_FALSE(below_a_file.ok());
  CHECK(below_a_file.message().find("plain") != std::string::npos);
}

TEST_CASE("WriteFileAtomic replaces the whole file with its mode, with or without an fsync", "[files]") {
  TempDir dir;
  const std::string path = (dir.path / "record").string();
  REQUIRE(WriteFileAtomic(path, "first\n", 0600).ok());
  REQUIRE(WriteFileAtomic(path, "second\n", 0640, Durability::kWhileRunning).ok());
  CHECK(clusterd::ReadWholeFile(path).value_or("") == "second\n");
  struct stat st {};
  REQUIRE(stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0640);
  // No temporary sibling is left behind.
  int entries = 0;
  for (const auto& entry : fs::directory_iterator(dir.path)) entries += entry.is_regular_file() ? 1 : 0;
  CHECK(entries == 1);
  CHECK_FALSE(WriteFileAtomic((dir.path / "missing" / "x").string(), "y").ok());
}

// An agent that is not root removes a working folder in which its job
// locked a folder (chmod 000, 555).
// Run as nobody when the tests run as root, who may remove anything.
TEST_CASE("RemoveTree removes a tree with locked folders deeper than PATH_MAX too as their owner and follows no symlink out",
          "[files]") {
  TempDir dir;
  fs::permissions(dir.path, fs::perms(0755));
  const fs::path agent = dir.path / "agent";  // the agent's own folder, which holds the tree
  const fs::path tree = agent / "work";
  fs::create_directories(tree / "locked" / "in");
  fs::create_directories(tree / "read_only" / "in");
  std::ofstream(tree / "locked" / "in" / "f") << "a";
  std::ofstream(tree / "read_only" / "in" / "g") << "b";
  std::ofstream(dir.path / "canary") << "kept";
  fs::create_directories(dir.path / "outside");
  std::ofstream(dir.path / "outside" / "h") << "kept";
  fs::create_symlink(dir.path / "outside", tree / "read_only" / "in" / "link");
  const bool as_nobody = geteuid() == 0;
  if (as_nobody) {
    for (const auto& entry : fs::recursive_directory_iterator(tree)) REQUIRE(lchown(entry.path().c_str(), 65534, 65534) == 0);
    REQUIRE(lchown(tree.c_str(), 65534, 65534) == 0);
    REQUIRE(lchown(agent.c_str(), 65534, 65534) == 0);
  }
  // Deeper than PATH_MAX, made relative to each folder in turn, its
  // bottom folder locked.
  const uid_t owner = as_nobody ? 65534 : geteuid();
  int fd = open(tree.c_str(), O_RDONLY | O_DIRECTORY);
  REQUIRE(fd >= 0);
  REQUIRE(mkdirat(fd, "deep", 0755) == 0);
  for (int level = 0; level < 25; ++level) {
    const std::string name = level == 0 ? "deep" : std::string(200, 'd');
    if (level > 0) REQUIRE(mkdirat(fd, name.c_str(), 0755) == 0);
    const int child = openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY);
    REQUIRE(child >= 0);
    REQUIRE(fchown(child, owner, owner) == 0);
    close(fd);
    fd = child;
  }
  REQUIRE(mkdirat(fd, "bottom", 0755) == 0);
  REQUIRE(fchownat(fd, "bottom", owner, owner, 0) == 0);
  REQUIRE(fchmod(fd, 0500) == 0);
  close(fd);
  fs::permissions(tree / "locked", fs::perms(0));
  fs::permissions(tree / "read_only" / "in", fs::perms(0555));
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    if (as_nobody && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(2);
    Status removed = clusterd::RemoveTree(tree.string());
    if (!removed.ok()) fprintf(stderr, "%s\n", removed.message().c_str());
    _exit(removed.ok() ? 0 : 1);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK_FALSE(fs::exists(tree));
  CHECK(fs::exists(dir.path / "canary"));
  CHECK(fs::exists(dir.path / "outside" / "h"));
  CHECK((fs::status(dir.path / "outside").permissions() & fs::perms::others_exec) != fs::perms::none);
}

namespace {
// Sets FS_IMMUTABLE_FL on `path` as `chattr +i` does; false where the file
// system or the user cannot.
bool MakeImmutable(const fs::path& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  int flags = 0;
  bool set = ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0 && (flags |= FS_IMMUTABLE_FL, ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0);
  close(fd);
  return set;
}
}  // namespace

// A root job's `chattr +i` on a shipped file must not fail every later
// checkout of its package on the node (the cache unpacks it again), nor
// keep its working folder.
TEST_CASE("RemoveTree removes a tree whose files and folders were made immutable", "[files]") {
  TempDir dir;
  const fs::path tree = dir.path / "package";
  fs::create_directories(tree / "frozen");
  std::ofstream(tree / "run.sh") << "#!/bin/sh\n";
  std::ofstream(tree / "frozen" / "f") << "f";
  if (!MakeImmutable(tree / "run.sh") || !MakeImmutable(tree / "frozen")) {
    WARN("this file system or user cannot set the immutable flag: not tried");
    return;
  }
  REQUIRE(clusterd::RemoveTree(tree.string()).ok());
  CHECK_FALSE(fs::exists(tree));
}
