// Heartbeat datagrams: the codec, and the head's receiver over a real UDP
// socket on loopback (what it takes, what it drops, and when it tells a
// stream its datagrams are heard or have stopped).
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/net/heartbeat_datagram.h"
#include "common/net/net_address.h"
#include "common/session.h"
#include "daemon/agent/head_liveness.h"
#include "daemon/rpc/heartbeat_receiver.h"

using namespace clusterd;
using namespace std::chrono_literals;

namespace {

NodeUsage Usage(int running) {
  NodeUsage usage;
  usage.set_cpu_load(1.5);
  usage.set_memory_used_bytes(2e9);
  usage.set_running_ranks(running);
  return usage;
}

class RecordingListener : public HeartbeatReceiver::Listener {
 public:
  void OnHeartbeatDatagram(Micros, NodeUsage* usage) override {
    std::lock_guard<std::mutex> lock(mutex);
    running.push_back(usage->running_ranks());
  }
  void OnDatagramPath(bool heard) override {
    std::lock_guard<std::mutex> lock(mutex);
    paths.push_back(heard);
  }
  std::vector<int> Running() {
    std::lock_guard<std::mutex> lock(mutex);
    return running;
  }
  std::vector<bool> Paths() {
    std::lock_guard<std::mutex> lock(mutex);
    return paths;
  }
  std::mutex mutex;
  std::vector<int> running;  // running_ranks of each heartbeat taken, in order
  std::vector<bool> paths;
};

template <typename Predicate>
bool WaitUntil(Predicate done, std::chrono::milliseconds limit = 5s) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

// A head's receiver on a free loopback port (100 ms heartbeat periods), a
// stream registered with it, and an agent's UDP socket connected to it.
struct ReceiverOnLoopback {
  ReceiverOnLoopback() {
    auto started = HeartbeatReceiver::Start("127.0.0.1", 0, &clock, 100);
    REQUIRE(started.ok());
    receiver = std::move(*started);
    REQUIRE(receiver->port() > 0);
    offer = receiver->Register(listener);
    auto connected = ConnectUdp("127.0.0.1", receiver->port());
    REQUIRE(connected.ok());
    fd = *connected;
  }
  ~ReceiverOnLoopback() { close(fd); }
  void Send(const std::string& datagram) const {
    REQUIRE(send(fd, datagram.data(), datagram.size(), 0) == static_cast<ssize_t>(datagram.size()));
  }

  SystemClock clock;
  std::unique_ptr<HeartbeatReceiver> receiver;
  std::shared_ptr<RecordingListener> listener = std::make_shared<RecordingListener>();
  HeartbeatReceiver::Offer offer;
  int fd = -1;  // the agent's side
};

}  // namespace

TEST_CASE("a heartbeat datagram decodes only with its key and only whole and unchanged", "[heartbeat]") {
  const std::string key = NewToken(), other = NewToken();
  const std::string datagram = EncodeHeartbeat(42, key, 7, Usage(3));
  REQUIRE(!datagram.empty());
  REQUIRE(datagram.size() <= kMaxHeartbeatDatagram);

  uint64_t channel = 0;
  REQUIRE(PeekHeartbeatChannel(datagram.data(), datagram.size(), &channel));
  CHECK(channel == 42);
  int64_t seq = 0;
  NodeUsage usage;
  REQUIRE(DecodeHeartbeat(datagram.data(), datagram.size(), key, &seq, &usage));
  CHECK(seq == 7);
  CHECK(usage.running_ranks() == 3);
  CHECK(usage.cpu_load() == 1.5);

  NodeUsage untouched = Usage(99);
  int64_t untouched_seq = -1;
  CHECK_FALSE(DecodeHeartbeat(datagram.data(), datagram.size(), other, &untouched_seq, &untouched));
  for (size_t i = 0; i < datagram.size(); ++i) {  // any changed byte: the channel, the seq, the usage, the MAC
    std::string changed = datagram;
    changed[i] = static_cast<char>(changed[i] ^ 0x01);
    INFO("byte " << i);
    CHECK_FALSE(DecodeHeartbeat(changed.data(), changed.size(), key, &untouched_seq, &untouched));
  }
  CHECK_FALSE(DecodeHeartbeat(datagram.data(), datagram.size() - 1, key, &untouched_seq, &untouched));
  CHECK_FALSE(DecodeHeartbeat(datagram.data(), 10, key, &untouched_seq, &untouched));
  CHECK_FALSE(PeekHeartbeatChannel("GET / HTTP/1.1\r\n\r\n....................................", 56, &channel));
  // Nothing was filled in by a failure.
  CHECK(untouched_seq == -1);
  CHECK(untouched.running_ranks() == 99);
}

