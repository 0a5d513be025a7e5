// The seam between HeadLink and the network: one stream to the head
// (HeadConnection) and what opens one (HeadDialer). The real ones are
// HeadWire over a FrameChannel and HeadWireDialer (Locate, then the agent
// port); unit tests give HeadLink a fake (tests/unit/fake_head_connection.h)
// to drive registration, reconnection and a lost head without sockets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "agent.pb.h"
#include "common/status.h"

namespace clusterd {

// One stream to the head's agent port, hello already said. Thread-safe.
class HeadConnection {
 public:
  // Bytes queued toward the head past which Write waits and TrySend refuses.
  static constexpr size_t kWriteWindow = 256 << 10;

  virtual ~HeadConnection() = default;

  // Sends `message`; with more_follow it may wait for the next Write and
  // go with it (a burst of starts, logs and exits in one write). Blocks
  // while the head reads slowly. false: the stream has ended.
  virtual bool Write(const AgentMessage& message, bool more_follow) = 0;
  // Sends `frames` (EncodeFrame's, one or more) now if that needs no wait:
  // false (and not sent) when frames are held back, the head is reading
  // slowly, or the stream ended.
  virtual bool TrySend(std::string frames) = 0;
  // Blocks for the head's next message, up to timeout_ms (-1: no limit);
  // false once the stream has ended (Finish says how) or on timeout.
  virtual bool Read(HeadMessage* message, int timeout_ms) = 0;
  // From now on every message from the head goes to `fn`, in order, on the
  // connection's own thread; Read is no longer used.
  virtual void Deliver(std::function<void(const HeadMessage&)> fn) = 0;
  // Blocks until the stream has ended (Finish says how).
  virtual void WaitEnded() = 0;
  // Waits up to timeout_ms until what was written has left for the head:
  // false when it has not, or the stream ended.
  virtual bool WaitWritten(int timeout_ms) = 0;
  // Ends the stream now: blocked Reads and Writes return false.
  virtual void Cancel() = 0;
  // Ends it once what was written has left and the head has read it.
  virtual void CloseAfterWrites() = 0;
  // How long ago the head's machine last acknowledged anything this end
  // sent (a head process stopped or starved still does), -1 once ended.
  virtual int64_t MillisSinceHeadMachineAcked() const = 0;
  // After the stream ended: the head's reason, else how the connection
  // ended. OK where the head ended it without one.
  virtual Status Finish() = 0;
};

// Opens streams to one head, one at a time. Thread-safe.
class HeadDialer {
 public:
  virtual ~HeadDialer() = default;
  // Finds the head and opens a stream to it, hello said; blocks until it
  // is open or has failed (a clear Unavailable names what was not reached).
  virtual Result<std::unique_ptr<HeadConnection>> Dial() = 0;
  // Ends a Dial under way, and every later one, at once (the link stops).
  virtual void Cancel() = 0;
  // The head the last stream was opened to, where a dialer chooses among
  // several ("": the one it was made for).
  virtual std::string address() const { return ""; }
};

}  // namespace clusterd
