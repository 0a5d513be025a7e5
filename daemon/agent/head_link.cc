#include "daemon/agent/head_link.h"

#include <algorithm>
#include <vector>
#include <chrono>

#include <fmt/format.h>

#include "common/logging.h"
#include "common/net/frame_channel.h"
#include "common/threads.h"
#include "common/utf8.h"
#include "daemon/agent/head_wire_dialer.h"
#include "daemon/agent/leader_following_dialer.h"
#include "daemon/agent/must_reach_head.h"

namespace clusterd {

HeadLink::HeadLink(Options options, RegistrationFn registration, UsageFn usage, CommandFn on_command,
                   RegisteredFn on_registered)
    : options_(std::move(options)),
      clock_(options_.clock ? options_.clock : SystemWaitableClock::Shared()),
      registration_(std::move(registration)),
      usage_(std::move(usage)),
      on_command_(std::move(on_command)),
      on_registered_(std::move(on_registered)),
      dialer_(options_.dialer ? options_.dialer
                              : std::make_shared<LeaderFollowingDialer>(HeadWireDialer::Options{
                                    options_.head_address, options_.token, options_.tls,
                                    options_.reconnect_initial_ms, options_.reconnect_max_ms,
                                    options_.connect_timeout_ms})),
      outbox_(options_.head_address),
      heartbeats_(options_.head_address, options_.keepalive_ms, options_.keepalive_timeout_ms) {}

HeadLink::~HeadLink() { Stop(); }

Result<Registered> HeadLink::Start(int timeout_ms) {
  reader_ = StartNamedThread("link-reader", [this] { RunLoop(); });
  heartbeat_ = StartNamedThread("link-heartbeat", [this] { HeartbeatLoop(); });
  writer_ = StartNamedThread("link-writer", [this] { WriteLoop(); });
  std::unique_lock<std::mutex> lock(mutex_);
  // The leader wait comes first: timeout_ms is the registration's once a head leads.
  const int wait_ms = timeout_ms + std::max(0, options_.leader_wait_ms);
  bool answered = clock_->WaitForMillis(wake_, lock, wait_ms, [this] { return first_done_; });
  Status status = answered ? first_status_
                           : Status::Unavailable(fmt::format("no answer from a clusterd head at {} within {} ms",
                                                             options_.head_address, wait_ms));
  Registered registered = first_registered_;
  lock.unlock();
  if (!status.ok()) {
    Stop();
    return status;
  }
  return registered;
}

void HeadLink::Stop() {
  stopping_ = true;
  std::shared_ptr<HeadConnection> wire;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    dialer_->Cancel();
    wire = wire_;
  }
  // The last frames (a drain, the ranks' exits) reach the head before the
  // end; written with no lock held, as every write is.
  if (wire) wire->CloseAfterWrites();
  wake_.notify_all();
  beat_wake_.notify_all();
  if (reader_.joinable()) reader_.join();
  if (heartbeat_.joinable()) heartbeat_.join();
  if (writer_.joinable()) writer_.join();
}

void HeadLink::Enqueue(AgentMessage message, bool urgent) {
  outbox_.Push(std::move(message), urgent);
  wake_.notify_all();
}

bool HeadLink::Send(const AgentMessage& message) {
  // A message the head cannot parse would cost this node its stream.
  AgentMessage clean = message;
  CleanStrings(&clean);
  std::unique_lock<std::mutex> lock(mutex_);
  if (!connected_ || stopping_) return false;
  if (!outbox_.Fits(clean.ByteSizeLong())) return false;
  if (MustReachHead(clean)) outbox_.Keep(&clean);
  if (corked_) {
    outbox_.Push(std::move(clean));
    return true;
  }
  // With nothing queued or being written, the message goes from this
  // thread (the agent's loop, mostly) without waking the writer for it.
  if (outbox_.empty() && !writing_ && wire_ && !stream_broken_) {
    std::vector<AgentMessage> batch;
    batch.push_back(std::move(clean));
    WriteHere(&lock, std::move(batch));
    return true;
  }
  Enqueue(std::move(clean), false);
  return true;
}

