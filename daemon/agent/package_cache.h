// Code packages on this machine. Each is fetched once per id from the
// head's store (its hash checked; fetched once more if it fails), unpacked
// once, and handed to each job that runs it as a working folder of hard
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
#include <string>

#include "common/status.h"

namespace clusterd {

class PackageCache {
 public:
  struct Options {
    std::string dir;             // <dir>/<id>/ (tree), <id>.index, <id>.lock
    int64_t capacity_bytes = 0;  // 0: no cap; least recently used packages go first
  };
  // Downloads blob `id` into `path`, checking its hash (BlobClient::Download).
  using FetchFn = std::function<Status(const std::string& id, const std::string& path)>;

  PackageCache(Options options, FetchFn fetch);

  // Makes `work_dir` a working folder holding package `id` (`size` bytes).
  // An existing work_dir is kept as it is: a retry of the job on this node
  // finds what the last attempt left. Blocks while fetching and unpacking.
  Status Checkout(const std::string& id, int64_t size, const std::string& work_dir);

  // Bytes of the unpacked packages held now.
  int64_t UsedBytes() const;

 private:
  // REQUIRES: the package's lock held exclusively.
  Status EnsureUnpacked(const std::string& id, int64_t size);
  Status FetchAndUnpack(const std::string& id);
  void EvictFor(int64_t bytes, const std::string& keep);

  std::string TreeDir(const std::string& id) const { return options_.dir + "/" + id; }
  std::string IndexFile(const std::string& id) const { return options_.dir + "/" + id + ".index"; }
  std::string LockFile(const std::string& id) const { return options_.dir + "/" + id + ".lock"; }

  Options options_;
  FetchFn fetch_;
};

}  // namespace clusterd
