// Restores from the head's real store over real gRPC (common/
// tree_transfer.h): all or nothing when a piece is corrupt or lost, hostile
// manifests refused before a byte is written, and outputs written into a
// folder that holds other things, never through its symlinks.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "common/storage/hash_cache.h"
#include "common/sha256.h"
#include "common/storage/tree_transfer.h"
#include "store_server.h"
#include "tree_test_util.h"

using namespace clusterd;
using namespace clusterd::testing;
namespace fs = std::filesystem;

TEST_CASE_METHOD(StoreAndFolder, "a restore is all or nothing: a corrupt or lost piece leaves no folder", "[tree]") {
  MakeCheckpoint(t);
  auto up = UploadTree(*client, t.Path("ckpt"), {""}, Small());
  REQUIRE(up.ok());
  auto manifest = ReadManifest(*client, up->manifest_id);
  REQUIRE(manifest.ok());
  std::string piece;
  for (const auto& e : manifest->entries()) {
    if (e.path() == "model.pt") piece = e.chunks(2);
  }
  REQUIRE(!piece.empty());

  // Flip one byte of the piece on the head's disk.
  head.Corrupt(piece, 100);
  TreeDownloadOptions options;
  options.parallel = 3;
  Status corrupt = DownloadTree(*client, up->manifest_id, t.Path("restored"), options);
  CHECK(corrupt.code() == Status::Code::kCorruption);
  INFO(corrupt.message());
  CHECK(corrupt.message().find(piece) != std::string::npos);
  CHECK(corrupt.message().find("failed its hash check") != std::string::npos);
  CHECK(corrupt.message().find(t.Path("restored/model.pt")) != std::string::npos);
  CHECK(corrupt.message().find(head.address()) != std::string::npos);
  CHECK(corrupt.message().find('\n') == std::string::npos);
  CHECK(Names(t.root()) == std::set<std::string>{"ckpt"});

  // A piece the store lost: the corrupt one, which the failed download had
  // the store check and drop.
  REQUIRE_FALSE(head.store().Has(piece));
  Status lost = DownloadTree(*client, up->manifest_id, t.Path("restored"));
  CHECK(lost.code() == Status::Code::kNotFound);
  CHECK(lost.message().find(piece) != std::string::npos);
  CHECK(Names(t.root()) == std::set<std::string>{"ckpt"});

  // An unknown manifest.
  Status unknown = DownloadTree(*client, Sha256Hex("no manifest"), t.Path("restored"));
  CHECK(unknown.code() == Status::Code::kNotFound);
  CHECK(unknown.message().find(head.address()) != std::string::npos);
  CHECK(Names(t.root()) == std::set<std::string>{"ckpt"});

  // The same tree uploaded again re-sends the lost piece, and then restores.
  // (A corrupt piece is not noticed by the store: it says it has it.)
  auto reup = UploadTree(*client, t.Path("ckpt"), {""}, Small());
  REQUIRE(reup.ok());
  CHECK(reup->sent_bytes == kChunk);
  REQUIRE(DownloadTree(*client, up->manifest_id, t.Path("restored")).ok());
}

namespace {

ManifestEntry File(const std::string& path, const std::string& content, std::vector<std::string>* blobs) {
  ManifestEntry e;
  e.set_path(path);
  e.set_mode(0644);
  e.set_size(static_cast<int64_t>(content.size()));
  if (!content.empty()) e.add_chunks(Sha256Hex(content));
  blobs->push_back(content);
  return e;
}

ManifestEntry Dir(const std::string& path) {
  ManifestEntry e;
  e.set_path(path);
  e.set_mode(0755);
  e.set_is_dir(true);
  return e;
}

ManifestEntry Link(const std::string& path, const std::string& target) {
  ManifestEntry e;
  e.set_path(path);
  e.set_mode(0777);
  e.set_link_target(target);
  return e;
}

// Stores the manifest (and its files' bytes) as a hostile head might serve it.
std::string Store(BlobClient& client, const std::vector<ManifestEntry>& entries,
                  const std::vector<std::string>& blobs) {
  Manifest m;
  m.set_chunk_bytes(kChunk);
  for (const auto& e : entries) *m.add_entries() = e;
  for (const auto& b : blobs) REQUIRE(client.UploadData(Sha256Hex(b), b).ok());
  std::string bytes = m.SerializeAsString();
  REQUIRE(client.UploadData(Sha256Hex(bytes), bytes).ok());
  return Sha256Hex(bytes);
}

}  // namespace

