// The head's blob store: content-addressed files (a blob's id is the
// SHA-256 of its bytes, in hex) in the head's state folder, with a size cap.
// Code packages, checkpoints and outputs live here. Independent of the
// scheduler: the job manager only pins and unpins, by owner.
//
// Room is made in this order: blobs nobody holds and nobody used for
// kUploadGraceNanos, least recently used first; then the blobs of soft
// owners (a finished job's outputs and checkpoints), the owner used longest
// ago first, each one reported through on_released; then the fresh blobs
// nobody holds yet (an upload's pieces before its manifest is pinned);
// hard owners (live jobs) are never touched.
// Thread-safe: rpc threads stream bytes in and out while the head's event
// loop pins; file I/O happens outside the lock.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

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
    int64_t pinned_bytes = 0;      // of which live jobs (hard owners) hold
    int64_t capacity_bytes = 0;
    int64_t blobs = 0;
  };

  // Writes one blob: bytes go to a temporary file, hashed on the way;
  // Commit checks size and hash and only then makes the blob visible.
  // Destroyed without a Commit, it leaves nothing behind.
  class Writer {
   public:
    ~Writer();
    // A write named at its start takes at most the size announced; one
    // named at its end makes room as bytes arrive (RESOURCE_EXHAUSTED).
    Status Append(const std::string& data);
    // REQUIRES: named at its start (Create).
    Status Commit();
    // REQUIRES: named at its end (CreateUnnamed). Blob `id` of `size` bytes:
    // InvalidArgument for a bad id or another size, Corruption when the
    // bytes hash to something else. The store already having it is success.
    // Either Commit ends the write: after a failed one, nothing is left.
    Status Commit(const std::string& id, int64_t size);

   private:
    friend class BlobStore;
    Writer(BlobStore* store, std::string id, int64_t size, int64_t reserved, std::string tmp_path, int fd);
    BlobStore* store_;
    std::string id_;    // "" until an unnamed write is committed
    int64_t size_;      // -1 until an unnamed write is committed
    int64_t reserved_;  // room held in the store for this write
    int64_t written_ = 0;
    std::string tmp_path_;
    int fd_;
    Sha256 hash_;
    bool done_ = false;
  };

  // Opens (creating) the folder, takes stock of the blobs in it (their
  // modification times stand for last use) and clears leftover temporaries.
  static Result<std::unique_ptr<BlobStore>> Open(const Options& options);

  // Unheld blobs used this recently are an upload's, likely under way: they
  // go after finished jobs' data (an upload at 1 MiB/s takes minutes).
  static constexpr int64_t kUploadGraceNanos = 30LL * 60 * 1000 * 1000 * 1000;

  // Present blobs only (a write in progress does not count).
  bool Has(const std::string& id) const;
  // Those of `ids` the store lacks; the others count as used (an uploader
  // that asks is about to name them in a manifest). A listed blob whose
  // file is gone is lacking, and dropped (blob_store_damage.cc): else the
  // upload would skip it and a manifest name bytes nobody has.
  std::vector<std::string> Missing(const std::vector<std::string>& ids);
  Result<int64_t> Size(const std::string& id) const;

  // Starts a write of `size` bytes, evicting unpinned blobs, least recently
  // used first, to make room. ALREADY_EXISTS when the blob is present,
  // RESOURCE_EXHAUSTED when live jobs' blobs leave no room.
  Result<std::unique_ptr<Writer>> Create(const std::string& id, int64_t size);
  // Starts a write whose id and size come only with its Commit (the
  // uploader hashes its bytes as it makes them). Room for `size_hint` bytes
  // (0: unknown) is made now, and more as they arrive, as Create does.
  Result<std::unique_ptr<Writer>> CreateUnnamed(int64_t size_hint);

  // An open file descriptor (O_CLOEXEC) at the blob's start, for streaming
  // it out; counts as a use. Eviction may unlink it meanwhile, which an
  // open descriptor survives.
  Result<int> OpenForRead(const std::string& id);

  // `owner` holds these blobs: they are not evicted while a hard owner
  // holds them. An owner is hard until made soft; pinning touches it.
  void Pin(const std::string& owner, const std::string& id);
  void Pin(const std::string& owner, const std::vector<std::string>& ids);
  // A soft owner's blobs may go when room is needed (all of them at once).
  void MakeSoft(const std::string& owner);
  void UnpinAll(const std::string& owner);
  bool IsPinned(const std::string& id) const;
  // Removes the owner's pins and deletes its blobs that nobody else holds.
  void Release(const std::string& owner);

  // Called (with the store's lock held: post, do not call back in) for each
  // soft owner whose blobs were evicted to make room (`why` ""), and for
  // each owner, hard or soft, let go because one of its blobs went bad
  // (`why` says how: DropDamagedLocked).
  using ReleasedFn = std::function<void(const std::string& owner, const std::string& why)>;
  void set_on_released(ReleasedFn callback) { on_released_ = std::move(callback); }

  // Blobs gone bad on the disk (blob_store_damage.cc). Each drops the blob
  // held or not (a copy that cannot be served serves nobody, and while it
  // stays every upload of the right bytes is refused as present) and lets
  // go of every owner that held it, reported through on_released: a
  // checkpoint or outputs missing a piece are lost whole.

  //
  // Hashes the blob's file and drops it if its bytes are not the id's. True
  // when it dropped it (or found its file gone). Reads the file outside the
  // lock (seconds for a large blob).
  Result<bool> DropIfCorrupt(const std::string& id);
  // The blob's file could not be read (`error`, an errno's text): dropped.
  void DropUnreadable(const std::string& id, const std::string& error);
  // The pieces of a tree that will not be kept (its manifest was refused):
  // those nobody holds are the first to go when room is needed, not fresh.
  void MarkUnwanted(const std::vector<std::string>& ids);

  Usage usage() const;

 private:
  struct Entry {
    int64_t size = 0;
    int64_t last_used = 0;  // ns since the epoch
  };
  struct Owner {
    std::set<std::string> ids;
    bool soft = false;
    int64_t last_used = 0;
  };

  explicit BlobStore(Options options) : options_(std::move(options)) {}
  std::string PathOf(const std::string& id) const;
  // REQUIRES: mutex_ held. Evicts until `bytes` more fit, or says why not.
  Status MakeRoom(int64_t bytes);
  bool PinnedLocked(const std::string& id) const;  // by any owner
  bool HardPinnedLocked(const std::string& id) const;
  // REQUIRES: mutex_ held. Deletes the blob file and its entry.
  void EvictLocked(const std::string& id, const char* why);
  // REQUIRES: mutex_ held. Drops a blob gone bad and every owner holding it
  // (see DropIfCorrupt), with a warning saying `why`.
  void DropDamagedLocked(const std::string& id, const std::string& why);
  static constexpr const char* kFileGone = "its file was gone from the head's disk";
  // REQUIRES: mutex_ held. Drops the owner; deletes its blobs nobody else holds.
  void ReleaseLocked(const std::string& owner);
  void Touch(const std::string& id, Entry& entry);
  Result<std::unique_ptr<Writer>> StartWrite(const std::string& id, int64_t size, int64_t reserve);
  // Makes room for `bytes` more of an unnamed write.
  Status Grow(Writer* writer, int64_t bytes);
  Status Finish(Writer* writer);
  void Abandon(Writer* writer);

  Options options_;
  mutable std::mutex mutex_;
  std::map<std::string, Entry> blobs_;
  std::map<std::string, Owner> owners_;
  ReleasedFn on_released_;
  int64_t used_ = 0;
  int64_t reserved_ = 0;  // writes under way
  uint64_t next_tmp_ = 0;
};

}  // namespace clusterd
