// What the node agent has for the head: the messages not yet written to
// a stream, in order, and the kept ones (must_reach_head.h: exits, stored
// checkpoints) numbered and held until the head says its journal has them
// (Delivered), to go again after every registration until then: a write
// can succeed into a stream whose head has just died. Bounded both ways: a
// full queue refuses (the caller keeps what matters and tries again), and
// past kMaxUndelivered the oldest kept message is forgotten, so a head that
// never answers does not grow the agent without bound.
// Not thread-safe: HeadLink's lock guards it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "agent.pb.h"

namespace clusterd {

class HeadOutbox {
 public:
  // Bytes queued beyond which Fits refuses.
  static constexpr size_t kMaxQueuedBytes = 16 << 20;
  // Kept messages beyond which the oldest is forgotten.
  static constexpr size_t kMaxUndelivered = 4096;

  // `head_address`: for the warning when kept messages are forgotten.
  explicit HeadOutbox(std::string head_address) : head_address_(std::move(head_address)) {}

  // Whether a message of `bytes` may be queued (one always may, into an empty queue).
  bool Fits(size_t bytes) const { return queue_.empty() || queued_bytes_ + bytes <= kMaxQueuedBytes; }
  // A message that must reach the head: numbered (delivery_seq) and kept.
  void Keep(AgentMessage* message);
  // Queues at the back, or (urgent) at the front.
  void Push(AgentMessage message, bool urgent = false);
  // Takes from the front up to about `window` bytes of frames (at least one message).
  std::vector<AgentMessage> TakeFront(size_t window);
  // Puts back at the front, in their order, what was taken and not written.
  void PutBack(std::vector<AgentMessage> batch);
  // `message` was handed to a stream (written, or lost with it).
  void Written(const AgentMessage& message);
  // After a registration: stale heartbeats go, and the kept messages an
  // earlier stream took that the head has not confirmed go first.
  void StartStream();
  // The head's Delivered: forgets the kept messages up to `up_to_seq`.
  void Delivered(int64_t up_to_seq);

  bool empty() const { return queue_.empty(); }
  AgentMessage& front() { return queue_.front(); }
  size_t undelivered() const { return undelivered_.size(); }

 private:
  std::string head_address_;
  std::deque<AgentMessage> queue_;
  size_t queued_bytes_ = 0;
  int64_t delivery_seq_ = 0;              // the last delivery_seq given
  int64_t written_seq_ = 0;               // the last kept message handed to a stream (written or failed)
  std::deque<AgentMessage> undelivered_;  // kept messages, by delivery_seq
  bool forgetting_ = false;               // past kMaxUndelivered since the last Delivered (warned)
};

}  // namespace clusterd
