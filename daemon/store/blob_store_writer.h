// One write into the head's store (BlobStore::Create, CreateUnnamed): bytes
// go to a temporary file, hashed on the way; Commit checks size and hash
// and only then does the store make the blob visible. Destroyed without a
// Commit, it leaves nothing behind. Room in the store is taken as the bytes
// arrive (blob_room.h). One thread at a time per writer.
#pragma once

#include <cstdint>
#include <string>

#include "common/sha256.h"
#include "common/status.h"

namespace clusterd {

class BlobStore;

class BlobStoreWriter {
 public:
  ~BlobStoreWriter();
  BlobStoreWriter(const BlobStoreWriter&) = delete;
  BlobStoreWriter& operator=(const BlobStoreWriter&) = delete;

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
  BlobStoreWriter(BlobStore* store, std::string id, int64_t size, std::string temp_path, int fd);
  // Checks what arrived against the id and size, syncs it and closes the
  // file (closed whatever the answer).
  Status Seal();

  BlobStore* store_;
  std::string id_;        // "" until an unnamed write is committed
  int64_t size_;          // -1 until an unnamed write is committed
  int64_t reserved_ = 0;  // room held in the store for this write: about what it wrote
  int64_t written_ = 0;
  std::string temp_path_;
  int fd_;
  Sha256 hash_;
  bool done_ = false;
};

}  // namespace clusterd
