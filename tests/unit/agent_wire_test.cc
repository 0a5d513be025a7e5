// The head's agent port (daemon/rpc/agent_wire_server.h) against strangers:
// a wrong or missing token gets one frame that says why and registers
// nothing; a huge frame header or silence ends the connection; and agents
// are served as before all the while. And the agent's side: what it wrote
// counts as sent only once it has left its process.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include <catch2/catch.hpp>

#include "agent_head_server.h"
#include "daemon/agent/head_wire.h"
#include "frame_test_util.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

AgentMessage Registration(const std::string& name) {
  AgentMessage message;
  message.mutable_register_()->set_name(name);
  message.mutable_register_()->set_name_given(true);
  message.mutable_register_()->set_address("127.0.0.1");
  (*message.mutable_register_()->mutable_total()->mutable_amounts())["CPU"] = 1;
  return message;
}

size_t NodeCount(AgentHeadServer& head) {
  return static_cast<size_t>(head.loop.Call<ClusterStatus>([&] { return head.core.GetStatus(); }).nodes_size());
}

// How the head ended a stream that sent `frames` (each already a frame).
std::string EndOf(AgentHeadServer& head, const std::string& frames, std::vector<std::string>* said = nullptr) {
  Received got;  // outlives the io thread, which calls into it
  IoThread io;
  auto channel = DialFrameChannel(&io.io, "127.0.0.1", head.wire.port(), TlsConfig{}, 5000);
  REQUIRE(channel.ok());
  (*channel)->Start(got.Handlers(), kMaxFrameBytes);
  (*channel)->Send(frames);
  REQUIRE(got.WaitFor([](Received& r) { return r.closed.has_value(); }));
  if (said) {
    for (const std::string& body : got.frames) {
      HeadMessage message;
      REQUIRE(message.ParseFromString(body));
      said->push_back(message.end().message());
    }
  }
  return *got.closed;
}

}  // namespace

TEST_CASE("the agent port refuses a wrong or missing token in one last frame that says why and registers nothing",
          "[agent_wire]") {
  QuietLogs quiet;
  AgentHeadServer head(0);
  AgentMessage wrong;
  wrong.mutable_hello()->set_token("not-the-token");
  std::vector<std::string> said;
  REQUIRE(EndOf(head, EncodeFrame(wrong) + EncodeFrame(Registration("intruder")), &said) ==
          "the peer closed the connection");
  REQUIRE(said == std::vector<std::string>{"wrong cluster token (see the token file in the head's session folder)"});

  said.clear();
  EndOf(head, EncodeFrame(Registration("intruder")), &said);
  REQUIRE(said == std::vector<std::string>{"missing cluster token (the first frame must be the agent's hello)"});

  said.clear();
  EndOf(head, std::string("\x00\x00\x00\x05hello", 9), &said);
  REQUIRE(said == std::vector<std::string>{"its first frame is not a clusterd agent's hello"});
  REQUIRE(NodeCount(head) == 0);

  // The agent's own link, with a wrong token, hears the same.
  auto wire = HeadWire::Open("127.0.0.1", head.wire.port(), "not-the-token", TlsConfig{}, 5000);
  REQUIRE(wire.ok());
  // The head may have read the hello, said why and closed before this
  // write (a fresh clone's CI run, loaded): then the write fails, and what
  // the head said is still there to read.
  (*wire)->Write(Registration("intruder"), false);
  HeadMessage message;
  REQUIRE(!(*wire)->Read(&message, 20000));
  Status ended = (*wire)->Finish();
  REQUIRE(ended.code() == Status::Code::kUnauthenticated);
  REQUIRE(ended.message() == "wrong cluster token (see the token file in the head's session folder)");
  REQUIRE(NodeCount(head) == 0);
}

TEST_CASE("the agent port ends a connection that claims a huge frame or says nothing and serves agents meanwhile",
          "[agent_wire]") {
  QuietLogs quiet;
  AgentHeadServer head(0, /*hello_deadline_ms=*/300);
  // Before the hello a stranger gets no more than kMaxHelloBytes: the head
  // closes without a word (EndOf waits for the end).
  std::vector<std::string> said;
  EndOf(head, std::string("\xff\xff\xff\xff", 4), &said);
  std::string just_over(4, '\0');
  just_over[2] = static_cast<char>((kMaxHelloBytes + 1) >> 8);
  just_over[3] = static_cast<char>((kMaxHelloBytes + 1) & 0xff);
  EndOf(head, just_over + std::string(kMaxHelloBytes + 1, 'x'), &said);
  // After it, an agent gets kMaxFrameBytes, and no more.
  AgentMessage hello;
  hello.mutable_hello()->set_token(kToken);
  EndOf(head, EncodeFrame(hello) + std::string("\x00\x40\x00\x01", 4), &said);  // 4 MiB + 1
  REQUIRE(said.empty());

  // One that connects and says nothing is closed at the hello deadline.
  Received got;  // outlives the io thread, which calls into it
  IoThread io;
  auto silent = DialFrameChannel(&io.io, "127.0.0.1", head.wire.port(), TlsConfig{}, 5000);
  REQUIRE(silent.ok());
  const auto start = std::chrono::steady_clock::now();
  (*silent)->Start(got.Handlers(), kMaxFrameBytes);
  REQUIRE(got.WaitFor([](Received& r) { return r.closed.has_value(); }));
  REQUIRE(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(250));

  // The first head still registers an agent.
  std::atomic<int> registrations{0};
  std::unique_ptr<HeadLink> link = QuickLink(head.port, &registrations);
  REQUIRE(link->Start(10'000).ok());
  REQUIRE(head.StateOf("n1") == ALIVE);
  link->Stop();
}

TEST_CASE("an agent's written frames count as sent only once they have left for the head", "[agent_wire]") {
  // A head that reads nothing, with a small receive window: the frame
  // waits in the agent's process, which Flush before a stop must see.
  int port = 0;
  int listener = ListenOnLoopback(&port, /*rcvbuf=*/4096);
  auto wire = HeadWire::Open("127.0.0.1", port, kToken, TlsConfig{}, 5000);
  REQUIRE(wire.ok());
  int head = accept(listener, nullptr, nullptr);
  REQUIRE(head >= 0);
  // 4 MB: more than the kernel takes, so Write blocks until the head reads.
  constexpr size_t kBytes = 4 << 20;
  AgentMessage log;
  log.mutable_log()->set_data(std::string(kBytes - 64, 'x'));
  std::atomic<bool> wrote{false};
  std::thread writer([&] { wrote = (*wire)->Write(log, false); });
  REQUIRE(Eventually([&] { return !(*wire)->WaitWritten(0); }));  // the writer has handed it over
  REQUIRE(!(*wire)->WaitWritten(300));  // and it has not left: the head reads nothing
  REQUIRE(!wrote);
  // The head reads it all; now it has left.
  std::thread reader([head] {
    char buffer[65536];
    size_t total = 0;
    while (total < kBytes - 64) {
      ssize_t n = read(head, buffer, sizeof buffer);
      if (n <= 0) break;
      total += static_cast<size_t>(n);
    }
  });
  REQUIRE((*wire)->WaitWritten(20000));
  writer.join();
  REQUIRE(wrote);
  reader.join();
  (*wire)->Cancel();
  close(head);
  close(listener);
}