bool HeadLink::WriteHere(std::unique_lock<std::mutex>* lock, std::vector<AgentMessage> batch) {
  std::string frames;
  for (const AgentMessage& message : batch) frames += EncodeFrame(message);
  // This thread is the writer until it is done (writing_): the writer
  // thread and other senders queue meanwhile, and nobody waits on mutex_
  // while the bytes go into the socket.
  std::shared_ptr<HeadConnection> wire = wire_;
  writing_ = true;
  lock->unlock();
  const bool sent = wire->TrySend(std::move(frames));
  lock->lock();
  writing_ = false;
  if (sent) {
    for (const AgentMessage& message : batch) outbox_.Written(message);
  } else {
    // Not taken (the head reads slowly): first in line for the writer,
    // before what was queued meanwhile.
    outbox_.PutBack(std::move(batch));
  }
  wake_.notify_all();  // the writer (queued work, writing_ over), Flush, and RunOnce's end
  return sent;
}

void HeadLink::Cork() {
  std::lock_guard<std::mutex> lock(mutex_);
  corked_ = true;
}

void HeadLink::Uncork() {
  std::unique_lock<std::mutex> lock(mutex_);
  corked_ = false;
  if (outbox_.empty() || SendQueuedNow(&lock)) return;
  wake_.notify_all();
}

bool HeadLink::SendQueuedNow(std::unique_lock<std::mutex>* lock) {
  if (writing_ || !connected_ || !wire_ || stream_broken_) return false;
  // At most a window's worth: the rest of a big burst (a rank's flood of
  // output) waits for the writer, which waits for the head to read.
  return WriteHere(lock, outbox_.TakeFront(HeadConnection::kWriteWindow)) && outbox_.empty();
}

void HeadLink::Delivered(int64_t up_to_seq) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    outbox_.Delivered(up_to_seq);
  }
  wake_.notify_all();  // WaitDelivered
}

size_t HeadLink::WaitDelivered(int timeout_ms) {
  std::unique_lock<std::mutex> lock(mutex_);
  clock_->WaitForMillis(wake_, lock, timeout_ms, [this] { return outbox_.undelivered() == 0 || !connected_; });
  return outbox_.undelivered();
}

size_t HeadLink::undelivered() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return outbox_.undelivered();
}

bool HeadLink::Flush(int timeout_ms) {
  const Micros deadline = clock_->NowMicros() + Micros{timeout_ms} * 1000;
  std::shared_ptr<HeadConnection> wire;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    wake_.notify_all();  // what a Cork held back goes now
    clock_->WaitUntil(wake_, lock, deadline,
                      [this] { return (outbox_.empty() && !writing_) || !connected_ || stream_broken_; });
    if (!outbox_.empty() || writing_) return false;
    wire = wire_;
  }
  // Handed to the connection is not yet sent: a stop right after would
  // close the socket on bytes still queued in it.
  const int64_t left_ms = (deadline - clock_->NowMicros()) / 1000;
  return !wire || wire->WaitWritten(static_cast<int>(std::max<int64_t>(left_ms, 0)));
}

void HeadLink::WriteLoop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] {
      return stopping_ || (connected_ && wire_ && !stream_broken_ && !outbox_.empty() && !writing_);
    });
    if (stopping_) return;
    AgentMessage message = std::move(outbox_.TakeFront(0).front());
    outbox_.Written(message);
    // With more queued behind it, this one may wait and go with the rest
    // (a node's starts, logs and exits in one write); the last sends all.
    const bool more_follow = !outbox_.empty();
    HeadConnection* wire = wire_.get();  // RunOnce keeps it until writing_ is false
    writing_ = true;
    lock.unlock();
    bool wrote = wire->Write(message, more_follow);  // blocks while the head reads slowly: nothing else waits on it
    lock.lock();
    writing_ = false;
    if (!wrote) {
      // The stream broke under it. A kept message goes again after the next
      // registration (RequeueUndelivered), the rest is lost with the stream.
      stream_broken_ = true;
      wire->Cancel();
    }
    wake_.notify_all();
  }
}

