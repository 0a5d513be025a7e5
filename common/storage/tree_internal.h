// What the tree transfer's upload, download and manifest files share
// (common/storage/tree_transfer.h); not for use elsewhere.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/file_util.h"
#include "common/storage/hash_cache.h"
#include "common/status.h"
#include "store.pb.h"

namespace clusterd::tree_internal {

// "a/b/c" -> "a/b"; "c" -> "".
inline std::string ParentOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

// An error of a transfer as one line naming the folder and the head:
// `what` ("uploading /ckpt") goes in front unless the message already names
// `folder` (a file in it), and the store (BlobStorage::where) at the end unless the
// message has it (one that could not reach it) or `store` is "" (a failure
// of this side's files). The code is kept.
Status InContext(const Status& status, const std::string& what, const std::string& folder, const std::string& store);

// One entry of a tree to upload, as found on disk.
struct ScannedEntry {
  ManifestEntry entry;  // without the pieces' ids
  FileStamp stamp;      // files: what must not change until they are sent
};

struct ScannedPaths {
  std::map<std::string, ScannedEntry> entries;  // by path, byte order: a folder before its contents
  int64_t files = 0;
  int64_t bytes = 0;
  std::vector<std::string> missing;
  std::vector<std::string> skipped;
};

// The entries UploadTree sends for `paths` under `root`, with its rules
// and errors (tree_transfer.h); hashes nothing.
Result<ScannedPaths> ScanPaths(const std::string& root, const std::vector<std::string>& paths);

FileStamp StampOfStat(const struct stat& st);
// Whether a file read for an upload still has the bytes its stamp was taken
// of: size, mtime and inode, not ctime. A link made or removed changes
// ctime alone: a checkpoint sent from its snapshot of hard links, whose
// program prunes its own folder meanwhile, must not be taken as changed and
// sent again (or none is ever stored).
bool SameBytes(const FileStamp& now, const FileStamp& then);

}  // namespace clusterd::tree_internal
