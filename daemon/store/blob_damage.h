// Blobs gone bad on the head's disk: a file cut short or changed
// (DropIfCorrupt, asked by a client whose download failed its hash), gone
// (found by a read or by Missing) or unreadable. Each is dropped whether
// held or not: a copy that cannot be served serves nobody, and while it
// stays every upload of the right bytes is refused as present. Every owner
// that held it is let go too: a checkpoint or outputs missing a piece are
// lost whole, and the job records stop offering what cannot be served.
//
// Works on the store's index and folder under the store's lock (taken
// here where a call says so); files are read and stat'ed outside it.
#pragma once

#include <functional>
#include <mutex>
#include <set>
#include <string>

#include "common/file_util.h"
#include "common/status.h"
#include "daemon/store/blob_files.h"
#include "daemon/store/blob_index.h"

namespace clusterd {

class BlobDamage {
 public:
  // What dropping does to the store, called with its lock held.
  struct Hooks {
    // Deletes the blob's file and its entry (the store's eviction).
    std::function<void(const std::string& id, const char* why)> evict_blob;
    // Lets go of the owner (deleting its blobs nobody else holds) and
    // reports it with `why`.
    std::function<void(const std::string& owner, const std::string& why)> release_owner;
  };
  static constexpr const char* kFileGone = "its file was gone from the head's disk";

  // REQUIRES: all outlive this object; `mutex` guards `index`.
  BlobDamage(std::mutex& mutex, BlobIndex& index, const BlobFiles& files, Hooks hooks);

  // REQUIRES: the lock held. Drops blob `id` (whatever stands at its path,
  // a directory too, and its entry) and every owner holding it, with a
  // warning saying `why`. Nothing for a blob the index lacks.
  void DropLocked(const std::string& id, const std::string& why);
  // Hashes `file` (the blob's, open at its start) and drops the blob if its
  // bytes are not the id's, or cannot be read. Only the very file hashed
  // is dropped: one evicted and uploaded anew meanwhile is good. True when
  // the blob is gone. Takes the lock.
  Result<bool> DropIfCorrupt(const std::string& id, UniqueFd file);
  // The blob's file could not be read (`error`, an errno's text). Takes the lock.
  void DropUnreadable(const std::string& id, const std::string& error);
  // Drops the blobs of `present` whose file is gone and takes them out of
  // it. A stat each outside the lock. Takes the lock to drop.
  void DropGone(std::set<std::string>& present);

 private:
  std::mutex& mutex_;
  BlobIndex& index_;
  const BlobFiles& files_;
  Hooks hooks_;
};

}  // namespace clusterd
