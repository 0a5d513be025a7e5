// The head's store on its disk: where a blob's file lies
// (<dir>/blobs/<first two digits>/<id>), where writes under way go
// (<dir>/tmp/), and the file operations the store makes there. A blob
// file's modification time stands for the blob's last use, so that the
// order of use outlives a restart of the head. Holds nothing but the
// folder and a counter: safe from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace clusterd {

// 64 lower-case hex digits; anything else is refused before it nears a path.
bool IsBlobId(const std::string& id);

class BlobFiles {
 public:
  struct Found {
    std::string id;
    int64_t size = 0;
    int64_t modified_nanos = 0;  // ns since the epoch: the blob's last use
  };

  explicit BlobFiles(std::string dir) : dir_(std::move(dir)) {}

  // Creates the folders and clears the temporaries: writes that a
  // previous head never finished.
  Status Prepare() const;
  // The blobs' files in the folder; anything else there is skipped.
  Result<std::vector<Found>> Scan() const;

  std::string PathOf(const std::string& id) const;
  // A path no other write uses, for a write of blob `id` ("" when it is
  // named at its end).
  std::string NewTempPath(const std::string& id);
  // Records a use of the blob at `nanos` (ns since the epoch).
  void SetLastUse(const std::string& id, int64_t nanos) const;
  // Deletes the blob's file; OK when it is gone already.
  Status Remove(const std::string& id) const;
  // Deletes whatever stands at the blob's path, a directory too.
  void Clear(const std::string& id) const;
  // Only when the blob's file is known to be gone (ENOENT): another error
  // says nothing of the bytes.
  bool Gone(const std::string& id) const;
  // Moves a finished write's file into place as blob `id`. Something that
  // is no blob's file (a directory) standing there goes first.
  Status MoveIntoPlace(const std::string& temp_path, const std::string& id) const;

  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::atomic<uint64_t> next_temp_{0};
};

}  // namespace clusterd
