#include <catch2/catch.hpp>

#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "byte_source_util.h"
#include "common/sha256.h"
#include "common/storage/tar_package.h"
#include "temp_tree.h"

using namespace clusterd;
using clusterd::testing::TempTree;

namespace {

struct Spec {
  std::string name;
  mode_t type = AE_IFREG;
  mode_t perm = 0644;
  std::string content;
  std::string link;      // symlink target
  std::string hardlink;  // hard link target
};

// Crafts an archive as an attacker could: libarchive writes whatever it is told.
void WriteTar(const std::string& path, const std::vector<Spec>& specs) {
  archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  REQUIRE(archive_write_open_filename(a, path.c_str()) == ARCHIVE_OK);
  for (const auto& s : specs) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, s.name.c_str());
    archive_entry_set_filetype(e, s.type);
    archive_entry_set_perm(e, s.perm);
    archive_entry_set_uid(e, 1234);
    archive_entry_set_mtime(e, 1600000000, 0);
    if (s.type == AE_IFCHR) archive_entry_set_rdev(e, makedev(1, 3));
    if (!s.link.empty()) archive_entry_set_symlink(e, s.link.c_str());
    if (!s.hardlink.empty()) archive_entry_set_hardlink(e, s.hardlink.c_str());
    archive_entry_set_size(e, static_cast<la_int64_t>(s.content.size()));
    REQUIRE(archive_write_header(a, e) == ARCHIVE_OK);
    if (!s.content.empty()) archive_write_data(a, s.content.data(), s.content.size());
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
}

