#include <catch2/catch.hpp>

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "cli/pack_progress.h"
#include "cli/package_builder.h"
#include "common/sha256.h"
#include "temp_tree.h"

using namespace clusterd;
using clusterd::testing::TempTree;

namespace {

ScannedTree Scan(const TempTree& t, std::vector<std::string> excludes = {}) {
  auto scanned = ScanWorkingDir(t.root(), ScanOptions{std::move(excludes), uint64_t{1} << 30});
  REQUIRE(scanned.ok());
  return std::move(*scanned);
}

BuiltPackage Build(ScannedTree tree, const std::string& out) {
  auto built = BuildPackage(&tree, out);
  INFO(built.status().message());
  REQUIRE(built.ok());
  return *built;
}

std::string Manifest(const TempTree& t) {
  ScannedTree tree = Scan(t);
  REQUIRE(HashRemaining(&tree).ok());
  return ManifestHash(tree);
}

void SetMtime(const std::string& path, time_t seconds) {
  timespec times[2] = {{0, UTIME_OMIT}, {seconds, 0}};
  REQUIRE(utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW) == 0);
}

// Lets the coarse clock that stamps files move on, so files written by the
// test are not "racy" for the hash cache.
void LetClockTick() {
  timespec res;
  clock_getres(CLOCK_REALTIME_COARSE, &res);
  timespec pause{0, 2 * res.tv_nsec + 1000000};
  nanosleep(&pause, nullptr);
}

std::string Str(const char* s) { return s == nullptr ? "" : s; }

void MakeProject(const TempTree& t) {
  t.Write("train.py", "import torch\n", 0755);
  t.Write("lib/model.py", "class Net: pass\n");
  t.Write("lib/.clusterignore", "*.log\n");
  t.Write("data/big.bin", std::string((3 << 20) + 7, 'q'));  // more than one 1 MiB piece
  t.Mkdir("empty");
  t.Symlink("lib/train.py", "../train.py");
}

}  // namespace

TEST_CASE("the same content builds the same package, byte for byte", "[package][builder]") {
  TempTree t, out;
  MakeProject(t);
  SetMtime(t.Path("lib/model.py"), 1700000000);
  BuiltPackage first = Build(Scan(t), out.Path("1.tar"));
  BuiltPackage second = Build(Scan(t), out.Path("2.tar"));
  CHECK(first.id == second.id);
  CHECK(out.Read("1.tar") == out.Read("2.tar"));
  CHECK(first.id == *Sha256OfFile(out.Path("1.tar")));
  CHECK(first.size == std::filesystem::file_size(out.Path("1.tar")));
  CHECK(first.files == 4);
  CHECK(first.bytes == 13 + 16 + 6 + (3 << 20) + 7);
  // Plain ustar headers (no pax records for short ASCII names), whole data
  // blocks, two zero blocks at the end and no padding after them.
  CHECK(first.size == 8 * 512 + ((3 << 20) + 512) + 3 * 512 + 1024);

  // An ignored log written into a folder changes the folder's mtime, not the id.
  t.Write("lib/run.log", "step 1\n");
  CHECK(Build(Scan(t), out.Path("3.tar")).id == first.id);

  // A file's mtime is in the package: another second, another id; the
  // manifest, made of content only, stays.
  std::string manifest = Manifest(t);
  SetMtime(t.Path("lib/model.py"), 1700000001);
  CHECK(Build(Scan(t), out.Path("4.tar")).id != first.id);
  CHECK(Manifest(t) == manifest);
  SetMtime(t.Path("lib/model.py"), 1700000000);
  CHECK(Build(Scan(t), out.Path("5.tar")).id == first.id);
}

TEST_CASE("packing hashes every file's content on the way, large ones on the hasher's thread", "[package][builder]") {
  TempTree t, out;
  MakeProject(t);
  t.Write("data/mid.bin", std::string((256 << 10) + 1, 'm'));  // just past what the packing thread hashes itself
  ScannedTree tree = Scan(t);
  REQUIRE(BuildPackage(&tree, out.Path("p.tar")).ok());
  size_t files = 0;
  for (const auto& e : tree.entries) {
    if (e.type != EntryType::kFile) continue;
    INFO(e.path);
    CHECK(e.sha256 == *Sha256OfFile(t.Path(e.path)));
    ++files;
  }
  CHECK(files == 5);
}

