// Folders through the head's real store over real gRPC (common/
// tree_transfer.h): a round trip of every kind of entry, pieces that are
// never sent twice, the hash cache, listed and missing paths, refused
// paths, a file that changes while it is sent, and an unreachable or
// refusing head. Restores' failures:
// tree_download_test.cc.
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

TEST_CASE_METHOD(StoreAndFolder, "a folder round-trips through the head's store", "[tree]") {
  MakeCheckpoint(t);

  REQUIRE(mkfifo(t.Path("ckpt/nested/pipe").c_str(), 0600) == 0);

  auto up = UploadTree(*client, t.Path("ckpt"), {""}, Small());
  REQUIRE(up.ok());
  CHECK(up->skipped == std::vector<std::string>{t.Path("ckpt") + ": skipped nested/pipe (a FIFO)"});
  fs::remove(t.Path("ckpt/nested/pipe"));
  CHECK(up->files == 6);
  CHECK(up->bytes == 5 * kChunk + 18 + 13 + 18);
  CHECK(up->sent_bytes == up->bytes);
  CHECK(up->missing.empty());

  auto manifest = ReadManifest(*client, up->manifest_id);
  REQUIRE(manifest.ok());
  CHECK(manifest->chunk_bytes() == kChunk);
  CHECK(BlobsOf(*manifest).size() == 4 + 1 + 2 + 1 + 1);  // model 4, exact 1, plus_one 2, run.sh, state.json

  REQUIRE(DownloadTree(*client, up->manifest_id, t.Path("restored")).ok());
  auto want = Snapshot(t.Path("ckpt"));
  want["abs"] = "l exact.bin";  // made relative, so it works wherever the tree lands
  auto got = Snapshot(t.Path("restored"));
  for (const auto& [path, what] : want) {
    INFO(path);
    CHECK(got[path] == what);
  }
  CHECK(got == want);
  CHECK(t.Read("restored/latest") == "{\"epoch\": 3}\n");
  CHECK(Names(t.root()) == std::set<std::string>{"ckpt", "restored"});  // no temporary left

  // Restoring over an existing folder is refused, and touches nothing.
  Status again = DownloadTree(*client, up->manifest_id, t.Path("restored"));
  CHECK(again.code() == Status::Code::kAlreadyExists);
  CHECK(Snapshot(t.Path("restored")) == want);
}

TEST_CASE_METHOD(StoreAndFolder, "whole-file and ranged blob calls agree with the store", "[tree]") {
  std::string data = Bytes(3 * (1 << 20) + 5, 9);  // several stream messages
  t.Write("f", data);
  std::string id = Sha256Hex(data);
  REQUIRE(client->Upload(id, t.Path("f")).ok());
  REQUIRE(client->Upload(id, t.Path("f")).ok());  // already there is success
  REQUIRE(client->Download(id, t.Path("g")).ok());
  CHECK(t.Read("g") == data);

  std::string middle = data.substr(1000, 1 << 20);
  REQUIRE(client->UploadRange(Sha256Hex(middle), t.Path("f"), 1000, 1 << 20).ok());
  auto fetched = client->Fetch(Sha256Hex(middle), 2 << 20);
  REQUIRE(fetched.ok());
  CHECK(*fetched == middle);
  CHECK(client->Fetch(id, 1 << 20).status().code() == Status::Code::kResourceExhausted);
  CHECK(client->Fetch(Sha256Hex("nothing"), 1 << 20).status().code() == Status::Code::kNotFound);

  // A range past the end of the file says the file changed.
  Status past = client->UploadRange(Sha256Hex("x"), t.Path("f"), static_cast<int64_t>(data.size()) - 1, 10);
  CHECK(past.message().find("changed while it was being sent") != std::string::npos);
}

