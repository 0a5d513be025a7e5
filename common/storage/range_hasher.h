// Hashes a blob that arrives as several ranged reads written out of order
// into one file. SHA-256 must see the bytes in order, so whichever writer
// finds the hash free reads back (from the page cache) and hashes what is
// complete from where the hash stands. The hashing then runs while the
// rest is still arriving, instead of after it: for a 10 MiB checkpoint
// that is 6 ms of a 35 ms download.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "common/sha256.h"
#include "common/status.h"

namespace clusterd {

class RangeHasher {
 public:
  // The blob is [offset, offset + sum of range_sizes) of `fd`, in ranges
  // of these sizes, in order. `path` names the file in errors.
  RangeHasher(int fd, int64_t offset, std::vector<int64_t> range_sizes, std::string path);

  // `n` more bytes of range `range` are written, in order within it.
  // Hashes what is ready, unless another writer already is. Thread-safe.
  Status Wrote(size_t range, int64_t n);

  // Once every range is written: hashes the rest and returns the digest.
  Result<std::string> Finish();

 private:
  // Bytes from the start of the blob that are written without a gap.
  int64_t Ready();
  // Hashes up to `limit` more ready bytes. REQUIRES: hash_mutex_ held.
  Status HashReady(int64_t limit);

  const int fd_;
  const int64_t offset_;
  const std::vector<int64_t> sizes_;
  const std::string path_;

  std::mutex mutex_;  // guards written_, done_ranges_, done_bytes_
  std::vector<int64_t> written_;
  size_t done_ranges_ = 0;  // ranges before this one are fully written
  int64_t done_bytes_ = 0;  // their bytes

  std::mutex hash_mutex_;  // guards hash_, hashed_, buffer_
  Sha256 hash_;
  int64_t hashed_ = 0;
  std::string buffer_;
};

}  // namespace clusterd
