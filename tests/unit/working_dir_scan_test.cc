#include <catch2/catch.hpp>

#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "cli/working_dir_scan.h"
#include "temp_tree.h"

using namespace clusterd;
using clusterd::testing::TempTree;

namespace {

std::vector<std::string> Paths(const ScannedTree& tree) {
  std::vector<std::string> out;
  for (const auto& e : tree.entries) out.push_back(e.path);
  return out;
}

const TreeEntry& Find(const ScannedTree& tree, const std::string& path) {
  for (const auto& e : tree.entries) {
    if (e.path == path) return e;
  }
  FAIL("no entry " << path);
  throw;
}

// Root reads everything, so unreadable files are tested from a child that
// has dropped to nobody; its scan's error message comes back over a pipe.
std::string ScanAsNobody(const std::string& root) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    std::string out;
    if (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0 || getuid() != 65534) {
      out = "could not drop privileges";
    } else {
      auto scanned = ScanWorkingDir(root, {});
      out = scanned.ok() ? "ok" : scanned.status().message();
    }
    (void)!write(fds[1], out.data(), out.size());
    _exit(0);
  }
  close(fds[1]);
  std::string out;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fds[0], buffer, sizeof buffer)) > 0) out.append(buffer, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return out;
}

// Scans `root` as a user for whom mode bits count: nobody when we are root.
std::string ScanUnprivileged(const std::string& root) {
  if (geteuid() == 0) return ScanAsNobody(root);
  auto scanned = ScanWorkingDir(root, {});
  return scanned.ok() ? "ok" : scanned.status().message();
}

}  // namespace

TEST_CASE("scan lists what will be packed, sorted, with stat data", "[package][scan]") {
  TempTree t;
  t.Write("train.py", "print('hi')\n", 0755);
  t.Write("a-b.txt", "x");
  t.Write("a/b/c.txt", "hello", 0640);
  t.Write("a/.clusterignore", "*.tmp\n");
  t.Write("a/scratch.tmp", "junk");
  t.Write("top.tmp", "kept: the rule is a/'s");
  t.Write("data/x.log", "log");
  t.Write(".git/HEAD", "ref: refs/heads/main\n");
  t.Write("build/out.o", "obj");
  t.Symlink("build/escape", "/etc");  // never looked at: build/ is not entered
  t.Symlink("link", "a/b/c.txt");
  t.Symlink("a/b/abs", t.Path("train.py"));
  t.Symlink("a/b/self", t.root());
  t.Symlink("dangling", "nowhere");
  auto scanned = ScanWorkingDir(t.root(), ScanOptions{{"*.log", "build/"}, uint64_t{2} << 30});
  REQUIRE(scanned.ok());
  const ScannedTree& tree = *scanned;
  CHECK(tree.root == t.root());
  // Byte order: "a-b.txt" sorts before "a/...", and a folder before its contents.
  CHECK(Paths(tree) == std::vector<std::string>{"a", "a-b.txt", "a/.clusterignore", "a/b", "a/b/abs", "a/b/c.txt",
                                                "a/b/self", "dangling", "data", "link", "top.tmp", "train.py"});
  const TreeEntry& script = Find(tree, "train.py");
  CHECK(script.type == EntryType::kFile);
  CHECK(script.mode == 0755);
  CHECK(script.size == 12);
  struct stat st;
  REQUIRE(lstat(t.Path("train.py").c_str(), &st) == 0);
  CHECK(script.mtime_ns == int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec);
  CHECK(script.ctime_ns == int64_t{st.st_ctim.tv_sec} * 1000000000 + st.st_ctim.tv_nsec);
  CHECK(script.ino == st.st_ino);
  CHECK(script.dev == st.st_dev);
  CHECK(Find(tree, "a/b/c.txt").mode == 0640);
  CHECK(Find(tree, "a").type == EntryType::kDir);
  CHECK(Find(tree, "a").size == 0);
  CHECK(Find(tree, "link").type == EntryType::kSymlink);
  CHECK(Find(tree, "link").link_target == "a/b/c.txt");
  CHECK(Find(tree, "link").size == 0);
  // Absolute links into the folder come back relative.
  CHECK(Find(tree, "a/b/abs").link_target == "../../train.py");
  CHECK(Find(tree, "a/b/self").link_target == "../..");
  CHECK(Find(tree, "dangling").link_target == "nowhere");
  CHECK(tree.file_count == 5);
  CHECK(tree.file_bytes == 12 + 1 + 5 + 6 + 22);
  CHECK(tree.warnings.empty());
}

TEST_CASE("scan through a symlinked root keeps absolute links to the real folder", "[package][scan]") {
  TempTree t;
  t.Write("real/f.txt", "f");
  t.Symlink("alias", t.Path("real"));
  t.Symlink("real/via_real", t.Path("real/f.txt"));
  t.Symlink("real/via_alias", t.Path("alias/f.txt"));
  auto scanned = ScanWorkingDir(t.Path("alias"), {});
  REQUIRE(scanned.ok());
  CHECK(Find(*scanned, "via_real").link_target == "f.txt");
  CHECK(Find(*scanned, "via_alias").link_target == "f.txt");
}

