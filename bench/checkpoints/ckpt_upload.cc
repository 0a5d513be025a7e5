// ckpt_upload: re-uploads a checkpoint folder to the head's store the way a
// node agent does (daemon/agent/results_uploader.cc StoreCheckpoint and
// UploadCheckpoint: SnapshotCheckpoint(CLUSTER_CHECKPOINT_DIR, NAME),
// HashCache::Load(cache dir, the snapshot's root), UploadTree of the one
// checkpoint folder with the cache, cache.Save()), timing each call from
// the snapshot to Save. Runs on a simulated machine, against the head's real store
// over the network, with its own BlobClient channel as the agent makes one.
//
//   CLUSTER_TOKEN=T ckpt_upload HEAD_ADDRESS ROOT NAME CACHE_DIR N
//
// ROOT/NAME is the checkpoint folder, CACHE_DIR a hash cache folder of its
// own (emptied first). Prints one line per call:
//   KIND MS HASHED_BYTES SENT_BYTES
// KIND: "cold" (empty cache: every piece read and hashed), then N x "warm"
// (the same folder, cache warm), then "copy": the same bytes in a new
// folder ROOT/NAME-copy (a new path and inode, as the next epoch's folder of
// a file that did not change), uploaded with the warm cache. Exit 0, or 1
// with the error.
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "common/storage/blob_client.h"
#include "common/storage/checkpoint_snapshot.h"
#include "common/storage/hash_cache.h"
#include "common/storage/tree_transfer.h"

namespace {

namespace fs = std::filesystem;

bool Upload(clusterd::BlobClient& store, const std::string& cache_dir, const std::string& root,
            const std::string& name, const char* kind) {
  auto start = std::chrono::steady_clock::now();
  auto snapshot = clusterd::SnapshotCheckpoint(root, name);
  if (!snapshot.ok()) {
    std::fprintf(stderr, "ckpt_upload: %s: %s\n", kind, snapshot.status().message().c_str());
    return false;
  }
  clusterd::HashCache cache = clusterd::HashCache::Load(cache_dir, *snapshot);
  clusterd::TreeUploadOptions options;
  options.cache = &cache;
  auto uploaded = clusterd::UploadTree(store, *snapshot, {name}, options);
  clusterd::Status saved = cache.Save();
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!uploaded.ok() || !saved.ok() || !uploaded->missing.empty()) {
    std::fprintf(stderr, "ckpt_upload: %s: %s\n", kind,
                 !uploaded.ok() ? uploaded.status().message().c_str()
                 : !saved.ok()  ? saved.message().c_str()
                                : "the folder is missing");
    return false;
  }
  std::printf("%s %.3f %lld %lld\n", kind, ms, static_cast<long long>(uploaded->hashed_bytes),
              static_cast<long long>(uploaded->sent_bytes));
  std::fflush(stdout);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const char* token = std::getenv("CLUSTER_TOKEN");
  if (argc != 6 || !token) {
    std::fprintf(stderr, "usage: CLUSTER_TOKEN=T ckpt_upload HEAD_ADDRESS ROOT NAME CACHE_DIR N\n");
    return 2;
  }
  std::string address = argv[1], root = argv[2], name = argv[3], cache_dir = argv[4];
  int warm = std::atoi(argv[5]);
  std::error_code ec;
  fs::remove_all(cache_dir, ec);
  clusterd::BlobClient store(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()), token, address);
  // A file changed within the cache's own clock tick is never trusted
  // (racy): the folder must be a little older than the cache.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (!Upload(store, cache_dir, root, name, "cold")) return 1;
  for (int i = 0; i < warm; ++i) {
    if (!Upload(store, cache_dir, root, name, "warm")) return 1;
  }
  std::string copy = name + "-copy";
  fs::remove_all(root + "/" + copy, ec);
  fs::copy(root + "/" + name, root + "/" + copy, fs::copy_options::recursive, ec);
  if (ec) {
    std::fprintf(stderr, "ckpt_upload: cannot copy %s: %s\n", name.c_str(), ec.message().c_str());
    return 1;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  bool ok = Upload(store, cache_dir, root, copy, "copy");
  fs::remove_all(root + "/" + copy, ec);
  clusterd::RemoveSnapshot(root, copy);
  clusterd::RemoveSnapshot(root, name);
  return ok ? 0 : 1;
}