TEST_CASE("the manifest hash follows content, modes, links and names", "[package][builder]") {
  TempTree t;
  MakeProject(t);
  std::string base = Manifest(t);
  t.Write("train.py", "import jax!!\n", 0755);  // same size
  std::string edited = Manifest(t);
  CHECK(edited != base);
  chmod(t.Path("train.py").c_str(), 0644);
  CHECK(Manifest(t) != edited);
  chmod(t.Path("train.py").c_str(), 0755);
  CHECK(Manifest(t) == edited);
  std::filesystem::remove(t.Path("lib/train.py"));
  t.Symlink("lib/train.py", "../data/big.bin");
  CHECK(Manifest(t) != edited);
  std::filesystem::rename(t.Path("empty"), t.Path("vacant"));
  std::string renamed = Manifest(t);
  CHECK(renamed != edited);
  CHECK(renamed.size() == 64);
}

TEST_CASE("package entries carry no owners, atimes or ctimes", "[package][builder]") {
  TempTree t, out;
  MakeProject(t);
  SetMtime(t.Path("train.py"), 1600000000);
  ScannedTree tree = Scan(t);
  Build(tree, out.Path("p.tar"));
  archive* a = archive_read_new();
  archive_read_support_format_tar(a);
  REQUIRE(archive_read_open_filename(a, out.Path("p.tar").c_str(), 65536) == ARCHIVE_OK);
  std::vector<std::string> names;
  archive_entry* e;
  while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
    std::string name = archive_entry_pathname(e);
    names.push_back(name);
    INFO(name);
    CHECK(archive_entry_uid(e) == 0);
    CHECK(archive_entry_gid(e) == 0);
    CHECK(Str(archive_entry_uname(e)).empty());
    CHECK(Str(archive_entry_gname(e)).empty());
    CHECK_FALSE(archive_entry_atime_is_set(e));
    CHECK_FALSE(archive_entry_ctime_is_set(e));
    CHECK(archive_entry_mtime_nsec(e) == 0);
    if (name == "train.py") {
      CHECK(archive_entry_mtime(e) == 1600000000);
      CHECK(archive_entry_perm(e) == 0755);
      CHECK(archive_entry_size(e) == 13);
    }
    if (name == "lib/train.py") CHECK(std::string(archive_entry_symlink(e)) == "../train.py");
    if (name == "lib/") {  // the newest of lib/'s contents
      int64_t newest = 0;
      for (const auto& entry : tree.entries) {
        if (entry.path.rfind("lib/", 0) == 0) newest = std::max(newest, entry.mtime_ns / 1000000000);
      }
      CHECK(archive_entry_mtime(e) == newest);
    }
  }
  archive_read_free(a);
  CHECK(names == std::vector<std::string>{"data/", "data/big.bin", "empty/", "lib/", "lib/.clusterignore",
                                          "lib/model.py", "lib/train.py", "train.py"});
}

TEST_CASE("a file that changes after the scan fails the build", "[package][builder]") {
  TempTree t, out;
  MakeProject(t);
  ScannedTree tree = Scan(t);
  t.Write("lib/model.py", "class Net: pass  # longer now\n");
  auto built = BuildPackage(&tree, out.Path("p.tar"));
  REQUIRE_FALSE(built.ok());
  CHECK(built.status().message() == "working_dir " + t.root() + ": lib/model.py changed while it was being packed; submit again");
  CHECK(std::filesystem::is_empty(out.root()));
}

TEST_CASE("packing reports progress and ends at the totals", "[package][builder]") {
  TempTree t, out;
  MakeProject(t);
  ScannedTree tree = Scan(t);
  std::vector<std::tuple<uint64_t, uint64_t, size_t, size_t>> calls;
  auto built = BuildPackage(&tree, out.Path("p.tar"), [&](uint64_t db, uint64_t tb, size_t df, size_t tf) {
    calls.emplace_back(db, tb, df, tf);
  });
  REQUIRE(built.ok());
  REQUIRE_FALSE(calls.empty());
  CHECK(calls.back() == std::make_tuple(tree.file_bytes, tree.file_bytes, size_t{4}, size_t{4}));
  CHECK(FormatPackProgress(uint64_t{40} << 20, uint64_t{100} << 20, 1234, 2000) ==
        "Packing working_dir: 1,234/2,000 files, 40.0/100.0 MiB");
  CHECK(FormatPackProgress(0, 999, 0, 1) == "Packing working_dir: 0/1 files, 0/999 B");
  CHECK(FormatPackProgress(uint64_t{3} << 30, uint64_t{5} << 30, 1, 1234567) ==
        "Packing working_dir: 1/1,234,567 files, 3.0/5.0 GiB");
}

