#include "daemon/agent/head_wire.h"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>

#include <chrono>

#include <fmt/format.h>

#include "common/net/grpc_status.h"
#include "common/threads.h"

namespace clusterd {

namespace {

// Frames held back for the next Write beyond this many bytes go at once.
constexpr size_t kMaxHeldBytes = 64 << 10;

}  // namespace

Result<std::unique_ptr<HeadWire>> HeadWire::Open(const std::string& host, int port, const std::string& token,
                                                 const TlsConfig& tls, int timeout_ms) {
  std::unique_ptr<HeadWire> wire(new HeadWire());
  HeadWire* self = wire.get();
  self->thread_ = StartNamedThread("link-io", [self] {
    auto work = boost::asio::make_work_guard(self->io_);  // until the destructor stops it
    self->io_.run();
  });
  ASSIGN_OR_RETURN(self->channel_, DialFrameChannel(&self->io_, host, port, tls, timeout_ms));
  FrameChannel::Handlers handlers;
  handlers.on_frame = [self](std::string body) {
    HeadMessage message;
    std::unique_lock<std::mutex> lock(self->mutex_);
    if (!message.ParseFromString(body)) {
      self->why_ = fmt::format("a frame of {} bytes from the head that is not a HeadMessage", body.size());
      self->channel_->Close(self->why_);
      return false;
    }
    const bool end = message.has_end();
    if (end) {
      self->reason_ = FromGrpc(grpc::Status(static_cast<grpc::StatusCode>(message.end().code()), message.end().message()));
    } else {
      self->inbox_.push_back(std::move(message));
    }
    if (self->deliver_ && !end) {
      lock.unlock();  // WaitEnded's thread sleeps on: this is not its news
      self->DeliverInbox();
      return true;
    }
    self->arrived_.notify_all();
    if (end) self->written_.notify_all();
    return !end;  // after the head's last word, nothing
  };
  handlers.on_closed = [self](const std::string& why) {
    std::lock_guard<std::mutex> lock(self->mutex_);
    self->ended_ = true;
    if (self->why_.empty()) self->why_ = why;
    self->arrived_.notify_all();
    self->written_.notify_all();
  };
  handlers.on_written = [self](size_t) {
    std::lock_guard<std::mutex> lock(self->mutex_);
    self->written_.notify_all();
  };
  self->channel_->Start(std::move(handlers), kMaxFrameBytes);
  AgentMessage hello;
  hello.mutable_hello()->set_token(token);
  self->channel_->Send(EncodeFrame(hello));
  return wire;
}

HeadWire::~HeadWire() {
  if (channel_) channel_->Close("closed");
  boost::asio::post(io_, [this] { io_.stop(); });
  if (thread_.joinable()) thread_.join();
}

// Neither sends under mutex_: the io thread takes it for every frame from
// the head, and must not wait while a caller's bytes go into the socket.
// HeadLink has one writer at a time, so frames cannot pass each other here.
bool HeadWire::Write(const AgentMessage& message, bool more_follow) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (ended_ || reason_) return false;
  held_ += EncodeFrame(message);
  if (more_follow && held_.size() < kMaxHeldBytes) return true;
  std::string frames;
  frames.swap(held_);
  lock.unlock();
  channel_->Send(std::move(frames));
  lock.lock();
  written_.wait(lock, [this] { return ended_ || reason_ || channel_->queued_bytes() < kWriteWindow; });
  return !ended_ && !reason_;
}

bool HeadWire::TrySend(std::string frames) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (ended_ || reason_ || !held_.empty() || channel_->queued_bytes() >= kWriteWindow) return false;
  }
  channel_->Send(std::move(frames));
  return true;
}

void HeadWire::Deliver(std::function<void(const HeadMessage&)> fn) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    deliver_ = std::move(fn);
  }
  // What arrived before goes first, on the io thread, as what follows will.
  boost::asio::post(io_, [this] { DeliverInbox(); });
}

void HeadWire::DeliverInbox() {
  std::deque<HeadMessage> taken;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    taken.swap(inbox_);
  }
  // Not under the mutex: deliver_ may send (TrySend takes it).
  for (const HeadMessage& message : taken) deliver_(message);
}

void HeadWire::WaitEnded() {
  std::unique_lock<std::mutex> lock(mutex_);
  arrived_.wait(lock, [this] { return ended_ || reason_.has_value(); });
}

bool HeadWire::Read(HeadMessage* message, int timeout_ms) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto ready = [this] { return !inbox_.empty() || ended_ || reason_; };
  if (timeout_ms < 0) {
    arrived_.wait(lock, ready);
  } else if (!arrived_.wait_for(lock, std::chrono::milliseconds(timeout_ms), ready)) {
    why_ = fmt::format("no answer from the head within {} ms", timeout_ms);
    channel_->Close(why_);
    return false;
  }
  if (inbox_.empty()) return false;
  *message = std::move(inbox_.front());
  inbox_.pop_front();
  return true;
}

bool HeadWire::WaitWritten(int timeout_ms) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto written = [this] { return held_.empty() && channel_->queued_bytes() == 0; };
  written_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                    [&] { return ended_ || written(); });
  return written() && !ended_;
}

void HeadWire::Cancel() { channel_->Close("cancelled"); }

void HeadWire::CloseAfterWrites() {
  std::string frames;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    frames.swap(held_);
  }
  if (!frames.empty()) channel_->Send(std::move(frames));
  channel_->CloseAfterSends();
}

Status HeadWire::Finish() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (reason_) return *reason_;
  // The head closed it without a word, or the connection broke.
  return Status::Unavailable(fmt::format("the stream to the head ended: {}", why_.empty() ? "closed" : why_));
}

}  // namespace clusterd