TEST_CASE("a heartbeat carries its flags and the head's answer decodes only for its channel and key",
          "[heartbeat]") {
  const std::string key = NewToken(), other = NewToken();
  int64_t seq = 0;
  NodeUsage usage;
  uint8_t flags = 0xff;
  const std::string plain = EncodeHeartbeat(42, key, 7, Usage(3));
  REQUIRE(DecodeHeartbeat(plain.data(), plain.size(), key, &seq, &usage, &flags));
  CHECK(flags == 0);
  const std::string asking = EncodeHeartbeat(42, key, 8, Usage(3), kAnswerMe);
  REQUIRE(DecodeHeartbeat(asking.data(), asking.size(), key, &seq, &usage, &flags));
  CHECK(flags == kAnswerMe);
  CHECK(seq == 8);
  // The flag is signed: set on a heartbeat that did not ask, it breaks the MAC.
  std::string forged = plain;
  forged[20] = static_cast<char>(kAnswerMe);
  CHECK_FALSE(DecodeHeartbeat(forged.data(), forged.size(), key, &seq, &usage, &flags));

  const std::string answer = EncodeHeartbeatAnswer(42, key, 8);
  REQUIRE(answer.size() == 52);
  int64_t answered = 0;
  REQUIRE(DecodeHeartbeatAnswer(answer.data(), answer.size(), 42, key, &answered));
  CHECK(answered == 8);
  answered = -1;
  CHECK_FALSE(DecodeHeartbeatAnswer(answer.data(), answer.size(), 43, key, &answered));
  CHECK_FALSE(DecodeHeartbeatAnswer(answer.data(), answer.size(), 42, other, &answered));
  CHECK_FALSE(DecodeHeartbeatAnswer(answer.data(), answer.size() - 1, 42, key, &answered));
  // A heartbeat is not an answer, nor the other way round.
  CHECK_FALSE(DecodeHeartbeatAnswer(asking.data(), asking.size(), 42, key, &answered));
  uint64_t channel = 0;
  CHECK_FALSE(PeekHeartbeatChannel(answer.data(), answer.size(), &channel));
  for (size_t i = 0; i < answer.size(); ++i) {
    std::string changed = answer;
    changed[i] = static_cast<char>(changed[i] ^ 0x01);
    CHECK_FALSE(DecodeHeartbeatAnswer(changed.data(), changed.size(), 42, key, &answered));
  }
  CHECK(answered == -1);
}

