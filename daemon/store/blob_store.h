// The head's blob store: content-addressed files (a blob's id is the
// SHA-256 of its bytes, in hex) in the head's state folder, with a size cap.
// Code packages, checkpoints and outputs live here. Independent of the
// scheduler: the job manager only pins and unpins, by owner.
//
// Room is taken as bytes arrive, never on an upload's word: a write's size
// announced at its start is only checked against what the cap leaves beside
// live jobs' blobs, and its reservation grows with the bytes written (an
// announced 20 GiB that never comes evicts nothing). A growth that does not
// fit evicts just enough, in this order: blobs nobody holds and nobody used
// for kUploadGraceNanos, least recently used first; then the blobs of soft
// owners (a finished job's outputs and checkpoints), the owner used longest
// ago first, each one reported through on_released; then the fresh blobs
// nobody holds yet (an upload's pieces before its manifest is pinned);
// hard owners (live jobs) are never touched. When live jobs' blobs, the
// bytes of writes under way and the new bytes would pass the cap, the
// growth fails (RESOURCE_EXHAUSTED) and nothing is evicted for it. A write
// that ends without its commit gives its room back.
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

#include "common/clock.h"
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
    // Times of use (LRU order, the upload grace); null: the system's.
    // REQUIRES: outlives the store.
    const Clock* clock = nullptr;
  };
  struct Usage {
    int64_t used_bytes = 0;        // committed blobs
    int64_t pinned_bytes = 0;      // of which live jobs (hard owners) hold
    int64_t capacity_bytes = 0;
    int64_t blobs = 0;
    int64_t reserved_bytes = 0;    // held by uploads under way: about what they wrote
  };

  // Writes one blob: bytes go to a temporary file, hashed on the way;
  // Commit checks size and hash and only then makes the blob visible.
  // Destroyed without a Commit, it leaves nothing behind.
  class Writer {
   public:
    ~Writer();
    // Makes room for the bytes as they arrive (RESOURCE_EXHAUSTED when
    // they do not fit); a write named at its start takes at most the size
    // announced.
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
    Writer(BlobStore* store, std::string id, int64_t size, std::string tmp_path, int fd);
    BlobStore* store_;
    std::string id_;    // "" until an unnamed write is committed
    int64_t size_;      // -1 until an unnamed write is committed
    int64_t reserved_ = 0;  // room held in the store for this write: about what it wrote
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

  // Starts a write of `size` bytes; room is made as they arrive (Append).
  // ALREADY_EXISTS when the blob is present, RESOURCE_EXHAUSTED at once when
  // `size` is more than the cap, or than the cap leaves beside live jobs'
  // blobs. Evicts nothing.
  Result<std::unique_ptr<Writer>> Create(const std::string& id, int64_t size);
  // Starts a write whose id and size come only with its Commit (the
  // uploader hashes its bytes as it makes them). `size_hint` (0: unknown)
  // is checked as Create checks its size; the bytes may pass it.
  Result<std::unique_ptr<Writer>> CreateUnnamed(int64_t size_hint);

  // A write that must evict grows its room by what arrived plus a quarter
  // of what it wrote before, at most this much, and never past its
  // announced size: a few dozen scans of the store for a large upload into
  // a full one, not one per chunk, while the bytes evicted stay within
  // what arrived and a quarter more (and one owner's worth: owners go
  // whole).
  static constexpr int64_t kRoomAheadBytes = 64LL << 20;

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
  // REQUIRES: mutex_ held. Evicts until `bytes` more fit beside what is
  // stored and reserved, or says why not; evicts nothing when even
  // evicting everything unheld would not do.
  Status MakeRoom(int64_t bytes);
  // REQUIRES: mutex_ held. Refuses an announced size the cap cannot hold
  // beside live jobs' blobs; reserves and evicts nothing.
  Status CheckAnnounced(int64_t bytes, const std::string& what);
  // REQUIRES: mutex_ held. What hard owners hold (counted once per blob).
  int64_t HardPinnedBytesLocked() const;
  int64_t NowNanos() const;
  bool PinnedLocked(const std::string& id) const;  // by any owner
  // REQUIRES: mutex_ held. Deletes the blob file and its entry.
  void EvictLocked(const std::string& id, const char* why);
  // REQUIRES: mutex_ held. Drops a blob gone bad and every owner holding it
  // (see DropIfCorrupt), with a warning saying `why`.
  void DropDamagedLocked(const std::string& id, const std::string& why);
  static constexpr const char* kFileGone = "its file was gone from the head's disk";
  // REQUIRES: mutex_ held. Drops the owner; deletes its blobs nobody else holds.
  void ReleaseLocked(const std::string& owner);
  void Touch(const std::string& id, Entry& entry);
  // `size` -1: named at its end. `announced`: the size or the hint, a bound
  // checked now, never a reservation.
  Result<std::unique_ptr<Writer>> StartWrite(const std::string& id, int64_t size, int64_t announced);
  // Makes room for the writer's first `end` bytes.
  Status Grow(Writer* writer, int64_t end);
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