TEST_CASE("scan refuses symlinks that point out of the folder", "[package][scan]") {
  struct Case {
    const char* link;
    const char* target;
  };
  const Case cases[] = {{"data", "/home/u/big"}, {"up", ".."},           {"sub/up2", "../../x"},
                        {"sub/sneaky", "a/../../../x"}, {"through", "dot/.."}};
  for (const auto& c : cases) {
    TempTree t;
    t.Mkdir("sub");
    t.Symlink("dot", ".");  // inside, but ".." through it leaves
    t.Symlink(c.link, c.target);
    auto scanned = ScanWorkingDir(t.root(), {});
    INFO(c.link << " -> " << c.target);
    REQUIRE_FALSE(scanned.ok());
    CHECK(scanned.status().code() == Status::Code::kInvalidArgument);
    CHECK(scanned.status().message() ==
          "working_dir " + t.root() + ": " + c.link + " -> " + c.target +
              " is a symlink pointing out of the folder; it would not exist on the nodes (drop it with `excludes:`)");
    // Left out, it is no longer a problem.
    CHECK(ScanWorkingDir(t.root(), ScanOptions{{c.link}, uint64_t{1} << 30}).ok());
  }
}

TEST_CASE("scan skips sockets, FIFOs and devices with a warning", "[package][scan]") {
  TempTree t;
  t.Write("keep.txt", "k");
  REQUIRE(mkfifo(t.Path("pipe").c_str(), 0644) == 0);
  int sock = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::string sock_path = t.Path("sock");
  REQUIRE(sock_path.size() < sizeof addr.sun_path);
  std::copy(sock_path.begin(), sock_path.end(), addr.sun_path);
  REQUIRE(bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  close(sock);
  bool device = mknod(t.Path("null").c_str(), S_IFCHR | 0644, makedev(1, 3)) == 0;  // root only
  auto scanned = ScanWorkingDir(t.root(), {});
  REQUIRE(scanned.ok());
  CHECK(Paths(*scanned) == std::vector<std::string>{"keep.txt"});
  std::vector<std::string> expected;
  if (device) expected.push_back("working_dir " + t.root() + ": skipped null (a device file)");
  expected.push_back("working_dir " + t.root() + ": skipped pipe (a FIFO)");
  expected.push_back("working_dir " + t.root() + ": skipped sock (a socket)");
  std::sort(scanned->warnings.begin(), scanned->warnings.end());
  CHECK(scanned->warnings == expected);
}

TEST_CASE("scan refuses a folder over the size cap and names the largest files", "[package][scan]") {
  TempTree t;
  t.Write("a.bin", std::string(6000, 'a'));
  t.Write("b/b.bin", std::string(3000, 'b'));
  t.Write("c.bin", std::string(2048, 'c'));
  t.Write("d.bin", std::string(1500, 'd'));
  t.Write("e.bin", std::string(100, 'e'));
  t.Write("f.bin", std::string(10, 'f'));
  t.Write("skip.log", std::string(100000, 'l'));
  auto scanned = ScanWorkingDir(t.root(), ScanOptions{{"*.log"}, 8192});
  REQUIRE_FALSE(scanned.ok());
  CHECK(scanned.status().code() == Status::Code::kResourceExhausted);
  CHECK(scanned.status().message() ==
        "working_dir " + t.root() +
            " is 12.4 KiB, over the 8.0 KiB cap (max_package_size); largest files: a.bin 5.9 KiB, b/b.bin 2.9 KiB, "
            "c.bin 2.0 KiB, d.bin 1.5 KiB, e.bin 100 B; leave them out with `excludes:` or .clusterignore");
  CHECK(ScanWorkingDir(t.root(), ScanOptions{{"*.log"}, 12658}).ok());
}

TEST_CASE("scan fails on a file or folder it cannot read", "[package][scan]") {
  TempTree t;
  chmod(t.root().c_str(), 0755);
  t.Write("ok.txt", "fine");
  t.Write("secret.bin", "no", 0600);
  if (geteuid() != 0) chmod(t.Path("secret.bin").c_str(), 0);
  CHECK(ScanUnprivileged(t.root()) == "working_dir " + t.root() + ": cannot read file secret.bin: Permission denied");
  // Left out, it is never opened.
  t.Write(".clusterignore", "secret.bin\n");
  CHECK(ScanUnprivileged(t.root()) == "ok");

  t.Mkdir("private", 0700);
  if (geteuid() != 0) chmod(t.Path("private").c_str(), 0);
  CHECK(ScanUnprivileged(t.root()) == "working_dir " + t.root() + ": cannot read folder private: Permission denied");
  chmod(t.Path("private").c_str(), 0755);
  t.Write("private/x", "x");
  chmod(t.Path("private").c_str(), 0644);  // names readable, entries not
  CHECK(ScanUnprivileged(t.root()) == "working_dir " + t.root() + ": cannot read folder private: Permission denied");
}

TEST_CASE("scan names a missing or non-folder root", "[package][scan]") {
  TempTree t;
  t.Write("file", "x");
  CHECK(ScanWorkingDir(t.Path("nope"), {}).status().message() == "working_dir " + t.Path("nope") + " does not exist");
  CHECK(ScanWorkingDir(t.Path("file"), {}).status().message() == "working_dir " + t.Path("file") + " is not a folder");
  CHECK(HumanBytes(0) == "0 B");
  CHECK(HumanBytes(1023) == "1023 B");
  CHECK(HumanBytes(1024) == "1.0 KiB");
  CHECK(HumanBytes(uint64_t{800} << 20) == "800.0 MiB");
  CHECK(HumanBytes(uint64_t{2469606195}) == "2.3 GiB");
  CHECK(HumanBytesExact(uint64_t{4} << 30) == "4 GiB");
  CHECK(HumanBytesExact(uint64_t{1536} << 20) == "1536 MiB");
  CHECK(HumanBytesExact(1000) == "1000 B");
  CHECK(HumanBytesExact(uint64_t{2469606195}) == "2.3 GiB");
}
