// The node agent's one long-lived stream to the head: registers, sends a
// heartbeat every period, hands the head's commands to a handler, and when
// the stream ends reconnects with exponential backoff and registers again.
// Heartbeats go as UDP datagrams where the head offers it, and on the
// stream until the head says it hears them, or again once it says it no
// longer does. A message goes from the sender's thread when nothing is
// queued and the head keeps up; otherwise onto a queue that one writer
// thread drains, so Send never blocks on the network. After registration
// the head's messages are handled on the wire's io thread (Deliver), with
// no reader thread between it and the command handler. A stream whose head
// has stopped answering ends within keepalive_ms + keepalive_timeout_ms
// (head_liveness.h) where its machine no longer acknowledges what the agent
// sends; a stopped or starved head keeps its streams (and its nodes their
// jobs) for when it runs again.
// What goes to the head waits in its HeadOutbox, which also keeps what
// must reach the head until the head confirms it; where the heartbeats go
// and whether the head still answers is its HeadHeartbeatPath's.
// Thread-safe: Send may be called from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "agent.pb.h"
#include "common/config.h"
#include "common/status.h"
#include "common/net/tls.h"
#include "common/waitable_clock.h"
#include "daemon/agent/head_connection.h"
#include "daemon/agent/head_heartbeat_path.h"
#include "daemon/agent/head_liveness.h"
#include "daemon/agent/head_outbox.h"

namespace clusterd {

class HeadLink {
 public:
  struct Options {
    std::string head_address;
    std::string token;
    TlsConfig tls;
    // The timings' defaults are the config table's (common/config_def.h).
    int heartbeat_ms = Config{}.heartbeat_ms;
    int reconnect_initial_ms = Config{}.reconnect_initial_ms;
    int reconnect_max_ms = Config{}.reconnect_max_ms;
    int connect_timeout_ms = Config{}.connect_timeout_ms;
    int keepalive_ms = Config{}.keepalive_ms;
    int keepalive_timeout_ms = Config{}.keepalive_timeout_ms;
    // Given heads in HA: how long the first registration waits for one of
    // them to lead. Until then a head that cannot be reached (refused, its
    // port closed while a new leader loads its state) or stands by with no
    // leader is tried again, not an error. 0: the first failure is final,
    // as a single head's refused connection is a wrong address.
    int leader_wait_ms = 0;
    // Called once, on the link's reader thread, when the first registration
    // starts waiting for a leader, with what the last try got.
    std::function<void(const std::string& why)> on_waiting_for_leader;
    // What the link reads time from and waits on; null: the machine's.
    // REQUIRES: outlives the link.
    const WaitableClock* clock = nullptr;
    // What opens each stream to the head; null: a HeadWireDialer for
    // head_address (Locate, then the agent port). Tests pass a fake.
    std::shared_ptr<HeadDialer> dialer;
  };
  // Kept messages beyond which the oldest is forgotten (HeadOutbox).
  static constexpr size_t kMaxUndelivered = HeadOutbox::kMaxUndelivered;
  // Called before each (re)registration, so it can carry the ranks still running.
  using RegistrationFn = std::function<RegisterNode()>;
  using UsageFn = std::function<NodeUsage()>;
  // Called on the link's io thread for every command from the head: it
  // must not block (post it onward).
  using CommandFn = std::function<void(const HeadMessage&)>;
  // Called on the link's reader thread after each successful (re)registration.
  using RegisteredFn = std::function<void(const Registered&)>;

  HeadLink(Options options, RegistrationFn registration, UsageFn usage, CommandFn on_command,
           RegisteredFn on_registered = nullptr);
  HeadLink(const HeadLink&) = delete;
  HeadLink& operator=(const HeadLink&) = delete;
  ~HeadLink();