TEST_CASE_METHOD(StoreAndFolder, "pieces already in the store are never sent again", "[tree]") {
  t.Write("ckpt/backbone.pt", Bytes(8 * kChunk, 11));
  t.Write("ckpt/head.pt", Bytes(8 * kChunk, 12));
  auto first = UploadTree(*client, t.Path("ckpt"), {""}, Small());
  REQUIRE(first.ok());
  CHECK(first->sent_bytes == 16 * kChunk);

  // Unchanged: nothing but one question to the store.
  auto second = UploadTree(*client, t.Path("ckpt"), {""}, Small());
  REQUIRE(second.ok());
  CHECK(second->sent_bytes == 0);
  CHECK(second->manifest_id == first->manifest_id);

  // Only one file changed (the frozen backbone did not): only its pieces go.
  t.Write("ckpt/head.pt", Bytes(8 * kChunk, 13));
  auto third = UploadTree(*client, t.Path("ckpt"), {""}, Small());
  REQUIRE(third.ok());
  CHECK(third->sent_bytes == 8 * kChunk);
  CHECK(third->manifest_id != first->manifest_id);

  // One byte changed: one piece goes.
  std::string head_pt = t.Read("ckpt/head.pt");
  head_pt[5 * kChunk + 3] ^= 1;
  t.Write("ckpt/head.pt", head_pt);
  auto fourth = UploadTree(*client, t.Path("ckpt"), {""}, Small());
  REQUIRE(fourth.ok());
  CHECK(fourth->sent_bytes == kChunk);

  // A new checkpoint folder with the same backbone sends only its new bytes.
  t.Write("ckpt2/backbone.pt", Bytes(8 * kChunk, 11));
  t.Write("ckpt2/head.pt", Bytes(8 * kChunk, 14));
  auto next_epoch = UploadTree(*client, t.Path("ckpt2"), {""}, Small());
  REQUIRE(next_epoch.ok());
  CHECK(next_epoch->sent_bytes == 8 * kChunk);
  REQUIRE(DownloadTree(*client, next_epoch->manifest_id, t.Path("back")).ok());
  CHECK(Snapshot(t.Path("back")) == Snapshot(t.Path("ckpt2")));
}

TEST_CASE_METHOD(StoreAndFolder, "the hash cache spares reading unchanged files", "[tree]") {
  t.Write("ckpt/a.bin", Bytes(4 * kChunk, 21));
  t.Write("ckpt/b.bin", Bytes(2 * kChunk + 1, 22));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the files are older than the cache
  std::string cache_dir = t.Path("hashes");
  std::string manifest_id;
  {
    HashCache cache = HashCache::Load(cache_dir, t.Path("ckpt"));
    auto up = UploadTree(*client, t.Path("ckpt"), {""}, Small(&cache));
    REQUIRE(up.ok());
    CHECK(up->hashed_bytes == 6 * kChunk + 1);
    manifest_id = up->manifest_id;
    REQUIRE(cache.Save().ok());
  }
  HashCache cache = HashCache::Load(cache_dir, t.Path("ckpt"));
  auto again = UploadTree(*client, t.Path("ckpt"), {""}, Small(&cache));
  REQUIRE(again.ok());
  CHECK(again->hashed_bytes == 0);
  CHECK(again->sent_bytes == 0);
  CHECK(again->manifest_id == manifest_id);

  // A touched file is read again (and, unchanged inside, still not sent).
  t.Write("ckpt/b.bin", t.Read("ckpt/b.bin"));
  auto touched = UploadTree(*client, t.Path("ckpt"), {""}, Small(&cache));
  REQUIRE(touched.ok());
  CHECK(touched->hashed_bytes == 2 * kChunk + 1);
  CHECK(touched->sent_bytes == 0);
  CHECK(touched->manifest_id == manifest_id);

  // Another piece size is another set of pieces: never a stale id.
  TreeUploadOptions bigger = Small(&cache);
  bigger.chunk_bytes = 2 * kChunk;
  auto resized = UploadTree(*client, t.Path("ckpt"), {""}, bigger);
  REQUIRE(resized.ok());
  CHECK(resized->hashed_bytes == 6 * kChunk + 1);
  REQUIRE(DownloadTree(*client, resized->manifest_id, t.Path("back")).ok());
  CHECK(Snapshot(t.Path("back")) == Snapshot(t.Path("ckpt")));
}

