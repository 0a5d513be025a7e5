#include "common/storage/range_hasher.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace clusterd {

namespace {

// A writer hashes at most this much per call, so that its own transfer is
// not held up for long; Finish does whatever is left.
constexpr int64_t kHashPerCall = int64_t{1} << 20;

}  // namespace

RangeHasher::RangeHasher(int fd, int64_t offset, std::vector<int64_t> range_sizes, std::string path)
    : fd_(fd), offset_(offset), sizes_(std::move(range_sizes)), path_(std::move(path)),
      written_(sizes_.size(), 0), buffer_(static_cast<size_t>(kHashPerCall), '\0') {}

Status RangeHasher::Wrote(size_t range, int64_t n) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    written_.at(range) += n;
  }
  std::unique_lock<std::mutex> hashing(hash_mutex_, std::try_to_lock);
  if (!hashing.owns_lock()) return Status::Ok();  // someone else is hashing; they or Finish get these bytes
  return HashReady(kHashPerCall);
}

int64_t RangeHasher::Ready() {
  std::lock_guard<std::mutex> lock(mutex_);
  while (done_ranges_ < sizes_.size() && written_[done_ranges_] >= sizes_[done_ranges_]) {
    done_bytes_ += sizes_[done_ranges_];
    ++done_ranges_;
  }
  return done_bytes_ + (done_ranges_ < sizes_.size() ? written_[done_ranges_] : 0);
}

Status RangeHasher::HashReady(int64_t limit) {
  const int64_t until = std::min(Ready(), hashed_ + limit);
  while (hashed_ < until) {
    size_t want = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(buffer_.size()), until - hashed_));
    ssize_t n = pread(fd_, buffer_.data(), want, offset_ + hashed_);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return Status::IOError(fmt::format("cannot read back {}: {}", path_, n < 0 ? std::strerror(errno) : "short"));
    }
    hash_.Update(buffer_.data(), static_cast<size_t>(n));
    hashed_ += n;
  }
  return Status::Ok();
}

Result<std::string> RangeHasher::Finish() {
  std::lock_guard<std::mutex> hashing(hash_mutex_);
  int64_t total = 0;
  for (int64_t size : sizes_) total += size;
  RETURN_IF_ERROR(HashReady(total));
  if (hashed_ != total) {
    return Status::IOError(fmt::format("{}: {} of {} bytes were written", path_, hashed_, total));
  }
  return hash_.HexDigest();
}

}  // namespace clusterd