TEST_CASE_METHOD(StoreAndFolder, "hostile manifests are refused before anything is written", "[tree]") {
  t.Mkdir("outside");
  t.Mkdir("dest");
  t.Write("dest/mine.txt", "mine");
  std::vector<std::string> blobs;
  std::map<std::string, std::vector<ManifestEntry>> hostile = {
      {"dot-dot", {File("../x", "evil", &blobs)}},
      {"absolute", {File(t.Path("outside/x"), "evil", &blobs)}},
      {"dot-dot inside", {Dir("a"), File("a/../../x", "evil", &blobs)}},
      {"empty component", {Dir("a"), File("a//x", "evil", &blobs)}},
      {"dot", {File(".", "evil", &blobs)}},
      {"empty path", {File("", "evil", &blobs)}},
      {"symlink out", {Link("l", t.Path("outside"))}},
      {"symlink up", {Link("l", "../outside")}},
      {"through a symlink", {Link("l", t.Path("outside")), File("l/x", "evil", &blobs)}},
      {"through an inside symlink", {Dir("sub"), Link("l", "sub"), File("l/x", "evil", &blobs)}},
      {"link chain out", {Dir("a"), Dir("a/b"), Link("a/b/up", "../.."), Link("esc", "a/b/up/..")}},
      {"folder not listed", {File("a/x", "evil", &blobs)}},
      {"child before parent", {File("a/x", "evil", &blobs), Dir("a")}},
      {"twice", {File("x", "one", &blobs), File("x", "two", &blobs)}},
  };
  ManifestEntry short_of_pieces = File("x", Bytes(kChunk + 1, 5), &blobs);
  hostile["too few pieces"] = {short_of_pieces};
  ManifestEntry bad_id = File("x", "abc", &blobs);
  bad_id.set_chunks(0, "../../etc/passwd");
  hostile["piece id not an id"] = {bad_id};
  ManifestEntry both = Dir("x");
  both.set_link_target("y");
  hostile["folder and symlink"] = {both};

  for (const auto& [name, entries] : hostile) {
    INFO(name);
    std::string id = Store(*client, entries, blobs);
    Manifest m;
    for (const auto& e : entries) *m.add_entries() = e;
    m.set_chunk_bytes(kChunk);
    CHECK(CheckManifest(m).code() == Status::Code::kInvalidArgument);

    Status restore = DownloadTree(*client, id, t.Path("restored"));
    CHECK(restore.code() == Status::Code::kInvalidArgument);
    CHECK(restore.message().find(head.address()) != std::string::npos);
    Status into = DownloadInto(*client, id, t.Path("dest"));
    CHECK(into.code() == Status::Code::kInvalidArgument);
    CHECK(Names(t.root()) == std::set<std::string>{"dest", "outside"});
    CHECK(Names(t.Path("dest")) == std::set<std::string>{"mine.txt"});
    CHECK(Names(t.Path("outside")).empty());
  }

  // Symlinks that stay inside are fine, also through each other.
  std::string fine = Store(*client, {Dir("a"), Dir("a/b"), Link("a/b/up", "../.."), Link("top", "a/b/up/a"),
                                     Link("self", "."), File("a/b/f", "ok", &blobs)},
                           blobs);
  REQUIRE(DownloadTree(*client, fine, t.Path("restored")).ok());
  CHECK(t.Read("restored/top/b/f") == "ok");
}

