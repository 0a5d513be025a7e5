#include "daemon/agent/head_outbox.h"

#include <algorithm>

#include "common/logging.h"
#include "common/net/frame_channel.h"

namespace clusterd {

void HeadOutbox::Keep(AgentMessage* message) {
  message->set_delivery_seq(++delivery_seq_);
  if (undelivered_.size() >= kMaxUndelivered) {
    // Once per run of them: a head whose journal fails for an hour must
    // not cost a log line per exit.
    if (!forgetting_) {
      LOG_WARN("the head at {} has not confirmed the last {} exits and checkpoints; forgetting the oldest "
               "until it does", head_address_, undelivered_.size());
    }
    forgetting_ = true;
    undelivered_.pop_front();
  }
  undelivered_.push_back(*message);
}

void HeadOutbox::Push(AgentMessage message, bool urgent) {
  queued_bytes_ += message.ByteSizeLong();
  if (urgent) {
    queue_.push_front(std::move(message));
  } else {
    queue_.push_back(std::move(message));
  }
}

std::vector<AgentMessage> HeadOutbox::TakeFront(size_t window) {
  std::vector<AgentMessage> batch;
  size_t bytes = 0;
  while (!queue_.empty() && (batch.empty() || bytes < window)) {
    const size_t size = queue_.front().ByteSizeLong();
    bytes += kFrameHeaderBytes + size;
    queued_bytes_ -= std::min(queued_bytes_, size);
    batch.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  return batch;
}

void HeadOutbox::PutBack(std::vector<AgentMessage> batch) {
  for (auto it = batch.rbegin(); it != batch.rend(); ++it) Push(std::move(*it), /*urgent=*/true);
}

void HeadOutbox::Written(const AgentMessage& message) { written_seq_ = std::max(written_seq_, message.delivery_seq()); }

void HeadOutbox::StartStream() {
  for (auto it = queue_.begin(); it != queue_.end();) {
    if (!it->has_heartbeat()) {
      ++it;
      continue;
    }
    queued_bytes_ -= std::min(queued_bytes_, it->ByteSizeLong());
    it = queue_.erase(it);
  }
  // Those past written_seq_ are still in the queue, behind these.
  for (auto it = undelivered_.rbegin(); it != undelivered_.rend(); ++it) {
    if (it->delivery_seq() > written_seq_) continue;
    Push(*it, /*urgent=*/true);
  }
}

void HeadOutbox::Delivered(int64_t up_to_seq) {
  while (!undelivered_.empty() && undelivered_.front().delivery_seq() <= up_to_seq) undelivered_.pop_front();
  forgetting_ = false;
}

}  // namespace clusterd