TEST_CASE_METHOD(StoreAndFolder, "outputs: listed paths with their folders, missing ones reported", "[tree]") {
  t.Write("work/model.pt", Bytes(kChunk + 5, 31));
  t.Write("work/results/metrics.json", "{}");
  t.Write("work/results/plots/loss.tsv", "step\tloss\n");
  t.Write("work/deep/a/b/keep.txt", "keep");
  t.Write("work/deep/a/other.txt", "not asked for");
  t.Write("work/train.py", "print('not an output')");

  auto up = UploadTree(*client, t.Path("work"),
                       {"model.pt", "results/", "./deep/a/b/keep.txt", "nope", "results/nope2", "model.pt/x",
                        "results/plots"},
                       Small());
  REQUIRE(up.ok());
  CHECK(up->missing == std::vector<std::string>{"nope", "results/nope2", "model.pt/x"});
  CHECK(up->files == 4);
  auto manifest = ReadManifest(*client, up->manifest_id);
  REQUIRE(manifest.ok());
  std::vector<std::string> paths;
  for (const auto& e : manifest->entries()) paths.push_back(e.path());
  CHECK(paths == std::vector<std::string>{"deep", "deep/a", "deep/a/b", "deep/a/b/keep.txt", "model.pt", "results",
                                          "results/metrics.json", "results/plots", "results/plots/loss.tsv"});

  // Paths that leave the folder, or go through a symlink, are refused.
  t.Mkdir("elsewhere");
  t.Write("elsewhere/secret", "s");
  t.Symlink("work/link_dir", t.Path("elsewhere"));
  for (const std::string& bad : {"../elsewhere/secret", "/etc/passwd", "results/../../elsewhere", "link_dir/secret"}) {
    auto refused = UploadTree(*client, t.Path("work"), {bad}, Small());
    INFO(bad);
    CHECK(refused.status().code() == Status::Code::kInvalidArgument);
    // This side's refusal: the folder is named, the store is not.
    CHECK(refused.status().message().find(t.Path("work")) != std::string::npos);
    CHECK(refused.status().message().find(head.address()) == std::string::npos);
  }
  // A symlink out of the folder is refused by name; one asked for in a
  // folder that is not is fine.
  auto out = UploadTree(*client, t.Path("work"), {"link_dir"}, Small());
  CHECK(out.status().code() == Status::Code::kInvalidArgument);
  CHECK(out.status().message().find("link_dir -> " + t.Path("elsewhere")) != std::string::npos);
  CHECK(UploadTree(*client, t.Path("work"), {"results"}, Small()).ok());

  CHECK(UploadTree(*client, t.Path("no_such_root"), {""}, Small()).status().code() == Status::Code::kNotFound);
}

// `outputs: [latest]`, a link to a run's folder, must not come back as a
// link to nothing.
TEST_CASE_METHOD(StoreAndFolder,
                 "outputs: a listed symlink brings what it points to in the folder, once, loops and all",
                 "[tree]") {
  t.Write("work/runs/run_3/model.pt", "weights");
  t.Write("work/runs/run_2/model.pt", "older");
  t.Symlink("work/latest", "runs/run_3");
  t.Symlink("work/runs/best", "../latest");  // a link to a link
  t.Symlink("work/loop_a", "loop_b");
  t.Symlink("work/loop_b", "loop_a");
  auto up = UploadTree(*client, t.Path("work"), {"runs/best", "loop_a"}, Small());
  REQUIRE(up.ok());
  auto manifest = ReadManifest(*client, up->manifest_id);
  REQUIRE(manifest.ok());
  std::vector<std::string> paths;
  for (const auto& e : manifest->entries()) paths.push_back(e.path());
  CHECK(paths == std::vector<std::string>{"latest", "loop_a", "loop_b", "runs", "runs/best", "runs/run_3",
                                          "runs/run_3/model.pt"});
  CHECK(up->files == 1);
}

TEST_CASE_METHOD(StoreAndFolder, "a file that changes while it is uploaded is an error naming it", "[tree]") {
  t.Write("ckpt/growing.bin", Bytes(4 * kChunk, 41));
  TreeUploadOptions options = Small();
  options.parallel = 1;
  bool changed = false;
  options.progress = [&](int64_t, int64_t) {
    if (changed) return;
    changed = true;
    std::ofstream(t.Path("ckpt/growing.bin"), std::ios::app) << "more";
  };
  auto up = UploadTree(*client, t.Path("ckpt"), {""}, options);
  REQUIRE_FALSE(up.ok());
  CHECK(up.status().message().find(t.Path("ckpt/growing.bin") + " changed while it was being uploaded") !=
        std::string::npos);
}

TEST_CASE("a head that cannot be reached or refuses the token is named in one line", "[tree]") {
  TempTree t;
  MakeCheckpoint(t);
  std::string nowhere = "127.0.0.1:1";
  BlobClient unreachable(grpc::CreateChannel(nowhere, grpc::InsecureChannelCredentials()), "token", nowhere);
  auto up = UploadTree(unreachable, t.Path("ckpt"), {""}, Small());
  CHECK(up.status().code() == Status::Code::kUnavailable);
  CHECK(up.status().message().find(nowhere) != std::string::npos);
  CHECK(up.status().message().find(t.Path("ckpt")) != std::string::npos);
  Status down = DownloadTree(unreachable, std::string(64, 'a'), t.Path("restored"));
  CHECK(down.code() == Status::Code::kUnavailable);
  CHECK(down.message().find(nowhere) != std::string::npos);
  CHECK_FALSE(fs::exists(t.Path("restored")));

  StoreServer head;
  auto intruder = head.Client("wrong token");
  auto refused = UploadTree(*intruder, t.Path("ckpt"), {""}, Small());
  CHECK(refused.status().code() == Status::Code::kUnauthenticated);
  CHECK(refused.status().message().find(head.address()) != std::string::npos);
  CHECK(refused.status().message().find('\n') == std::string::npos);
}