  // Connects and registers once, waiting up to timeout_ms (plus
  // leader_wait_ms given heads in HA). On success the link keeps itself
  // connected until Stop(); on failure nothing keeps running.
  Result<Registered> Start(int timeout_ms);
  // Queues the message for the head: false (and not taken) while
  // disconnected or while the queue is full. Never blocks on the network.
  // What is still queued when a stream ends goes on the next one (heartbeats
  // excepted), after the new registration, and kept messages the head has
  // not confirmed go again before it.
  bool Send(const AgentMessage& message);
  // Until Uncork, Send only queues: what one turn of the caller's loop sends
  // (a tick's exits and logs, a launch's starts) goes in one write, and
  // wakes the head once. Call both from one thread (the agent's loop).
  void Cork();
  void Uncork();
  // Waits up to timeout_ms for the queue to be written out; returns whether it was.
  bool Flush(int timeout_ms);
  // Waits up to timeout_ms (less if the stream ends) for the head to confirm
  // every kept message; returns how many it has not.
  size_t WaitDelivered(int timeout_ms);
  void Stop();
  bool connected() const { return connected_; }
  // The head the last stream reached (given several heads, the leader the
  // dialer found); "" before the first.
  std::string followed_head() const { return dialer_->address(); }
  // Kept messages the head has not yet confirmed (for tests).
  size_t undelivered() const;

 private:
  // One connection's life: register, read commands until the stream ends.
  // Returns how it ended, and whether registration succeeded.
  Status RunOnce(bool* registered);
  void RunLoop();
  void HeartbeatLoop();
  void WriteLoop();
  // Puts a message on the queue and wakes the writer. REQUIRES: mutex_ held.
  void Enqueue(AgentMessage message, bool urgent);
  // Writes the queue (up to a window's worth) from the calling thread when
  // that needs no wait; false leaves the rest to the writer. REQUIRES:
  // `lock` holds mutex_ (released while writing, held again on return).
  bool SendQueuedNow(std::unique_lock<std::mutex>* lock);
  // Writes `batch` from the calling thread as the one writer, with mutex_
  // released, if the connection takes it without waiting; else queues it
  // first in line for the writer thread. Returns whether it went.
  // REQUIRES: `lock` holds mutex_, writing_ is false and wire_ is set.
  bool WriteHere(std::unique_lock<std::mutex>* lock, std::vector<AgentMessage> batch);
  // A message from the head after registration; on the wire's io thread.
  void OnHeadMessage(const HeadMessage& message);
  // The head's Delivered: forget what it covers.
  void Delivered(int64_t up_to_seq);
  // Sleeps *delay_ms, at most until `until` when given (0: no bound), and doubles it.
  void SleepBackoff(int* delay_ms, Micros until = 0);
  // Whether a failed first registration is tried again: given heads in
  // HA, while the leader wait lasts, a head not reached or not leading.
  bool WaitsForLeader(const Status& failed, Micros deadline) const;
  // The head's HeartbeatPath.
  void OnHeartbeatPath(bool datagrams_heard);

  Options options_;
  const WaitableClock* clock_;
  RegistrationFn registration_;
  UsageFn usage_;
  CommandFn on_command_;
  RegisteredFn on_registered_;
  std::shared_ptr<HeadDialer> dialer_;

  mutable std::mutex mutex_;  // guards the fields below (never held across a write or read)
  std::condition_variable wake_;       // the writer, Start, Flush, the reconnect backoff
  std::condition_variable beat_wake_;  // the heartbeat thread alone: not woken by every message sent
  HeadOutbox outbox_;
  bool writing_ = false;        // a write is under way (the writer's, or a sender's WriteHere): one at a time
  bool corked_ = false;         // Send queues without waking the writer (Cork)
  bool stream_broken_ = false;  // a write on wire_ failed: wait for the next stream
  HeadHeartbeatPath heartbeats_;  // this stream's: datagrams or the stream, and does the head still answer
  bool beat_now_ = false;         // the head stopped hearing the datagrams: beat on the stream at once
  std::shared_ptr<HeadConnection> wire_;  // this stream's, once open (Flush may hold it a moment)
  std::atomic<bool> connected_{false};
  std::atomic<bool> stopping_{false};
  bool first_done_ = false;
  Status first_status_;
  Registered first_registered_;

  std::thread reader_;
  std::thread heartbeat_;
  std::thread writer_;
};

}  // namespace clusterd