TEST_CASE_METHOD(StoreAndFolder, "outputs land in a working folder: replaced files, everything else left alone",
                 "[tree]") {
  t.Write("node/model.pt", Bytes(2 * kChunk + 9, 51));
  t.Write("node/results/new.txt", "new", 0600);
  t.Write("node/results/sub/deep.txt", "deep");
  t.Symlink("node/results/latest", "new.txt");
  t.Write("node/empty", "");
  auto up = UploadTree(*client, t.Path("node"), {"model.pt", "results", "empty"}, Small());
  REQUIRE(up.ok());

  t.Write("submitter/model.pt", "old model");
  t.Write("submitter/train.py", "print(1)");
  t.Write("submitter/results/old.txt", "old");
  t.Write("submitter/results/latest", "was a file");
  t.Write("submitter/empty", "not empty before");
  t.Write("elsewhere/target", "untouched");
  t.Symlink("submitter/results/new.txt", t.Path("elsewhere/target"));  // never written through

  int64_t last_done = 0, last_total = 0;
  TreeDownloadOptions options;
  options.progress = [&](int64_t done, int64_t total) {
    CHECK(done >= last_done);
    last_done = done;
    last_total = total;
  };
  Status into = DownloadInto(*client, up->manifest_id, t.Path("submitter"), options);
  REQUIRE(into.ok());
  CHECK(last_done == last_total);
  CHECK(last_total == 2 * kChunk + 9 + 3 + 4);
  CHECK(t.Read("submitter/model.pt") == t.Read("node/model.pt"));
  CHECK(t.Read("submitter/train.py") == "print(1)");
  CHECK(t.Read("submitter/results/old.txt") == "old");
  CHECK(t.Read("submitter/results/new.txt") == "new");
  CHECK(fs::status(t.Path("submitter/results/new.txt")).permissions() ==
        (fs::perms::owner_read | fs::perms::owner_write));
  CHECK(fs::read_symlink(t.Path("submitter/results/latest")) == "new.txt");
  CHECK(t.Read("submitter/results/sub/deep.txt") == "deep");
  CHECK(t.Read("submitter/empty").empty());
  CHECK(t.Read("elsewhere/target") == "untouched");
  CHECK(Names(t.Path("submitter")) == std::set<std::string>{"model.pt", "train.py", "results", "empty"});
  CHECK(Names(t.Path("submitter/results")) == std::set<std::string>{"old.txt", "new.txt", "latest", "sub"});

  // A symlinked folder where the outputs have a folder: refused, nothing
  // written there nor anywhere else.
  t.Mkdir("other_place");
  fs::remove_all(t.Path("submitter/results"));
  t.Symlink("submitter/results", t.Path("other_place"));
  t.Write("submitter/model.pt", "old again");
  Status link_in_way = DownloadInto(*client, up->manifest_id, t.Path("submitter"));
  CHECK(link_in_way.code() == Status::Code::kFailedPrecondition);
  CHECK(link_in_way.message().find(t.Path("submitter/results") + " is in the way") != std::string::npos);
  CHECK(Names(t.Path("other_place")).empty());
  CHECK(t.Read("submitter/model.pt") == "old again");

  // A folder where a file goes: refused before any byte moves.
  fs::remove(t.Path("submitter/results"));
  fs::remove(t.Path("submitter/model.pt"));
  t.Mkdir("submitter/model.pt");
  Status dir_in_way = DownloadInto(*client, up->manifest_id, t.Path("submitter"));
  CHECK(dir_in_way.code() == Status::Code::kFailedPrecondition);
  CHECK(Names(t.Path("submitter")) == std::set<std::string>{"model.pt", "train.py", "empty"});  // results not made

  // A corrupt piece: nothing replaced, no temporary and no new folder left.
  fs::remove(t.Path("submitter/model.pt"));
  t.Write("submitter/model.pt", "old once more");
  auto manifest = ReadManifest(*client, up->manifest_id);
  REQUIRE(manifest.ok());
  std::string piece = manifest->entries(1).chunks(1);  // model.pt's second piece
  head.Lose(piece);
  Status lost = DownloadInto(*client, up->manifest_id, t.Path("submitter"));
  CHECK(lost.code() == Status::Code::kNotFound);
  CHECK(t.Read("submitter/model.pt") == "old once more");
  CHECK(Names(t.Path("submitter")) == std::set<std::string>{"model.pt", "train.py", "empty"});
}
