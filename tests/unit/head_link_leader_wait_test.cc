// HeadLink's first registration given heads in HA (leader_wait_ms): a head
// that cannot be reached is dialed again on the reconnect backoff until one
// leads, said once; the wait is bounded, and its end names the heads; with
// no leader wait (one head, no HA) the first refusal is final. On a fake
// clock and a fake dialer (fake_head_connection.h), with no sleeps for time
// to pass.
#include <catch2/catch.hpp>

#include <atomic>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "daemon/agent/head_link.h"
#include "eventually.h"
#include "fake_head_connection.h"
#include "fake_waitable_clock.h"
#include "head_harness.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

constexpr Micros kMs = 1000;

// A HeadLink for node "n1" whose dialer finds no head until the test says.
struct WaitingRig {
  FakeWaitableClock clock;
  std::shared_ptr<FakeHeadDialer> dialer = std::make_shared<FakeHeadDialer>(&clock);
  std::mutex mutex;
  std::vector<std::string> waiting_words;  // under mutex
  std::unique_ptr<HeadLink> link;

  explicit WaitingRig(int leader_wait_ms) {
    dialer->SetUp(false);
    HeadLink::Options options;
    options.head_address = "fake:1,fake:2";
    options.token = "token";
    options.heartbeat_ms = 60'000;
    options.keepalive_ms = 60'000;
    options.keepalive_timeout_ms = 60'000;
    options.reconnect_initial_ms = 100;
    options.reconnect_max_ms = 400;
    options.leader_wait_ms = leader_wait_ms;
    options.on_waiting_for_leader = [this](const std::string& why) {
      std::lock_guard<std::mutex> lock(mutex);
      waiting_words.push_back(why);
    };
    options.clock = &clock;
    options.dialer = dialer;
    auto registration = [] {
      RegisterNode r;
      r.set_name("n1");
      return r;
    };
    link = std::make_unique<HeadLink>(options, registration, [] { return NodeUsage(); }, [](const HeadMessage&) {});
  }
  ~WaitingRig() { link->Stop(); }

  std::vector<std::string> words() {
    std::lock_guard<std::mutex> lock(mutex);
    return waiting_words;
  }
};

}  // namespace

TEST_CASE("given heads in HA, the first registration waits out refusals on the backoff until a head leads, "
          "saying so once",
          "[head_link][ha]") {
  QuietLogs quiet;
  WaitingRig rig(/*leader_wait_ms=*/60'000);
  const Micros start = rig.clock.NowMicros();
  auto started = std::async(std::launch::async, [&] { return rig.link->Start(10'000); });

  // Refused, then dialed again at +100, +300, +700, +1100 (the backoff's cap).
  const std::vector<Micros> waits = {100 * kMs, 200 * kMs, 400 * kMs, 400 * kMs};
  Micros due = start;
  REQUIRE(Eventually([&] { return rig.dialer->dial_times().size() == 1; }));
  for (size_t i = 0; i < waits.size(); ++i) {
    due += waits[i];
    INFO("dial " << i + 2);
    REQUIRE(Eventually([&] { return rig.clock.SomeoneWaitsUntil(due); }));
    CHECK(rig.dialer->dial_times().size() == i + 1);
    rig.clock.Advance(due - rig.clock.NowMicros());
    REQUIRE(Eventually([&] { return rig.dialer->dial_times().size() == i + 2; }));
  }
  CHECK(started.wait_for(std::chrono::milliseconds(0)) == std::future_status::timeout);
  const std::vector<std::string> words = rig.words();
  REQUIRE(words.size() == 1);
  CHECK_THAT(words[0], Catch::Contains("connection refused"));

  // A head leads: the next dial registers and Start succeeds.
  rig.dialer->SetUp(true);
  due += 400 * kMs;
  REQUIRE(Eventually([&] { return rig.clock.SomeoneWaitsUntil(due); }));
  rig.clock.Advance(due - rig.clock.NowMicros());
  REQUIRE(started.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
  Result<Registered> registered = started.get();
  INFO(registered.status().ToString());
  CHECK(registered.ok());
  CHECK(rig.link->connected());
  CHECK(rig.words().size() == 1);
}

TEST_CASE("given heads in HA, the wait for a leader ends after leader_wait_ms with an error naming the heads",
          "[head_link][ha]") {
  QuietLogs quiet;
  WaitingRig rig(/*leader_wait_ms=*/1'000);
  const Micros start = rig.clock.NowMicros();
  auto started = std::async(std::launch::async, [&] { return rig.link->Start(10'000); });
  // Dials at +0, +100, +300, +700, and a last one at the wait's end (+1000),
  // the backoff cut short to it.
  for (const Micros due : {start + 100 * kMs, start + 300 * kMs, start + 700 * kMs, start + 1000 * kMs}) {
    INFO("the dial due at +" << (due - start) / kMs << " ms");
    REQUIRE(Eventually([&] { return rig.clock.SomeoneWaitsUntil(due); }));
    rig.clock.Advance(due - rig.clock.NowMicros());
  }
  REQUIRE(started.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
  Result<Registered> registered = started.get();
  REQUIRE_FALSE(registered.ok());
  CHECK(registered.status().code() == Status::Code::kUnavailable);
  CHECK_THAT(registered.status().message(),
             Catch::StartsWith("no head of fake:1,fake:2 led within 1000 ms (ha_leader_wait_ms)") &&
                 Catch::Contains("connection refused"));
  const std::vector<Micros> dials = rig.dialer->dial_times();
  REQUIRE(dials.size() == 5);
  CHECK(dials.back() == start + 1000 * kMs);
  CHECK(rig.words().size() == 1);
}

TEST_CASE("with no leader wait (one head, no HA), the first refusal is final at once", "[head_link][ha]") {
  QuietLogs quiet;
  WaitingRig rig(/*leader_wait_ms=*/0);
  auto started = std::async(std::launch::async, [&] { return rig.link->Start(10'000); });
  REQUIRE(started.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
  Result<Registered> registered = started.get();
  REQUIRE_FALSE(registered.ok());
  CHECK_THAT(registered.status().message(), Catch::Contains("connection refused") && !Catch::Contains("led within"));
  CHECK(rig.dialer->dial_times().size() == 1);
  CHECK(rig.words().empty());
}
