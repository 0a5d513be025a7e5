// The store's folder alone: what a scan takes for a blob, temporaries
// cleared at the start, and a directory standing where a blob goes.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/sha256.h"
#include "daemon/store/blob_files.h"

#include "temp_dir.h"

using namespace clusterd;
namespace fs = std::filesystem;

namespace {

using clusterd::testing::TempDir;

void Write(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << bytes;
}

}  // namespace

TEST_CASE("a blob id is 64 lower-case hex digits", "[store][blob_files]") {
  CHECK(IsBlobId(Sha256Hex("x")));
  CHECK_FALSE(IsBlobId(std::string(64, 'A')));
  CHECK_FALSE(IsBlobId(std::string(63, 'a')));
  CHECK_FALSE(IsBlobId("../../etc/passwd"));
}

TEST_CASE("a scan of the store's folder finds blob files with their size and last use, nothing else",
          "[store][blob_files]") {
  TempDir dir{"blob-files-test"};
  BlobFiles files(dir.path.string());
  Write(dir.path / "tmp" / "left.0", "an unfinished write");
  REQUIRE(files.Prepare().ok());
  CHECK(fs::is_empty(dir.path / "tmp"));

  const std::string id = Sha256Hex("bytes");
  Write(files.PathOf(id), "bytes");
  files.SetLastUse(id, 1'700'000'000'123'000'000);
  Write(dir.path / "blobs" / id.substr(0, 2) / "not-an-id", "x");
  const std::string elsewhere = Sha256Hex("elsewhere");
  Write(dir.path / "blobs" / (elsewhere.substr(0, 2) == "00" ? "01" : "00") / elsewhere, "x");  // wrong fan folder
  fs::create_directories(files.PathOf(Sha256Hex("a folder")));

  auto found = files.Scan();
  REQUIRE(found.ok());
  REQUIRE(found->size() == 1);
  CHECK((*found)[0].id == id);
  CHECK((*found)[0].size == 5);
  CHECK((*found)[0].modified_nanos == 1'700'000'000'123'000'000);
}

TEST_CASE("a finished write moves into place over a directory standing there", "[store][blob_files]") {
  TempDir dir{"blob-files-test"};
  BlobFiles files(dir.path.string());
  REQUIRE(files.Prepare().ok());
  const std::string id = Sha256Hex("bytes");
  fs::create_directories(fs::path(files.PathOf(id)) / "inside");
  const std::string temp = files.NewTempPath(id);
  CHECK(temp != files.NewTempPath(id));
  Write(temp, "bytes");
  REQUIRE(files.MoveIntoPlace(temp, id).ok());
  CHECK(fs::is_regular_file(files.PathOf(id)));
  CHECK_FALSE(files.Gone(id));
  REQUIRE(files.Remove(id).ok());
  CHECK(files.Gone(id));
  CHECK(files.Remove(id).ok());  // gone already
}
