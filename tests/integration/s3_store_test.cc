// The S3 backend of the blob store (common/storage/s3_blob_storage.h) against a real
// radosgw: folders (checkpoints, outputs) through the same tree transfer as
// the head's store, pieces never sent twice, packages streamed and named at
// their end, every download checked against its id, a gateway that dies in
// the middle of an upload, and the errors a user sees at start.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

#include "ceph_fixture.h"
#include "common/storage/s3_blob_storage.h"
#include "common/sha256.h"
#include "common/storage/tree_transfer.h"
#include "harness.h"

namespace clusterd::testing {
namespace {

// Short, many retries: an upload goes on across a gateway down for seconds.
S3ClientOptions OptionsFor(const CephFixture& ceph) {
  S3ClientOptions options = ceph.ClientOptions();
  options.max_backoff_ms = 500;
  options.max_attempts = 20;
  return options;
}

// A checkpoint-like folder: a model of several pieces, a small state file.
std::string MakeTree(const CephFixture& ceph, const std::string& name, size_t model_bytes) {
  std::string root = ceph.dir() + "/" + name;
  mkdir(root.c_str(), 0700);
  mkdir((root + "/nested").c_str(), 0700);
  std::ofstream(root + "/model.bin", std::ios::binary) << RandomBytes(model_bytes, 7);
  std::ofstream(root + "/nested/state.json") << "{\"epoch\": 3}\n";
  return root;
}

TEST_CASE("S3 store: a folder round-trips and unchanged pieces are never sent again", "[ceph][s3]") {
  REQUIRE_CEPH(ceph);
  REQUIRE(ceph->CreateBucket("ckpts"));
  S3BlobStorage store(OptionsFor(*ceph), {"ckpts", "cluster/a"});
  REQUIRE(store.Check().ok());
  std::string root = MakeTree(*ceph, "ckpt", (9 << 20) + 5);

  TreeUploadOptions options;
  options.chunk_bytes = 4 << 20;
  auto first = UploadTree(store, root, {""}, options);
  REQUIRE(first.ok());
  CHECK(first->sent_bytes == first->bytes);
  auto again = UploadTree(store, root, {""}, options);
  REQUIRE(again.ok());
  CHECK(again->manifest_id == first->manifest_id);
  CHECK(again->sent_bytes == 0);

  // Only content-addressed objects under the prefix: 3 model pieces, the
  // state file and the manifest.
  auto keys = store.client().List("ckpts", "cluster/a/");
  REQUIRE(keys.ok());
  CHECK(keys->size() == 5);
  for (const std::string& key : *keys) CHECK(key.rfind("cluster/a/blobs/", 0) == 0);

  std::string dest = ceph->dir() + "/restored";
  REQUIRE(DownloadTree(store, first->manifest_id, dest).ok());
  CHECK(Slurp(dest + "/model.bin") == Slurp(root + "/model.bin"));
  CHECK(Slurp(dest + "/nested/state.json") == "{\"epoch\": 3}\n");

  // A manifest that is not there is a clear NotFound naming the store.
  Status absent = DownloadTree(store, Sha256Hex("no such manifest"), ceph->dir() + "/absent");
  CHECK(absent.code() == Status::Code::kNotFound);
  CHECK_THAT(absent.message(), Catch::Contains("s3://ckpts/cluster/a at " + ceph->endpoint()));
}

TEST_CASE("S3 store: a package streamed and named at its end, read back as it arrives", "[ceph][s3]") {
  REQUIRE_CEPH(ceph);
  REQUIRE(ceph->CreateBucket("packages"));
  S3BlobStorage store(OptionsFor(*ceph), {"packages", ""});
  std::string bytes = RandomBytes((12 << 20) + 3, 9);  // three parts of 5 MiB
  std::string id = Sha256Hex(bytes);

  auto upload = store.StartUpload(0, "working_dir /src");
  for (size_t at = 0; at < bytes.size(); at += 1 << 20) {
    REQUIRE(upload->Write(bytes.data() + at, std::min<size_t>(1 << 20, bytes.size() - at)).ok());
  }
  REQUIRE(upload->Finish(id).ok());
  upload.reset();
  auto info = store.Stat(id);
  REQUIRE(info.ok());
  CHECK(info->present());
  CHECK(info->size() == static_cast<int64_t>(bytes.size()));
  auto keys = store.client().List("packages", "");
  REQUIRE(keys.ok());
  CHECK(*keys == std::vector<std::string>{"blobs/" + id});  // the temporary object is gone

  auto source = store.OpenDownload(id, info->size());
  std::string got;
  std::string_view piece;
  do {
    REQUIRE(source->Next(&piece).ok());
    got.append(piece);
  } while (!piece.empty());
  REQUIRE(source->Finish().ok());
  CHECK(got == bytes);

  // Sent again, it is recognised and not stored twice; sent under a wrong
  // id, it is refused and nothing is kept.
  auto same = store.StartUpload(0, "working_dir /src");
  REQUIRE(same->Write(bytes.data(), bytes.size()).ok());
  REQUIRE(same->Finish(id).ok());
  auto wrong = store.StartUpload(0, "working_dir /src");
  REQUIRE(wrong->Write("abc", 3).ok());
  Status refused = wrong->Finish(Sha256Hex("abd"));
  CHECK(refused.code() == Status::Code::kCorruption);
  same.reset();
  wrong.reset();
  keys = store.client().List("packages", "");
  REQUIRE(keys.ok());
  CHECK(keys->size() == 1);
}

TEST_CASE("S3 store: a blob read as several ranged GETs at once arrives whole and is hashed whole", "[ceph][s3]") {
  REQUIRE_CEPH(ceph);
  REQUIRE(ceph->CreateBucket("ranges"));
  S3BlobStorage store(OptionsFor(*ceph), {"ranges", "p"});
  const std::string bytes = RandomBytes((13 << 20) + 7, 11);  // ranges of 4.33 MiB, the last one short
  const std::string id = Sha256Hex(bytes);
  REQUIRE(store.UploadData(id, bytes).ok());
  // At a file offset, beside bytes that must stay as they are.
  const std::string path = ceph->dir() + "/ranged.bin";
  std::ofstream(path, std::ios::binary) << std::string(100, 'x');
  int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  REQUIRE(fd >= 0);
  int64_t last_done = 0;
  Status got = store.DownloadRange(id, fd, 100, static_cast<int64_t>(bytes.size()), path,
                                   [&](int64_t done, int64_t) { last_done = done; }, /*streams=*/3);
  close(fd);
  REQUIRE(got.ok());
  CHECK(last_done == static_cast<int64_t>(bytes.size()));
  CHECK(Slurp(path) == std::string(100, 'x') + bytes);

  // The same object under another blob's id: the pieces arrive, the whole fails.
  const std::string wrong = Sha256Hex("not these bytes");
  REQUIRE(store.client().Copy("ranges", store.KeyOf(id), store.KeyOf(wrong)).ok());
  fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  Status tampered = store.DownloadRange(wrong, fd, 0, static_cast<int64_t>(bytes.size()), path, nullptr, 3);
  close(fd);
  CHECK(tampered.code() == Status::Code::kCorruption);
  CHECK_THAT(tampered.message(), Catch::Contains("failed its hash check"));
  // A range past the object's end is not a silent short read.
  std::string tail;
  Status past = store.client().GetRange("ranges", store.KeyOf(id), static_cast<int64_t>(bytes.size()) - 5, 10,
                                        [&](const char* data, size_t n) {
                                          tail.append(data, n);
                                          return Status::Ok();
                                        });
  CHECK_FALSE(past.ok());
}

TEST_CASE("S3 store: a blob whose bytes do not match its id is never handed out as good", "[ceph][s3]") {
  REQUIRE_CEPH(ceph);
  REQUIRE(ceph->CreateBucket("tampered"));
  S3BlobStorage store(OptionsFor(*ceph), {"tampered", "p"});
  std::string id = Sha256Hex("the real bytes");
  REQUIRE(store.client().PutData("tampered", store.KeyOf(id), "other bytes!!!").ok());
  auto fetched = store.Fetch(id, 1 << 20);
  CHECK(fetched.status().code() == Status::Code::kCorruption);
  CHECK_THAT(fetched.status().message(), Catch::Contains("failed its hash check"));
  auto source = store.OpenDownload(id, 0);
  CHECK(source->Finish().code() == Status::Code::kCorruption);
  // And a wrong id is refused before it nears a key.
  CHECK(store.Stat("../../etc").status().code() == Status::Code::kInvalidArgument);
}

TEST_CASE("S3 store: radosgw killed in the middle of a checkpoint upload, restarted, the upload completes",
          "[ceph][s3]") {
  REQUIRE_CEPH(ceph);
  REQUIRE(ceph->CreateBucket("faults"));
  S3BlobStorage store(OptionsFor(*ceph), {"faults", "c"});
  std::string root = MakeTree(*ceph, "big", 48 << 20);
  TreeUploadOptions options;
  options.chunk_bytes = 4 << 20;
  std::atomic<int64_t> sent{0};
  options.progress = [&](int64_t done, int64_t) { sent = done; };
  Result<UploadedTree> up = Status::Internal("not run");
  std::thread uploader([&] { up = UploadTree(store, root, {""}, options); });
  // Kill it once some pieces are in, not all.
  REQUIRE(WaitFor([&] { return sent.load() > 0; }, std::chrono::seconds(60), std::chrono::milliseconds(1)));
  ceph->KillGateway();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  REQUIRE(ceph->RestartGateway());
  uploader.join();
  REQUIRE(up.ok());
  CHECK(sent.load() < up->bytes + 1);
  std::string dest = ceph->dir() + "/after-fault";
  REQUIRE(DownloadTree(store, up->manifest_id, dest).ok());
  CHECK(Sha256Hex(Slurp(dest + "/model.bin")) == Sha256Hex(Slurp(root + "/model.bin")));
}

TEST_CASE("S3 store: an upload that cannot finish leaves no manifest to restore", "[ceph][s3]") {
  REQUIRE_CEPH(ceph);
  REQUIRE(ceph->CreateBucket("halfway"));
  S3ClientOptions options = OptionsFor(*ceph);
  options.max_attempts = 2;
  options.first_backoff_ms = 50;
  S3BlobStorage store(options, {"halfway", ""});
  std::string root = MakeTree(*ceph, "ckpt", 24 << 20);
  TreeUploadOptions tree;
  tree.chunk_bytes = 4 << 20;
  std::atomic<int64_t> sent{0};
  tree.progress = [&](int64_t done, int64_t) { sent = done; };
  Result<UploadedTree> up = Status::Internal("not run");
  std::thread uploader([&] { up = UploadTree(store, root, {""}, tree); });
  REQUIRE(WaitFor([&] { return sent.load() > 0; }, std::chrono::seconds(60), std::chrono::milliseconds(1)));
  ceph->KillGateway();
  uploader.join();
  REQUIRE_FALSE(up.ok());
  CHECK(up.status().code() == Status::Code::kUnavailable);
  CHECK_THAT(up.status().message(), Catch::Contains(ceph->endpoint()));
  CHECK(up.status().message().find('\n') == std::string::npos);
  // Whatever pieces arrived are whole (each checked by S3 against its id),
  // and the manifest, sent last, is not there: nothing can restore it.
  REQUIRE(ceph->RestartGateway());
  auto keys = store.client().List("halfway", "blobs/");
  REQUIRE(keys.ok());
  for (const std::string& key : *keys) {
    std::string id = key.substr(6);
    auto bytes = store.Fetch(id, 64 << 20);
    REQUIRE(bytes.ok());
    auto manifest = ReadManifest(store, id);
    CHECK_FALSE(manifest.ok());  // pieces of the model, none a manifest
  }
}

TEST_CASE("S3 store: the check at start names the bucket and endpoint", "[ceph][s3]") {
  REQUIRE_CEPH(ceph);
  S3BlobStorage missing(OptionsFor(*ceph), {"never-made", "x"});
  CHECK(missing.Check().message() == "bucket never-made does not exist at " + ceph->endpoint());
}

}  // namespace
}  // namespace clusterd::testing