TEST_CASE("the head's receiver takes signed fresh datagrams, drops the rest and says when they stop",
          "[heartbeat]") {
  // 100 ms periods: silence is told after 200 ms, looked for every 50 ms;
  // the test sends every 20 ms while it means to be heard.
  ReceiverOnLoopback loopback;
  HeartbeatReceiver& head = *loopback.receiver;
  auto& listener = loopback.listener;
  const HeartbeatReceiver::Offer& offer = loopback.offer;
  auto stranger = std::make_shared<RecordingListener>();
  HeartbeatReceiver::Offer stranger_offer = head.Register(stranger);
  REQUIRE(offer.channel != stranger_offer.channel);
  REQUIRE(offer.key != stranger_offer.key);

  loopback.Send(EncodeHeartbeat(offer.channel, offer.key, 1, Usage(1)));
  REQUIRE(WaitUntil([&] { return listener->Running().size() == 1 && listener->Paths().size() == 1; }));
  CHECK(listener->Paths() == std::vector<bool>{true});

  // Dropped: an old seq, another channel's key, a channel no one has, garbage.
  loopback.Send(EncodeHeartbeat(offer.channel, offer.key, 1, Usage(2)));
  loopback.Send(EncodeHeartbeat(offer.channel, stranger_offer.key, 5, Usage(3)));
  loopback.Send(EncodeHeartbeat(999, offer.key, 6, Usage(4)));
  loopback.Send("not a heartbeat at all");
  loopback.Send(std::string(kMaxHeartbeatDatagram + 100, 'C'));
  // Then a good one, after all of those on the same socket: once it is
  // taken, so were they.
  loopback.Send(EncodeHeartbeat(offer.channel, offer.key, 3, Usage(5)));
  REQUIRE(WaitUntil([&] { return listener->Running().size() == 2; }));
  CHECK(listener->Running() == std::vector<int>{1, 5});
  CHECK(stranger->Running().empty());
  CHECK(head.accepted() == 2);
  CHECK(head.rejected() == 5);

  SECTION("while they keep coming nothing is said; once they stop, the stream is told, once") {
    for (int seq = 10; seq < 20; ++seq) {
      loopback.Send(EncodeHeartbeat(offer.channel, offer.key, seq, Usage(0)));
      std::this_thread::sleep_for(20ms);
    }
    CHECK(listener->Paths() == std::vector<bool>{true});
    REQUIRE(WaitUntil([&] { return listener->Paths().size() == 2; }));
    std::this_thread::sleep_for(500ms);
    CHECK(listener->Paths() == std::vector<bool>{true, false});
    // Heard again: told again.
    loopback.Send(EncodeHeartbeat(offer.channel, offer.key, 30, Usage(0)));
    REQUIRE(WaitUntil([&] { return listener->Paths().size() == 3; }));
    CHECK(listener->Paths() == std::vector<bool>{true, false, true});
    // A channel never heard is never told it stopped.
    CHECK(stranger->Paths().empty());
  }

  SECTION("an unregistered channel, or one whose stream is gone, counts nothing more") {
    head.Unregister(offer.channel);
    loopback.Send(EncodeHeartbeat(offer.channel, offer.key, 40, Usage(6)));
    stranger.reset();
    loopback.Send(EncodeHeartbeat(stranger_offer.channel, stranger_offer.key, 41, Usage(7)));
    REQUIRE(WaitUntil([&] { return head.accepted() + head.rejected() == 9; }));
    CHECK(head.rejected() == 6);
    CHECK(listener->Running() == std::vector<int>{1, 5});
  }
}

TEST_CASE("the head's receiver answers a heartbeat that asks and only that one, back to its sender",
          "[heartbeat]") {
  ReceiverOnLoopback loopback;
  HeartbeatReceiver& head = *loopback.receiver;
  const HeartbeatReceiver::Offer& offer = loopback.offer;
  // Every answer that has arrived, by seq, once the receiver has taken `taken` heartbeats.
  auto answers_after = [&](uint64_t taken) {
    REQUIRE(WaitUntil([&] { return head.accepted() + head.rejected() >= taken; }));
    std::this_thread::sleep_for(50ms);  // the answers of that batch are on their way
    std::vector<int64_t> seqs;
    char buffer[kMaxHeartbeatDatagram];
    ssize_t got;
    while ((got = recv(loopback.fd, buffer, sizeof buffer, MSG_DONTWAIT)) > 0) {
      int64_t seq = 0;
      REQUIRE(DecodeHeartbeatAnswer(buffer, static_cast<size_t>(got), offer.channel, offer.key, &seq));
      seqs.push_back(seq);
    }
    return seqs;
  };

  loopback.Send(EncodeHeartbeat(offer.channel, offer.key, 1, Usage(1)));
  loopback.Send(EncodeHeartbeat(offer.channel, offer.key, 2, Usage(1), kAnswerMe));
  loopback.Send(EncodeHeartbeat(offer.channel, offer.key, 3, Usage(1)));
  CHECK(answers_after(3) == std::vector<int64_t>{2});
  CHECK(head.answered() == 1);

  // Not answered: an old seq that asks, or one signed with another key.
  loopback.Send(EncodeHeartbeat(offer.channel, offer.key, 2, Usage(1), kAnswerMe));
  loopback.Send(EncodeHeartbeat(offer.channel, NewToken(), 9, Usage(1), kAnswerMe));
  loopback.Send(EncodeHeartbeat(offer.channel, offer.key, 4, Usage(1), kAnswerMe));
  CHECK(answers_after(6) == std::vector<int64_t>{4});
  CHECK(head.answered() == 2);
}

