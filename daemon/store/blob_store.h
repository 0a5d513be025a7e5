// The head's blob store: content-addressed files (a blob's id is the
// SHA-256 of its bytes, in hex) in the head's state folder, with a size cap.
// Code packages, checkpoints and outputs live here. Independent of the
// scheduler: the job manager only pins and unpins, by owner.
//
// The store ties its parts together under one lock: the files on the disk
// (blob_files.h), what is held and by whom (blob_index.h), the room a write
// may take and what goes to make it (blob_room.h), the writes themselves
// (blob_store_writer.h), and the blobs gone bad on the disk (blob_damage.h). When live
// jobs' blobs, the bytes of writes under way and new bytes would pass the
// cap, the write fails (RESOURCE_EXHAUSTED) and nothing is evicted for it;
// a write that ends without its commit gives its room back.
// Thread-safe: rpc threads stream bytes in and out while the head's event
// loop pins; file I/O happens outside the lock.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/config.h"
#include "common/status.h"
#include "daemon/store/blob_damage.h"
#include "daemon/store/blob_files.h"
#include "daemon/store/blob_index.h"
#include "daemon/store/blob_store_writer.h"

namespace clusterd {

class BlobStore {
 public:
  struct Options {
    std::string dir;               // <dir>/blobs/<first two digits>/<id>, <dir>/tmp/
    int64_t capacity_bytes = 0;    // 0: no cap
    // Times of use (LRU order, the upload grace); null: the system's.
    // REQUIRES: outlives the store.
    const Clock* clock = nullptr;
    // Unheld blobs used this recently count as an upload's under way
    // (blob_room.h): store_upload_grace_s.
    int64_t upload_grace_s = Config{}.store_upload_grace_s;
  };
  struct Usage {
    int64_t used_bytes = 0;        // committed blobs
    int64_t pinned_bytes = 0;      // of which live jobs (hard owners) hold
    int64_t capacity_bytes = 0;
    int64_t blobs = 0;
    int64_t reserved_bytes = 0;    // held by uploads under way: about what they wrote
  };
  using Writer = BlobStoreWriter;

  // Opens (creating) the folder, takes stock of the blobs in it (their
  // modification times stand for last use) and clears leftover temporaries.
  static Result<std::unique_ptr<BlobStore>> Open(const Options& options);

  // Present blobs only (a write in progress does not count).
  bool Has(const std::string& id) const;
  // Those of `ids` the store lacks; the others count as used (an uploader
  // that asks is about to name them in a manifest). A listed blob whose
  // file is gone is lacking, and dropped: else the upload would skip it
  // and a manifest name bytes nobody has.
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
  // The owners that hold `id` (none for a blob nobody holds).
  std::vector<std::string> Holders(const std::string& id) const;
  // Removes the owner's pins and deletes its blobs that nobody else holds.
  void Release(const std::string& owner);

  // Called (with the store's lock held: post, do not call back in) for each
  // soft owner whose blobs were evicted to make room (`why` ""), and for
  // each owner, hard or soft, let go because one of its blobs went bad
  // (`why` says how).
  using ReleasedFn = std::function<void(const std::string& owner, const std::string& why)>;
  void set_on_released(ReleasedFn callback) { on_released_ = std::move(callback); }

  // Blobs gone bad on the disk, dropped with every owner that held them
  // (reported through on_released): see blob_damage.h.
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
  friend class BlobStoreWriter;
  explicit BlobStore(Options options);
  int64_t NowNanos() const;
  // REQUIRES: mutex_ held. blob_room.h's MakeRoom on this store.
  Status MakeRoom(int64_t bytes);
  // REQUIRES: mutex_ held. A use of the blob, in the index and on its file.
  void TouchLocked(const std::string& id, BlobIndex::Blob& blob);
  // REQUIRES: mutex_ held. Deletes the blob file and its entry.
  void EvictLocked(const std::string& id, const char* why);
  // REQUIRES: mutex_ held. Drops the owner; deletes its blobs nobody else holds.
  void ReleaseLocked(const std::string& owner);
  // `size` -1: named at its end. `announced`: the size or the hint, a bound
  // checked now, never a reservation.
  Result<std::unique_ptr<Writer>> StartWrite(const std::string& id, int64_t size, int64_t announced);
  // The writer's calls: room for its first `end` bytes; its end.
  Status Grow(Writer* writer, int64_t end);
  Status Finish(Writer* writer);
  void Abandon(Writer* writer);

  Options options_;
  SystemClock system_clock_;
  const Clock* clock_;
  BlobFiles files_;
  mutable std::mutex mutex_;
  BlobIndex index_;
  int64_t reserved_ = 0;  // writes under way
  ReleasedFn on_released_;
  BlobDamage damage_;
};

}  // namespace clusterd
