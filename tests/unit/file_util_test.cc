// MakeDirs and WriteFileAtomic: the folders and files every daemon writes.
#include <sys/stat.h>

#include <catch2/catch.hpp>

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
