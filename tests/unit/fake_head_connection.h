// A head for HeadLink without sockets: FakeHeadDialer opens FakeHeadConnections
// that record what the link writes and answer its registration, so that
// unit tests drive registration, a lost head, reconnection and its backoff
// on a FakeWaitableClock. Thread-safe: the link calls in from its threads.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/net/frame_channel.h"
#include "daemon/agent/head_connection.h"

namespace clusterd::testing {

// One stream's head end.
class FakeHeadConnection {
 public:
  // The link's side (HeadConnection's calls, through the handle Dial returns).
  bool Write(const AgentMessage& message) {
    std::unique_lock<std::mutex> lock(mutex_);
    WaitOutStall(lock);
    if (ended_) return false;
    Record(message);
    return true;
  }
  bool TrySend(const std::string& frames) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (ended_ || refuse_try_send_) return false;
    // A stalled peer: the write takes as long as the test says.
    WaitOutStall(lock);
    if (ended_) return false;
    for (size_t at = 0; at + kFrameHeaderBytes <= frames.size();) {
      const auto* h = reinterpret_cast<const unsigned char*>(frames.data() + at);
      const size_t length = (size_t{h[0]} << 24) | (size_t{h[1]} << 16) | (size_t{h[2]} << 8) | h[3];
      AgentMessage message;
      message.ParseFromString(frames.substr(at + kFrameHeaderBytes, length));
      Record(message);
      at += kFrameHeaderBytes + length;
    }
    return true;
  }
  bool Read(HeadMessage* message) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return !inbox_.empty() || ended_; });
    if (inbox_.empty()) return false;
    *message = inbox_.front();
    inbox_.erase(inbox_.begin());
    return true;
  }
  void Deliver(std::function<void(const HeadMessage&)> fn) {
    std::vector<HeadMessage> waiting;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      deliver_ = std::move(fn);
      waiting.swap(inbox_);
    }
    for (const HeadMessage& message : waiting) deliver_(message);
  }
  void WaitEnded() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return ended_; });
  }
  bool ended() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return ended_;
  }
  Status Finish() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!reason_.ok()) return reason_;
    return Status::Unavailable("the stream to the head ended: " + why_);
  }
  int64_t MillisSinceHeadMachineAcked() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return ended_ ? -1 : acked_ms_;
  }

  // The test's side.
  // The head's message: to the link's handler once it takes them (Deliver),
  // on the calling thread; else kept for its Read.
  void FromHead(const HeadMessage& message) {
    std::function<void(const HeadMessage&)> deliver;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!deliver_) {
        inbox_.push_back(message);
        changed_.notify_all();
        return;
      }
      deliver = deliver_;
    }
    deliver(message);
  }
  // The stream ends: `why` as the transport says it, `reason` as the head's last word.
  void End(const std::string& why = "the peer closed the connection", Status reason = Status::Ok()) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (ended_) return;
    ended_ = true;
    why_ = why;
    reason_ = reason;
    changed_.notify_all();
  }
  // Writes block until Unstall (a head that stopped reading).
  void Stall() {
    std::lock_guard<std::mutex> lock(mutex_);
    stalled_ = true;
  }
  void Unstall() {
    std::lock_guard<std::mutex> lock(mutex_);
    stalled_ = false;
    changed_.notify_all();
  }
  // TrySend refuses (the head reads slowly): what the link sends waits for its writer.
  void RefuseTrySend(bool refuse) {
    std::lock_guard<std::mutex> lock(mutex_);
    refuse_try_send_ = refuse;
  }
  // -1: the head's machine acknowledges nothing (gone, cut off).
  void SetAckedMs(int64_t ms) {
    std::lock_guard<std::mutex> lock(mutex_);
    acked_ms_ = ms;
  }
  // Whether a write is blocked on Stall now.
  bool stalled_writer() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return stalled_ && waiting_writers_ > 0;
  }
  std::vector<AgentMessage> written() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return written_;
  }
  size_t CountWritten(const std::function<bool(const AgentMessage&)>& which) const {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t count = 0;
    for (const AgentMessage& m : written_) count += which(m) ? 1 : 0;
    return count;
  }
 private:
  void WaitOutStall(std::unique_lock<std::mutex>& lock) {
    ++waiting_writers_;
    changed_.wait(lock, [this] { return !stalled_ || ended_; });
    --waiting_writers_;
  }
  // REQUIRES: mutex_ held.
  void Record(const AgentMessage& message) {
    written_.push_back(message);
    // Each registration is answered at once, as a head that accepts the node does.
    if (message.has_register_()) {
      HeadMessage reply;
      reply.mutable_registered()->set_name(message.register_().name());
      reply.mutable_registered()->set_node_id(message.register_().name() + "-id");
      inbox_.push_back(reply);
    }
    changed_.notify_all();
  }

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<HeadMessage> inbox_;
  std::function<void(const HeadMessage&)> deliver_;
  std::vector<AgentMessage> written_;
  bool ended_ = false;
  bool stalled_ = false;
  bool refuse_try_send_ = false;
  int waiting_writers_ = 0;  // Writes and TrySends inside WaitOutStall
  int64_t acked_ms_ = 0;
  std::string why_;
  Status reason_ = Status::Ok();
};

