// The hand-over between a download's receiving thread and its consumer (a
// ByteSource's Next): the receiver runs up to `depth` pieces ahead, so that
// using one piece overlaps receiving the next, and each piece's buffer is
// handed back for the receiver to fill again. Serves both prefetching
// downloads, from the head's store (BlobClient::OpenDownload) and from S3
// (S3BlobStorage::OpenDownload). Thread-safe: one receiver, one consumer.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace clusterd {

class PrefetchQueue {
 public:
  explicit PrefetchQueue(size_t depth) : depth_(depth) {}

  // The consumer's side.
  // The next piece, valid until the next call (which hands its buffer
  // back); an empty piece and End's status once every piece was taken.
  Status Next(std::string_view* piece);
  // Next until the end: OK, or the failure End reported. Once it returns,
  // whatever the receiver wrote before End is seen by this thread.
  Status Drain();
  // The consumer goes away: Push refuses from now on, and a Push waiting
  // for room returns at once.
  void Stop();

  // The receiver's side.
  // A buffer the consumer handed back, empty but with its room, if any.
  std::optional<std::string> TakeFree();
  // Waits for room, then queues `piece` (an empty one queues nothing).
  // False, and nothing queued, once Stop was called.
  bool Push(std::string piece);
  // No more pieces: Next reports `status` after the last one (OK: the end).
  void End(const Status& status);

 private:
  const size_t depth_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::string> ready_;  // received, not yet handed out
  std::vector<std::string> free_;  // handed out and given back: reused
  std::string current_;            // the piece the consumer holds
  bool ended_ = false;             // the receiver is done
  bool stopped_ = false;           // the consumer is gone
  Status end_status_;
};

}  // namespace clusterd