TEST_CASE("the progress line is drawn only on a terminal", "[package][builder]") {
  int pipe_fds[2];
  REQUIRE(pipe(pipe_fds) == 0);
  {
    ProgressPrinter printer(pipe_fds[1]);
    ProgressFn fn = std::ref(printer);
    fn(1, 2, 1, 2);
  }
  close(pipe_fds[1]);
  char c;
  CHECK(read(pipe_fds[0], &c, 1) == 0);
  close(pipe_fds[0]);

  int master = posix_openpt(O_RDWR | O_NOCTTY);
  REQUIRE(master >= 0);
  REQUIRE(grantpt(master) == 0);
  REQUIRE(unlockpt(master) == 0);
  int tty = open(ptsname(master), O_RDWR | O_NOCTTY);
  REQUIRE(tty >= 0);
  termios raw;
  tcgetattr(tty, &raw);
  cfmakeraw(&raw);  // no "\n" -> "\r\n" on the way through
  tcsetattr(tty, TCSANOW, &raw);
  {
    ProgressPrinter printer(tty);
    printer(512, 1024, 1, 2);
    printer(1024, 1024, 2, 2);
  }
  std::string drawn;
  char buffer[256];
  ssize_t n;
  while (drawn.find('\n') == std::string::npos && (n = read(master, buffer, sizeof buffer)) > 0) {
    drawn.append(buffer, static_cast<size_t>(n));
  }
  CHECK(drawn ==
        "\rPacking working_dir: 1/2 files, 0.5/1.0 KiB\x1b[K\rPacking working_dir: 2/2 files, 1.0/1.0 KiB\x1b[K\n");
  close(tty);
  close(master);
}

TEST_CASE("an unchanged folder gets its id from the cache without reading a file", "[package][builder]") {
  TempTree t, out, home;
  MakeProject(t);
  LetClockTick();
  std::string dir = home.Path("hashes");
  HashCache cold_cache = HashCache::Load(dir, t.root());
  auto cold = PrepareWorkingDir(t.root(), {}, &cold_cache, PackageFile(out.Path("cold.tar")));
  REQUIRE(cold.ok());
  CHECK(cold->built);
  CHECK(cold->id == *Sha256OfFile(out.Path("cold.tar")));

  // Next run: every file's hash is known from its stat data alone.
  HashCache cache = HashCache::Load(dir, t.root());
  ScannedTree tree = Scan(t);
  CHECK(HashesFromCache(&tree, &cache) == 0);
  CHECK(ManifestHash(tree) == cold->manifest);
  auto warm = PrepareWorkingDir(t.root(), {}, &cache, PackageFile(out.Path("warm.tar")));
  REQUIRE(warm.ok());
  CHECK_FALSE(warm->built);
  CHECK(warm->id == cold->id);
  CHECK(warm->size == cold->size);
  CHECK_FALSE(std::filesystem::exists(out.Path("warm.tar")));

  // The head lost it: build again, same content, same id.
  auto rebuilt = PrepareWorkingDir(t.root(), {}, &cache, PackageFile(out.Path("again.tar")), /*reuse_cached_id=*/false);
  REQUIRE(rebuilt.ok());
  CHECK(rebuilt->built);
  CHECK(rebuilt->id == cold->id);

  // An edit means a new package.
  t.Write("train.py", "import torch  # v2\n", 0755);
  HashCache after_edit = HashCache::Load(dir, t.root());
  auto edited = PrepareWorkingDir(t.root(), {}, &after_edit, PackageFile(out.Path("edited.tar")));
  REQUIRE(edited.ok());
  CHECK(edited->built);
  CHECK(edited->id != cold->id);
  CHECK(edited->manifest != cold->manifest);
}
