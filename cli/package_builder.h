// Packs a scanned working_dir into a code package (DESIGN rule 11): a
// deterministic uncompressed tar whose SHA-256 is the package's id, so the
// same content gives the same id and the head stores it once. The node side
// is common/storage/tar_package.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "cli/working_dir_scan.h"
#include "common/storage/hash_cache.h"
#include "common/status.h"

namespace clusterd {

// Called at most every ~100 ms while packing, and once at the end.
using ProgressFn =
    std::function<void(uint64_t done_bytes, uint64_t total_bytes, size_t done_files, size_t total_files)>;

struct BuiltPackage {
  std::string id;      // SHA-256 hex of the archive bytes
  uint64_t size = 0;   // archive bytes
  size_t files = 0;    // regular files in it
  uint64_t bytes = 0;  // their content bytes
};

FileStamp StampOf(const TreeEntry& file);

// Fills in sha256 of the files whose stamp `cache` knows. Returns the bytes
// of the files still without one.
uint64_t HashesFromCache(ScannedTree* tree, HashCache* cache);
// Reads and hashes the files still without sha256.
Status HashRemaining(ScannedTree* tree);

// SHA-256 over a canonical text of the entries (type, mode, size, content
// hash or link target, path): the same for the same content, whatever the
// mtimes. REQUIRES: every file has its sha256.
std::string ManifestHash(const ScannedTree& tree);

// Where a package's bytes go, in order, as they are made.
using ArchiveSink = std::function<Status(const char* data, size_t size)>;
// Opens a sink for a package of about `size_hint` bytes.
using OpenSinkFn = std::function<Result<ArchiveSink>(uint64_t size_hint)>;

// Packs `tree` into `sink`: pax tar, entries in tree order, uid/gid 0 with
// no names, mode bits kept, files' mtimes in whole seconds, a folder's mtime
// the newest of its contents (so writing an ignored log does not change the
// id), no atime or ctime, no compression. The id is the SHA-256 of the bytes
// given to the sink, taken as they go. Files still without sha256 are hashed
// on the way (one read serves both). A file that changed since the scan
// fails the build; the sink has then had part of a package.
Result<BuiltPackage> BuildPackage(ScannedTree* tree, const ArchiveSink& sink, const ProgressFn& progress = nullptr);
// The same into the file `out_path` (via a temp file renamed into place).
Result<BuiltPackage> BuildPackage(ScannedTree* tree, const std::string& out_path,
                                  const ProgressFn& progress = nullptr);
// An OpenSinkFn that writes the package into the file `path` (created 0600,
// replaced if present).
OpenSinkFn PackageFile(const std::string& path);

// An upper bound on the package size of `tree`: its files' bytes plus the
// headers and padding of each entry (long names cost a pax header).
uint64_t PackageSizeHint(const ScannedTree& tree);

// clusterctl submit's packing step: scan, hash (from the cache where it can),
// then take the package id from the cache when this content was packed
// before (unless !reuse_cached_id: the head no longer has that package), else
// open a sink and build into it. Saves the cache; failing to is only a warning.
// REQUIRES: `cache` was loaded for `root` (HashCache::Load(dir, root)).
// Typical use (the sink streams to the head's store, whose upload is
// finished with the id that comes out):
//   HashCache cache = HashCache::Load(DefaultHashCacheDir(), root);
//   ProgressPrinter printer;
//   auto p = PrepareWorkingDir(root, {excludes, max_bytes}, &cache, open_upload, true, std::ref(printer));
//   if (p.ok() && !p->built && !head_has(p->id))
//     p = PrepareWorkingDir(root, {...}, &cache, open_upload, /*reuse_cached_id=*/false, std::ref(printer));
//   if (p.ok() && p->built) finish the upload as blob p->id
struct PreparedPackage {
  std::string id;
  uint64_t size = 0;
  std::string manifest;
  bool built = false;  // packed into a sink now; false when the id came from the cache
  ScannedTree tree;    // its warnings are for the user
};
Result<PreparedPackage> PrepareWorkingDir(const std::string& root, const ScanOptions& options, HashCache* cache,
                                          const OpenSinkFn& open_sink, bool reuse_cached_id = true,
                                          const ProgressFn& progress = nullptr);

}  // namespace clusterd
