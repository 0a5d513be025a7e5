// The head's blob store: content-addressed files (a blob's id is the
// SHA-256 of its bytes, in hex) in the head's state folder, with a size cap
// and least-recently-used eviction of blobs that no live job holds. Code
// packages live here; checkpoints and outputs build on it. Independent of
// the scheduler: the job manager only pins and unpins.
// Thread-safe: rpc threads stream bytes in and out while the head's event
// loop pins; file I/O happens outside the lock.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "common/sha256.h"
#include "common/status.h"

namespace clusterd {

// 64 lower-case hex digits; anything else is refused before it nears a path.
bool IsBlobId(const std::string& id);

class BlobStore {
 public:
  struct Options {
    std::string dir;               // <dir>/blobs/<first two digits>/<id>, <dir>/tmp/
    int64_t capacity_bytes = 0;    // 0: no cap
  };
  struct Usage {
    int64_t used_bytes = 0;        // committed blobs
    int64_t pinned_bytes = 0;      // of which live jobs hold
    int64_t capacity_bytes = 0;
    int64_t blobs = 0;
  };

  // Writes one blob: bytes go to a temporary file, hashed on the way;
  // Commit() checks size and hash and only then makes the blob visible.
  // Destroyed without a Commit, it leaves nothing behind.
  class Writer {
   public:
    ~Writer();
    Status Append(const std::string& data);
    Status Commit();

   private:
    friend class BlobStore;
    Writer(BlobStore* store, std::string id, int64_t size, std::string tmp_path, int fd);
    BlobStore* store_;
    std::string id_;
    int64_t size_;
    int64_t written_ = 0;
    std::string tmp_path_;
    int fd_;
    Sha256 hash_;
    bool done_ = false;
  };

  // Opens (creating) the folder, takes stock of the blobs in it (their
  // modification times stand for last use) and clears leftover temporaries.
  static Result<std::unique_ptr<BlobStore>> Open(const Options& options);

  // Present blobs only (a write in progress does not count).
  bool Has(const std::string& id) const;
  Result<int64_t> Size(const std::string& id) const;

  // Starts a write of `size` bytes, evicting unpinned blobs, least recently
  // used first, to make room. ALREADY_EXISTS when the blob is present,
  // RESOURCE_EXHAUSTED when live jobs' blobs leave no room.
  Result<std::unique_ptr<Writer>> Create(const std::string& id, int64_t size);

  // An open file descriptor (O_CLOEXEC) at the blob's start, for streaming
  // it out; counts as a use. Eviction may unlink it meanwhile, which an
  // open descriptor survives.
  Result<int> OpenForRead(const std::string& id);

  // A live job holds a blob: it is not evicted until every owner lets go.
  void Pin(const std::string& owner, const std::string& id);
  void UnpinAll(const std::string& owner);
  bool IsPinned(const std::string& id) const;

  // Deletes a blob (a corrupt one, or a finished job's data); pinned ones stay.
  Status Remove(const std::string& id);

  Usage usage() const;

 private:
  struct Entry {
    int64_t size = 0;
    int64_t last_used = 0;  // ns since the epoch
  };

  explicit BlobStore(Options options) : options_(std::move(options)) {}
  std::string PathOf(const std::string& id) const;
  // REQUIRES: mutex_ held. Evicts until `bytes` more fit, or says why not.
  Status MakeRoom(int64_t bytes);
  bool PinnedLocked(const std::string& id) const;
  void Touch(const std::string& id, Entry& entry);
  Status Finish(Writer* writer);
  void Abandon(Writer* writer);

  Options options_;
  mutable std::mutex mutex_;
  std::map<std::string, Entry> blobs_;
  std::map<std::string, std::set<std::string>> pins_;  // owner -> ids
  int64_t used_ = 0;
  int64_t reserved_ = 0;  // writes under way
  uint64_t next_tmp_ = 0;
};

}  // namespace clusterd