bool HeadLink::WaitsForLeader(const Status& failed, Micros deadline) const {
  // A refusal by a head that answered (a wrong token, a name in use) is final.
  return options_.leader_wait_ms > 0 && failed.code() == Status::Code::kUnavailable && !stopping_ &&
         clock_->NowMicros() < deadline;
}

void HeadLink::RunLoop() {
  int delay_ms = options_.reconnect_initial_ms;
  bool ever_registered = false;
  const Micros leader_deadline = clock_->NowMicros() + Micros{std::max(0, options_.leader_wait_ms)} * 1000;
  bool waited_for_leader = false;
  while (!stopping_) {
    bool registered = false;
    Status ended = RunOnce(&registered);
    if (!ever_registered && !registered && WaitsForLeader(ended, leader_deadline)) {
      if (!waited_for_leader) {
        waited_for_leader = true;
        LOG_INFO("waiting up to {} ms for a leader among the heads {}: {}", options_.leader_wait_ms,
                 options_.head_address, ended.message());
        if (options_.on_waiting_for_leader) options_.on_waiting_for_leader(ended.message());
      }
      SleepBackoff(&delay_ms, leader_deadline);
      continue;
    }
    if (!ever_registered && !registered) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!first_done_) {
        first_done_ = true;
        first_status_ = ended.ok() ? Status::Unavailable("the head closed the stream before registering") : ended;
        if (waited_for_leader && first_status_.code() == Status::Code::kUnavailable) {
          first_status_ = Status::Unavailable(fmt::format(
              "no head of {} led within {} ms (ha_leader_wait_ms) of waiting for a leader; the last try: {}",
              options_.head_address, options_.leader_wait_ms, first_status_.message()));
        }
      }
      wake_.notify_all();
      return;  // the start command reports it; a daemon that never joined does not linger
    }
    ever_registered = true;
    if (registered) delay_ms = options_.reconnect_initial_ms;
    if (stopping_) {
      // The head closes its end once it has read this node's last frames
      // (its drain, its ranks' exits); any other end may have lost them.
      if (ended.message().find(kPeerClosedConnection) == std::string::npos) {
        LOG_WARN("stopped without the head confirming it heard this node leave ({}): it counts the node DEAD "
                 "at its node timeout",
                 ended.message());
      }
      break;
    }
    LOG_WARN("lost the head at {}: {}; reconnecting in {} ms", options_.head_address, ended.ToString(), delay_ms);
    SleepBackoff(&delay_ms);
  }
}

Status HeadLink::RunOnce(bool* registered) {
  auto opened = dialer_->Dial();
  if (!opened.ok()) return opened.status();
  std::shared_ptr<HeadConnection> wire = std::move(*opened);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    wire_ = wire;
    if (stopping_) wire->Cancel();
  }
  AgentMessage hello;
  *hello.mutable_register_() = registration_();
  // The writer starts only once this stream is registered (connected_).
  bool wrote = wire->Write(hello, false);
  HeadMessage message;
  if (wrote && wire->Read(&message, kRegistrationTimeoutMs) && message.has_registered()) {
    *registered = true;
    const Registered& ack = message.registered();
    if (ack.heartbeat_ms() > 0) options_.heartbeat_ms = ack.heartbeat_ms();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!first_done_) {
        first_done_ = true;
        first_registered_ = ack;
      }
      // What the last stream left unsent goes now, after what it wrote that
      // the head never confirmed; its heartbeats are stale.
      outbox_.StartStream();
      stream_broken_ = false;
      heartbeats_.StreamRegistered(clock_->NowMicros());
      connected_ = true;
    }
    wake_.notify_all();
    LOG_INFO("registered with the head at {} as {} ({}), incarnation {}", options_.head_address, ack.name(),
             ack.node_id(), ack.incarnation());
    // Given several heads, the datagrams go to the one this stream reached.
    const std::string dialed = dialer_->address();
    std::shared_ptr<HeartbeatSender> datagrams =
        HeadHeartbeatPath::OpenDatagrams(dialed.empty() ? options_.head_address : dialed, ack);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      heartbeats_.UseDatagrams(std::move(datagrams));
    }
    if (on_registered_) on_registered_(ack);
    // The head's messages are taken on the wire's io thread from here on:
    // a command reaches the agent's loop in one hop, not two.
    wire->Deliver([this](const HeadMessage& message) { OnHeadMessage(message); });
    wire->WaitEnded();
  }
  {
    std::unique_lock<std::mutex> lock(mutex_);
    connected_ = false;
    // A write still in progress ends with the stream.
    if (writing_) wire->Cancel();
    wake_.wait(lock, [this] { return !writing_; });
    wire_ = nullptr;
    heartbeats_.StreamEnded();
  }
  wake_.notify_all();
  Status ended = wire->Finish();
  if (ended.ok()) return Status::Unavailable("the head closed the stream");
  return ended.WithContext(fmt::format("head {}", options_.head_address));
}

