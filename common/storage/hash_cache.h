// The memory of a folder's file hashes, kept as git's index keeps its own:
// each file's content hash keyed by its stat data, so that re-sending an
// unchanged folder reads no file contents. clusterctl keeps one per
// working_dir, with the package id last built for each manifest
// (cli/package_builder.h), so that it need not even be re-packed; tree
// transfers (common/storage/tree_transfer.h) keep the hashes of files' pieces in it.
// One file per folder under DefaultHashCacheDir(), private to the user.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"

namespace clusterd {

// What must be unchanged for a cached content hash to stand.
struct FileStamp {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  uint64_t ino = 0;
  bool operator==(const FileStamp& o) const {
    return size == o.size && mtime_ns == o.mtime_ns && ctime_ns == o.ctime_ns && ino == o.ino;
  }
};

struct CachedPackage {
  std::string id;     // SHA-256 hex of the archive
  uint64_t size = 0;  // archive bytes
};

// $XDG_CACHE_HOME/clusterd/hashes, else $HOME/.cache/clusterd/hashes; ""
// when neither variable is set (then nothing is cached).
std::string DefaultHashCacheDir();

// Not thread-safe. A racy entry (its file changed no earlier than the cache
// was written, so a change within the same clock tick would not show in its
// stamp) is never trusted: the file is hashed again, as git does.
class HashCache {
 public:
  // Remembers nothing and saves nowhere.
  HashCache() = default;

  // The cache of working_dir `root` (absolute) kept in `dir`. A missing,
  // corrupt, foreign or unsafe (not ours, or open to others) file gives an
  // empty cache, never an error; note() says why. `dir` "" = no cache.
  static HashCache Load(const std::string& dir, const std::string& root);
  // Forgets root's cache in `dir` (its folder is gone for good).
  static void Discard(const std::string& dir, const std::string& root);

  // The content hash recorded for `path` if its stamp is unchanged and the
  // entry is not racy. Marks it as in use (kept by Save).
  std::optional<std::string> Lookup(const std::string& path, const FileStamp& stamp);
  void Put(const std::string& path, const FileStamp& stamp, const std::string& sha256);

  std::optional<CachedPackage> LookupPackage(const std::string& manifest) const;
  // Remembers the newest 16 manifests.
  void PutPackage(const std::string& manifest, const CachedPackage& package);

  // Writes the entries in use (files no longer looked up are gone) to a temp
  // file renamed over the cache file (0600, in a 0700 folder it creates).
  // Does nothing when nothing changed since Load. Errors are for a warning.
  Status Save();

  const std::string& file() const { return file_; }  // "" when not saving
  const std::string& note() const { return note_; }  // why a file was ignored

 private:
  struct Entry {
    FileStamp stamp;
    std::string sha256;
    bool in_use = false;
    bool trusted = false;  // loaded and not racy, or hashed in this run
  };
  std::string Serialize() const;
  bool Parse(const std::string& text);

  std::string root_;
  std::string dir_;
  std::string file_;
  std::string note_;
  int64_t written_ns_ = 0;  // the loaded file's mtime
  int64_t start_ns_ = 0;    // when Load ran (coarse clock, as file times)
  bool dirty_ = false;
  std::unordered_map<std::string, Entry> entries_;
  std::vector<std::pair<std::string, CachedPackage>> packages_;  // newest first
};

}  // namespace clusterd
