// The node agent's end of its stream to the head's agent port
// (daemon/rpc/agent_wire_server.h), the real HeadConnection: a FrameChannel
// on an io thread of its own, behind blocking calls for HeadLink's threads
// (registration, the writer's waits), a non-blocking TrySend for its loop,
// and Deliver, which hands the head's messages over on the io thread itself.
#pragma once

#include <boost/asio/io_context.hpp>

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "agent.pb.h"
#include "common/net/frame_channel.h"
#include "common/status.h"
#include "common/net/tls.h"
#include "daemon/agent/head_connection.h"

namespace clusterd {

class HeadWire : public HeadConnection {
 public:
  // Connects to the agent port at host:port within timeout_ms and says
  // hello with the token. A refused token comes back from the first Read's
  // end (Finish), as any refusal of the head's does.
  static Result<std::unique_ptr<HeadWire>> Open(const std::string& host, int port, const std::string& token,
                                                const TlsConfig& tls, int timeout_ms);
  HeadWire(const HeadWire&) = delete;
  HeadWire& operator=(const HeadWire&) = delete;
  ~HeadWire() override;  // closes and joins its thread

  // Sends `message`; with more_follow it may wait for the next Write and
  // go with it (a burst of starts, logs and exits in one write). Blocks
  // while the head reads slowly (more than kWriteWindow bytes queued).
  // false: the stream has ended.
  bool Write(const AgentMessage& message, bool more_follow) override;
  // Sends `frames` (EncodeFrame's, one or more) now if that needs no wait:
  // false (and not sent) when frames are held back, the head is reading
  // slowly, or the stream ended.
  bool TrySend(std::string frames) override;
  // From now on every message from the head goes to `fn`, in order, on the
  // wire's io thread (no hop to a reader thread); Read is no longer used.
  void Deliver(std::function<void(const HeadMessage&)> fn) override;
  // Blocks until the stream has ended (Finish says how).
  void WaitEnded() override;
  // Blocks for the head's next message, up to timeout_ms (-1: no limit);
  // false once the stream has ended (Finish says how) or on timeout.
  bool Read(HeadMessage* message, int timeout_ms) override;
  // Waits up to timeout_ms until what was written has left for the head
  // (into the kernel's socket): false when it has not, or the stream ended.
  bool WaitWritten(int timeout_ms) override;
  // Ends the stream now: blocked Reads and Writes return false. Thread-safe.
  void Cancel() override;
  // How long ago the head's machine last acknowledged anything this end
  // sent (a head process stopped or starved still does), -1 once ended:
  // FrameChannel::MillisSincePeerAcked.
  int64_t MillisSinceHeadMachineAcked() const override { return channel_->MillisSincePeerAcked(); }
  // Ends it once what was written has left, and the head has read it and
  // closed its side (a few seconds at most): closing at once could reset the
  // connection and lose the last frames at the head. Reads return false then.
  void CloseAfterWrites() override;
  // After Read returned false: the head's reason (StreamEnd), else how the
  // connection ended. OK where the head ended it without one.
  Status Finish() override;

 private:
  HeadWire() = default;
  // Hands what the inbox holds to deliver_; on the io thread.
  void DeliverInbox();

  boost::asio::io_context io_;
  std::thread thread_;
  std::shared_ptr<FrameChannel> channel_;

  std::mutex mutex_;
  // Two, so that neither the reader nor the writer is woken for the other's news.
  std::condition_variable arrived_;  // a frame from the head, or the end
  std::condition_variable written_;  // bytes left for the head, or the end
  std::string held_;  // frames a Write with more_follow kept back
  std::deque<HeadMessage> inbox_;
  std::function<void(const HeadMessage&)> deliver_;  // set once, by Deliver
  bool ended_ = false;
  std::string why_;               // the transport's word, when it ended
  std::optional<Status> reason_;  // the head's StreamEnd
};

}  // namespace clusterd
