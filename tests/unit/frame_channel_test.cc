// The framed TCP connection the agents' streams run on (common/net/frame_channel.h),
// on loopback: frames arrive whole and in order whatever the writes, a frame
// over the limit ends the channel before it is held, and the last frame
// before a close is read, not lost to a reset; a peer that takes what was
// sent acknowledges (the agent's test for a head that is stopped, not gone).
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "agent.pb.h"
#include "frame_test_util.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

// Frame i: a log chunk of a size that varies from 0 to ~70 KB, with bytes
// that say which frame and where.
AgentMessage Numbered(int i) {
  AgentMessage message;
  message.mutable_log()->set_rank(i);
  std::string data(static_cast<size_t>(i) * 7919 % 70001, '\0');
  for (size_t j = 0; j < data.size(); ++j) data[j] = static_cast<char>(i + j);
  message.mutable_log()->set_data(data);
  return message;
}

}  // namespace

TEST_CASE("frames sent from two threads in bursts arrive whole and in each sender's order", "[frames]") {
  StartedPair pair;
  Received& got = pair.at_server;
  std::shared_ptr<FrameChannel> client = pair.client;
  constexpr int kEach = 600;
  auto send = [&](int first) {
    for (int i = first; i < first + kEach; ++i) client->Send(EncodeFrame(Numbered(i)));
  };
  std::thread a(send, 0), b(send, 10000);
  a.join();
  b.join();
  REQUIRE(got.WaitFor([](Received& r) { return r.frames.size() == 2 * kEach; }));
  std::vector<int> from_a, from_b;
  for (const std::string& body : got.frames) {
    AgentMessage message;
    REQUIRE(message.ParseFromString(body));
    const int i = message.log().rank();
    REQUIRE(message.log().data() == Numbered(i).log().data());
    (i < 10000 ? from_a : from_b).push_back(i);
  }
  REQUIRE(from_a.size() == kEach);
  REQUIRE(from_b.size() == kEach);
  for (int i = 0; i < kEach; ++i) {
    REQUIRE(from_a[i] == i);
    REQUIRE(from_b[i] == 10000 + i);
  }
  REQUIRE(!got.closed);
  client->Close("done");
  REQUIRE(got.WaitFor([](Received& r) { return r.closed.has_value(); }));
  REQUIRE(*got.closed == "the peer closed the connection");
}

TEST_CASE("a frame over the reader's limit ends the channel before any of it is held", "[frames]") {
  StartedPair pair(/*server_limit=*/1024);
  Received& got = pair.at_server;
  AgentMessage small, large;
  small.mutable_log()->set_data(std::string(100, 'a'));
  large.mutable_log()->set_data(std::string(2000, 'b'));
  pair.client->Send(EncodeFrame(small));
  pair.client->Send(EncodeFrame(large));
  pair.client->Send(EncodeFrame(small));
  REQUIRE(got.WaitFor([](Received& r) { return r.closed.has_value(); }));
  REQUIRE(got.frames.size() == 1);
  REQUIRE(*got.closed == fmt::format("a frame of {} bytes, over the limit of 1024 bytes", large.ByteSizeLong()));
  REQUIRE(pair.server->closed());
}

TEST_CASE("the last frame before CloseAfterSends reaches a peer that was still sending", "[frames]") {
  StartedPair pair;
  Received& at_client = pair.at_client;
  std::shared_ptr<FrameChannel> client = pair.client, server = pair.server;
  // The client keeps sending while the server says its last word and
  // closes: unread bytes in the server's socket must not reset the
  // connection before the client has read that word.
  for (int i = 0; i < 200; ++i) client->Send(EncodeFrame(Numbered(i)));
  HeadMessage last;
  last.mutable_end()->set_message("the last word");
  server->Send(EncodeFrame(last));
  server->CloseAfterSends();
  server->Send(EncodeFrame(last));  // after the close: dropped
  REQUIRE(at_client.WaitFor([](Received& r) { return r.closed.has_value(); }));
  REQUIRE(at_client.frames.size() == 1);
  HeadMessage said;
  REQUIRE(said.ParseFromString(at_client.frames[0]));
  REQUIRE(said.end().message() == "the last word");
  REQUIRE(*at_client.closed == "the peer closed the connection");
}

TEST_CASE("a peer whose kernel takes what was sent has just acknowledged and a closed channel says nothing",
          "[frames]") {
  StartedPair pair;
  for (int i = 0; i < 50; ++i) pair.client->Send(EncodeFrame(Numbered(i)));
  REQUIRE(pair.at_server.WaitFor([](Received& r) { return r.frames.size() == 50; }));
  const int64_t acked = pair.client->MillisSincePeerAcked();
  REQUIRE(acked >= 0);
  REQUIRE(acked < 5000);  // an outer bound for a loaded machine
  pair.client->Close("done");  // on the io thread
  REQUIRE(pair.at_server.WaitFor([](Received& r) { return r.closed.has_value(); }));
  REQUIRE(pair.client->closed());
  REQUIRE(pair.client->MillisSincePeerAcked() == -1);
}

// A head stopped while its agents' ranks log fills its receive buffer; the
// retransmissions and window probes that follow must not be taken for a
// machine gone. Its kernel still answers the probes: the last
// acknowledgement stays recent.
TEST_CASE("a peer that stops reading goes on acknowledging as its kernel answers window probes", "[frames]") {
  int port = 0;
  const int listener = ListenOnLoopback(&port, 4096);
  Received got;  // outlives the io thread, whose handlers write to it until it is joined
  IoThread io;
  auto dialed = DialFrameChannel(&io.io, "127.0.0.1", port, TlsConfig{}, 5000);
  REQUIRE(dialed.ok());
  const int peer = accept(listener, nullptr, nullptr);  // never read from
  REQUIRE(peer >= 0);
  (*dialed)->Start(got.Handlers(), kMaxFrameBytes);
  AgentMessage big;
  big.mutable_log()->set_data(std::string(1 << 20, 'x'));
  for (int i = 0; i < 8; ++i) (*dialed)->Send(EncodeFrame(big));
  std::this_thread::sleep_for(std::chrono::seconds(4));
  const int64_t acked = (*dialed)->MillisSincePeerAcked();
  INFO("last acknowledged " << acked << " ms ago, 4 s after the peer's buffer filled");
  REQUIRE(acked >= 0);
  REQUIRE(acked < 3000);
  close(peer);
  close(listener);
}