TEST_CASE("an agent asks its head for a sign of life after keepalive and gives up past the timeout",
          "[heartbeat]") {
  constexpr Micros kMs = 1000;
  HeadLiveness liveness(2000 * kMs, 2000 * kMs);
  Micros now = 1'000'000 * kMs;
  liveness.Heard(now);  // registered
  // Nothing asked while the head was heard within keepalive.
  CHECK(liveness.ShouldAsk(1, now + 500 * kMs) == HeadLiveness::Ask::kNo);
  CHECK(liveness.ShouldAsk(2, now + 1999 * kMs) == HeadLiveness::Ask::kNo);
  // A message on the stream counts as hearing it.
  liveness.Heard(now + 1000 * kMs);
  CHECK(liveness.ShouldAsk(3, now + 2500 * kMs) == HeadLiveness::Ask::kNo);
  // Keepalive since then: the first ask goes by datagram, later ones on the stream too.
  CHECK(liveness.ShouldAsk(4, now + 3000 * kMs) == HeadLiveness::Ask::kByDatagram);
  CHECK(liveness.ShouldAsk(5, now + 3500 * kMs) == HeadLiveness::Ask::kOnStreamToo);
  // An answer to an older heartbeat says nothing (a replay, or a late one).
  liveness.Answered(3, now + 3600 * kMs);
  CHECK(liveness.ShouldAsk(6, now + 4000 * kMs) == HeadLiveness::Ask::kOnStreamToo);
  CHECK_FALSE(liveness.GaveUp(now + 5000 * kMs));
  // The timeout is counted from the first ask, exclusive.
  CHECK(liveness.GaveUp(now + 5001 * kMs));
  CHECK(liveness.silent_for(now + 5001 * kMs) == 4001 * kMs);

  SECTION("an answer to the ask, or a later heartbeat, settles it") {
    liveness.Answered(5, now + 4100 * kMs);
    CHECK_FALSE(liveness.GaveUp(now + 9000 * kMs));
    CHECK(liveness.ShouldAsk(7, now + 6000 * kMs) == HeadLiveness::Ask::kNo);
    CHECK(liveness.ShouldAsk(8, now + 6100 * kMs) == HeadLiveness::Ask::kByDatagram);
  }
  SECTION("a new stream starts over") {
    liveness.Heard(now + 6000 * kMs);
    CHECK_FALSE(liveness.GaveUp(now + 6000 * kMs));
    CHECK(liveness.ShouldAsk(9, now + 7000 * kMs) == HeadLiveness::Ask::kNo);
  }
}

TEST_CASE("a receiver on the IPv4 wildcard hears and answers agents over IPv4 and IPv6 alike", "[heartbeat]") {
  SystemClock clock;
  auto started = HeartbeatReceiver::Start("0.0.0.0", 0, &clock, 100);
  REQUIRE(started.ok());
  HeartbeatReceiver& head = **started;
  auto listener = std::make_shared<RecordingListener>();
  HeartbeatReceiver::Offer offer = head.Register(listener);
  auto v4 = ConnectUdp("127.0.0.1", head.port());
  REQUIRE(v4.ok());
  auto v6 = ConnectUdp("::1", head.port());
  if (!v6.ok()) {
    close(*v4);
    WARN("no IPv6 loopback here: " << v6.status().message());
    return;
  }
  int64_t seq = 0;
  for (int fd : {*v4, *v6}) {
    ++seq;
    const std::string asking = EncodeHeartbeat(offer.channel, offer.key, seq, Usage(static_cast<int>(seq)), kAnswerMe);
    REQUIRE(send(fd, asking.data(), asking.size(), 0) == static_cast<ssize_t>(asking.size()));
    REQUIRE(WaitUntil([&] { return head.answered() == static_cast<uint64_t>(seq); }));
    char buffer[kMaxHeartbeatDatagram];
    int64_t answered = 0;
    REQUIRE(WaitUntil([&] {
      ssize_t got = recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
      return got > 0 && DecodeHeartbeatAnswer(buffer, static_cast<size_t>(got), offer.channel, offer.key, &answered);
    }));
    CHECK(answered == seq);
  }
  CHECK(listener->Running() == std::vector<int>{1, 2});
  close(*v4);
  close(*v6);
}