// What HeadLink owns: forwards to a FakeHeadConnection the test keeps.
class FakeHeadConnectionHandle : public HeadConnection {
 public:
  explicit FakeHeadConnectionHandle(std::shared_ptr<FakeHeadConnection> fake) : fake_(std::move(fake)) {}
  bool Write(const AgentMessage& message, bool) override { return fake_->Write(message); }
  bool TrySend(std::string frames) override { return fake_->TrySend(frames); }
  bool Read(HeadMessage* message, int) override { return fake_->Read(message); }
  void Deliver(std::function<void(const HeadMessage&)> fn) override { fake_->Deliver(std::move(fn)); }
  void WaitEnded() override { fake_->WaitEnded(); }
  bool WaitWritten(int) override { return !fake_->ended(); }
  void Cancel() override { fake_->End("cancelled"); }
  void CloseAfterWrites() override { fake_->End(kPeerClosedConnection); }
  int64_t MillisSinceHeadMachineAcked() const override { return fake_->MillisSinceHeadMachineAcked(); }
  Status Finish() override { return fake_->Finish(); }

 private:
  std::shared_ptr<FakeHeadConnection> fake_;
};

// Opens FakeHeadConnections while the head is up, refuses while it is
// down, and notes when (on `clock`) each dial came.
class FakeHeadDialer : public HeadDialer {
 public:
  explicit FakeHeadDialer(const Clock* clock) : clock_(clock) {}

  Result<std::unique_ptr<HeadConnection>> Dial() override {
    std::lock_guard<std::mutex> lock(mutex_);
    dial_times_.push_back(clock_->NowMicros());
    if (cancelled_) return Status::Unavailable("cancelled");
    if (!up_) return Status::Unavailable("no head at fake:1 (connection refused)");
    auto fake = std::make_shared<FakeHeadConnection>();
    connections_.push_back(fake);
    return std::unique_ptr<HeadConnection>(new FakeHeadConnectionHandle(fake));
  }
  void Cancel() override {
    std::lock_guard<std::mutex> lock(mutex_);
    cancelled_ = true;
  }

  void SetUp(bool up) {
    std::lock_guard<std::mutex> lock(mutex_);
    up_ = up;
  }
  std::vector<Micros> dial_times() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return dial_times_;
  }
  size_t connection_count() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return connections_.size();
  }
  // The stream opened last.
  std::shared_ptr<FakeHeadConnection> last() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return connections_.empty() ? nullptr : connections_.back();
  }

 private:
  const Clock* clock_;
  mutable std::mutex mutex_;
  bool up_ = true;
  bool cancelled_ = false;
  std::vector<Micros> dial_times_;
  std::vector<std::shared_ptr<FakeHeadConnection>> connections_;
};

}  // namespace clusterd::testing