std::vector<std::string> Listing(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE("ExtractPackage keeps modes, mtimes and symlinks, not owners", "[package][extract]") {
  TempTree t;
  WriteTar(t.Path("p.tar"), {{"bin", AE_IFDIR, 0555},
                             {"bin/run.sh", AE_IFREG, 0755, "#!/bin/sh\necho hi\n"},
                             {"./data/x.txt", AE_IFREG, 0600, "x"},
                             {"latest", AE_IFLNK, 0777, "", "data/x.txt"},
                             {"data/up", AE_IFLNK, 0777, "", "../bin"},
                             {"empty", AE_IFREG, 0644, ""}});
  Status st = ExtractPackage(t.Path("p.tar"), t.Path("out"));
  REQUIRE(st.ok());
  struct stat s;
  REQUIRE(stat(t.Path("out/bin/run.sh").c_str(), &s) == 0);
  CHECK((s.st_mode & 07777) == 0755);
  CHECK(s.st_mtime == 1600000000);
  CHECK(s.st_uid == geteuid());
  REQUIRE(stat(t.Path("out/bin").c_str(), &s) == 0);
  CHECK((s.st_mode & 07777) == 0555);
  REQUIRE(stat(t.Path("out/data/x.txt").c_str(), &s) == 0);
  CHECK((s.st_mode & 07777) == 0600);
  CHECK(t.Read("out/data/x.txt") == "x");
  CHECK(std::filesystem::read_symlink(t.Path("out/latest")) == "data/x.txt");
  CHECK(t.Read("out/latest") == "x");
  CHECK(std::filesystem::is_regular_file(t.Path("out/empty")));
  CHECK(Listing(t.root()) == std::vector<std::string>{"out", "p.tar"});  // no temp folder left
  // Once there, it stays: a second extraction does not touch it.
  CHECK(ExtractPackage(t.Path("p.tar"), t.Path("out")).code() == Status::Code::kAlreadyExists);
}

TEST_CASE("ExtractPackage refuses hostile archives and leaves nothing behind", "[package][extract]") {
  struct Case {
    std::vector<Spec> specs;
    std::string message;  // after "package <path>: "
  };
  const std::vector<Case> cases = {
      {{{"ok.txt", AE_IFREG, 0644, "fine"}, {"../evil", AE_IFREG, 0644, "x"}},
       "entry ../evil has a '..' in its path; refused"},
      {{{"a/../../evil", AE_IFREG, 0644, "x"}}, "entry a/../../evil has a '..' in its path; refused"},
      {{{"/abs", AE_IFREG, 0644, "x"}}, "entry /abs is an absolute path; refused"},
      {{{"l", AE_IFLNK, 0777, "", "/etc"}, {"l/passwd", AE_IFREG, 0644, "root::0:0::/:/bin/sh\n"}},
       "entry l is a symlink (-> /etc) out of the package; refused"},
      {{{"l", AE_IFLNK, 0777, "", "../../../../etc"}, {"l/passwd", AE_IFREG, 0644, "x"}},
       "entry l/passwd lies under symlink l; refused"},
      {{{"up", AE_IFLNK, 0777, "", "../x"}}, "entry up is a symlink (-> ../x) out of the package; refused"},
      {{{"d", AE_IFLNK, 0777, "", "."}, {"e", AE_IFLNK, 0777, "", "d/.."}},
       "entry e is a symlink (-> d/..) out of the package; refused"},
      {{{"f", AE_IFREG, 0644, "x"}, {"h", AE_IFREG, 0644, "", "", "f"}}, "entry h is a hard link; refused"},
      {{{"h", AE_IFREG, 0644, "", "", "/etc/shadow"}}, "entry h is a hard link; refused"},
      {{{"null", AE_IFCHR, 0666}}, "entry null is a device, FIFO or socket; refused"},
      {{{"fifo", AE_IFIFO, 0666}}, "entry fifo is a device, FIFO or socket; refused"},
      {{{"su", AE_IFREG, 04755, "x"}}, "entry su has a setuid or setgid bit; refused"},
      {{{"sg", AE_IFDIR, 02755}}, "entry sg has a setuid or setgid bit; refused"},
      {{{"twice", AE_IFREG, 0644, "a"}, {"twice", AE_IFLNK, 0777, "", "/etc/passwd"}},
       "entry twice appears twice; refused"},
  };
  for (const auto& c : cases) {
    TempTree t;
    std::string archive = t.Path("p.tar");
    WriteTar(archive, c.specs);
    t.Mkdir("cache");
    Status st = ExtractPackage(archive, t.Path("cache/out"));
    INFO(c.message);
    CHECK(st.code() == Status::Code::kInvalidArgument);
    CHECK(st.message() == "package " + archive + ": " + c.message);
    CHECK_FALSE(std::filesystem::exists(t.Path("cache/out")));
    CHECK(Listing(t.root()) == std::vector<std::string>{"cache", "p.tar"});
    CHECK(Listing(t.Path("cache")).empty());
  }
}

TEST_CASE("ExtractPackage reports a damaged archive as corruption", "[package][extract]") {
  TempTree t;
  t.Write("garbage.tar", std::string(3000, 'z'));
  Status st = ExtractPackage(t.Path("garbage.tar"), t.Path("out"));
  CHECK(st.code() == Status::Code::kCorruption);
  CHECK(st.message().rfind("package " + t.Path("garbage.tar") + ": ", 0) == 0);

  WriteTar(t.Path("good.tar"), {{"big", AE_IFREG, 0644, std::string(100000, 'b')}});
  std::filesystem::resize_file(t.Path("good.tar"), 20000);
  st = ExtractPackage(t.Path("good.tar"), t.Path("out"));
  CHECK(st.code() == Status::Code::kCorruption);
  CHECK(ExtractPackage(t.Path("missing.tar"), t.Path("out")).code() == Status::Code::kCorruption);
  CHECK(Listing(t.root()) == std::vector<std::string>{"garbage.tar", "good.tar"});
}

TEST_CASE("SymlinkStaysInside follows the package's own symlinks", "[package][extract]") {
  const std::map<std::string, std::string> links = {
      {"d", "sub/deeper"}, {"dot", "."}, {"loop1", "loop2"}, {"loop2", "loop1"}, {"abs", "/etc"}};
  CHECK(SymlinkStaysInside("l", "x", links));
  CHECK(SymlinkStaysInside("l", ".", links));
  CHECK(SymlinkStaysInside("a/b/l", "../../x", links));
  CHECK_FALSE(SymlinkStaysInside("a/b/l", "../../../x", links));
  CHECK_FALSE(SymlinkStaysInside("l", "/x", links));
  CHECK(SymlinkStaysInside("y", "d/../../z", links));  // d is two levels down
  CHECK_FALSE(SymlinkStaysInside("y", "dot/..", links));
  CHECK_FALSE(SymlinkStaysInside("y", "abs/x", links));
  CHECK(SymlinkStaysInside("y", "loop1/x", links));  // ELOOP: resolves nowhere
  CHECK(SymlinkStaysInside("y", "a//./b", links));
}

TEST_CASE("ExtractPackage from a stream renames into place only once its bytes checked out", "[package][extract]") {
  TempTree t;
  WriteTar(t.Path("p.tar"), {{"a.txt", AE_IFREG, 0644, "alpha"},
                             {"big.bin", AE_IFREG, 0600, std::string(300000, 'b')},
                             {"link", AE_IFLNK, 0777, "", "a.txt"}});
  const std::string bytes = t.Read("p.tar");
  const std::string id = Sha256Hex(bytes);
  t.Mkdir("cache");
  const std::string dest = t.Path("cache/" + id);

  SECTION("right bytes: extracted and in place") {
    testing::MemorySource source(bytes, id);
    Status st = ExtractPackage(&source, "package " + id, dest);
    INFO(st.message());
    REQUIRE(st.ok());
    REQUIRE(source.finished);
    CHECK(t.Read("cache/" + id + "/a.txt") == "alpha");
    CHECK(std::filesystem::file_size(dest + "/big.bin") == 300000);
    CHECK(std::filesystem::read_symlink(dest + "/link") == "a.txt");
    CHECK(Listing(t.Path("cache")) == std::vector<std::string>{id});
  }
  SECTION("a flipped byte in a file's content: it extracts, but the hash fails and nothing is left") {
    testing::MemorySource source(bytes, id);
    source.flip_at = 100000;
    Status st = ExtractPackage(&source, "package " + id, dest);
    CHECK(st.code() == Status::Code::kCorruption);
    CHECK(st.message().find("failed its hash check") != std::string::npos);
    CHECK(Listing(t.Path("cache")).empty());
  }
  SECTION("a flipped byte in a header: the hash check's error wins over the extraction's") {
    testing::MemorySource source(bytes, id);
    source.flip_at = 100;
    Status st = ExtractPackage(&source, "package " + id, dest);
    CHECK(st.code() == Status::Code::kCorruption);
    CHECK(st.message().find("failed its hash check") != std::string::npos);
    CHECK(source.read == bytes.size());  // the rest was read to check the whole
    CHECK(Listing(t.Path("cache")).empty());
  }
  SECTION("a stream cut short: its error, nothing left") {
    testing::MemorySource source(bytes, id);
    source.fail_at = 150000;
    Status st = ExtractPackage(&source, "package " + id, dest);
    CHECK(st.code() == Status::Code::kUnavailable);
    CHECK(Listing(t.Path("cache")).empty());
  }
  SECTION("a hostile entry in bytes that hash right is refused as from a file") {
    WriteTar(t.Path("evil.tar"), {{"ok.txt", AE_IFREG, 0644, "fine"}, {"../evil", AE_IFREG, 0644, "x"}});
    const std::string evil = t.Read("evil.tar");
    testing::MemorySource source(evil, Sha256Hex(evil));
    Status st = ExtractPackage(&source, "package X", t.Path("cache/evil"));
    CHECK(st.code() == Status::Code::kInvalidArgument);
    CHECK(st.message() == "package X: entry ../evil has a '..' in its path; refused");
    CHECK(Listing(t.Path("cache")).empty());
  }
}