void HeadLink::OnHeadMessage(const HeadMessage& message) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    heartbeats_.Heard(clock_->NowMicros());
  }
  if (message.has_alive()) {
    // Only a sign of life, taken above.
  } else if (message.has_delivered()) {
    Delivered(message.delivered().up_to_seq());
  } else if (message.has_heartbeat_path()) {
    OnHeartbeatPath(message.heartbeat_path().datagrams_heard());
  } else {
    on_command_(message);
  }
}

void HeadLink::SleepBackoff(int* delay_ms, Micros until) {
  std::unique_lock<std::mutex> lock(mutex_);
  int64_t sleep_ms = *delay_ms;
  if (until > 0) sleep_ms = std::clamp<int64_t>((until - clock_->NowMicros()) / 1000, 0, sleep_ms);
  clock_->WaitForMillis(wake_, lock, static_cast<int>(sleep_ms), [this] { return stopping_.load(); });
  *delay_ms = std::min(*delay_ms * 2, options_.reconnect_max_ms);
}

void HeadLink::OnHeartbeatPath(bool datagrams_heard) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (heartbeats_.OnPath(datagrams_heard)) {
    beat_now_ = true;  // before the node could time out
    beat_wake_.notify_all();
  }
}

void HeadLink::HeartbeatLoop() {
  int64_t seq = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    clock_->WaitForMillis(beat_wake_, lock, options_.heartbeat_ms, [this] { return stopping_.load() || beat_now_; });
    if (stopping_) break;
    beat_now_ = false;
    if (!connected_ || stream_broken_) continue;
    std::shared_ptr<HeartbeatSender> datagrams = heartbeats_.datagrams();
    lock.unlock();
    const int64_t answered = datagrams ? datagrams->TakeAnswer() : 0;
    AgentMessage beat;
    beat.mutable_heartbeat()->set_seq(++seq);
    *beat.mutable_heartbeat()->mutable_usage() = usage_();  // reads /proc: not under the lock
    lock.lock();
    if (!connected_ || stream_broken_) continue;
    const Micros now = clock_->NowMicros();
    if (!heartbeats_.StillThere(now, answered,
                                [this] { return wire_ ? wire_->MillisSinceHeadMachineAcked() : int64_t{-1}; })) {
      stream_broken_ = true;
      if (wire_) wire_->Cancel();
      wake_.notify_all();
      continue;
    }
    const HeadLiveness::Ask ask = heartbeats_.ShouldAsk(seq, now);
    const bool heard = heartbeats_.CarriedBy(datagrams);
    lock.unlock();
    if (datagrams) datagrams->Send(seq, beat.heartbeat().usage(), ask != HeadLiveness::Ask::kNo);
    lock.lock();
    // Heard datagrams carry the beats; the stream only an ask that the
    // datagrams' answers have not settled (they may be dropped on the way back).
    if (heard && ask != HeadLiveness::Ask::kOnStreamToo) continue;
    if (!connected_) continue;
    if (ask != HeadLiveness::Ask::kNo) beat.mutable_heartbeat()->set_answer_me(true);
    // Ahead of queued logs, so a busy stream still beats; one at a time.
    if (outbox_.empty() || !outbox_.front().has_heartbeat()) {
      Enqueue(std::move(beat), true);
    } else if (ask != HeadLiveness::Ask::kNo) {
      outbox_.front().mutable_heartbeat()->set_answer_me(true);
    }
  }
}

}  // namespace clusterd
