// Code packages on this machine. Each is fetched once per id from the
// head's store and unpacked as it arrives into a temporary folder, renamed
// into place only once all of it is in and its hash matched (a bad transfer
// is fetched once more, then the checkout fails with the reason), and
// handed to each job that runs it as a working folder of hard
// links into the unpacked tree, so a job's files never leak into another's.
// A tree that a job changed in place (through a link) is noticed at its
// next use and unpacked again. Several agents of one machine may share the
// folder (a local cluster): a lock file per package serialises fetching and
// unpacking and keeps eviction away from a package being checked out, across
// threads and processes alike.
// Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/storage/byte_source.h"
#include "common/status.h"

namespace clusterd {

class PackageCache {
 public:
  struct Options {
    std::string dir;             // <dir>/<id>/ (tree), <id>.index, <id>.lock
    int64_t capacity_bytes = 0;  // 0: no cap; least recently used packages go first
  };
  // Opens a download of blob `id`, about `size` bytes, from the head's store
  // (BlobClient::OpenDownload): its Finish checks the hash.
  using OpenFn = std::function<std::unique_ptr<ByteSource>(const std::string& id, int64_t size)>;
  // Downloads blob `id` into `path`, checking its hash (BlobClient::Download).
  using FetchFn = std::function<Status(const std::string& id, const std::string& path)>;

  // Unpacks each package while it downloads.
  PackageCache(Options options, OpenFn open);
  // Downloads each package into a file first, then unpacks it: slower (the
  // bytes go through the disk twice, one step after the other). Kept until
  // the node agent passes an OpenFn.
  PackageCache(Options options, FetchFn fetch);

  // Makes `work_dir` a working folder holding package `id` (`size` bytes),
  // its files hard links into this cache but the `outputs` (copies:
  // LinkTree). An existing work_dir is kept as it is. Blocks while fetching
  // and unpacking.
  Status Checkout(const std::string& id, int64_t size, const std::string& work_dir,
                  const std::vector<std::string>& outputs = {});

  // Bytes of the unpacked packages held now.
  int64_t UsedBytes() const;

 private:
  // REQUIRES: the package's lock held exclusively.
  Status EnsureUnpacked(const std::string& id, int64_t size);
  Status FetchAndUnpack(const std::string& id, int64_t size);
  // One try; *bad_transfer tells a download that failed its check from a
  // package that cannot be unpacked.
  Status UnpackOnce(const std::string& id, int64_t size, bool* bad_transfer);
  void EvictFor(int64_t bytes, const std::string& keep);

  std::string TreeDir(const std::string& id) const { return options_.dir + "/" + id; }
  std::string IndexFile(const std::string& id) const { return options_.dir + "/" + id + ".index"; }
  std::string LockFile(const std::string& id) const { return options_.dir + "/" + id + ".lock"; }

  Options options_;
  OpenFn open_;    // or
  FetchFn fetch_;
};

}  // namespace clusterd
