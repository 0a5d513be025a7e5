// HeadHeartbeatPath (daemon/agent/head_heartbeat_path.h): where a stream's
// heartbeats go, and when a silent head loses its stream.
#include <catch2/catch.hpp>

#include <memory>

#include "daemon/agent/head_heartbeat_path.h"

using namespace clusterd;

namespace {

constexpr Micros kMs = 1000;

Registered OfferingDatagrams(int port) {
  Registered ack;
  ack.set_heartbeat_udp_port(port);
  ack.set_heartbeat_channel(7);
  ack.set_heartbeat_key("k");
  return ack;
}

}  // namespace

TEST_CASE("heartbeats go as datagrams once the head hears them, and on the stream at once when it stops",
          "[head_heartbeat_path]") {
  REQUIRE(HeadHeartbeatPath::OpenDatagrams("127.0.0.1:6379", OfferingDatagrams(0)) == nullptr);
  // UDP: opening needs no listener.
  std::shared_ptr<HeartbeatSender> datagrams =
      HeadHeartbeatPath::OpenDatagrams("127.0.0.1:6379", OfferingDatagrams(9));
  REQUIRE(datagrams != nullptr);
  HeadHeartbeatPath path("127.0.0.1:6379", 1000, 2000);
  path.StreamRegistered(0);
  REQUIRE_FALSE(path.OnPath(false));  // no datagrams: nothing changes
  path.UseDatagrams(datagrams);
  REQUIRE(path.datagrams() == datagrams);
  REQUIRE_FALSE(path.CarriedBy(datagrams));  // not heard yet: the stream beats too
  REQUIRE_FALSE(path.OnPath(true));
  REQUIRE(path.CarriedBy(datagrams));
  REQUIRE_FALSE(path.CarriedBy(HeadHeartbeatPath::OpenDatagrams("127.0.0.1:6379", OfferingDatagrams(9))));
  REQUIRE(path.OnPath(false));  // no longer heard: beat on the stream now
  REQUIRE_FALSE(path.CarriedBy(datagrams));
  REQUIRE_FALSE(path.OnPath(false));  // said once
  REQUIRE_FALSE(path.OnPath(true));
  path.StreamEnded();
  REQUIRE(path.datagrams() == nullptr);
  REQUIRE_FALSE(path.CarriedBy(datagrams));
}

TEST_CASE("a head silent past keepalive and timeout loses its stream only where its machine acknowledges nothing",
          "[head_heartbeat_path]") {
  HeadHeartbeatPath path("127.0.0.1:6379", 1000, 2000);
  int machine_asked = 0;
  int64_t acked_ms = -1;
  auto machine = [&] {
    ++machine_asked;
    return acked_ms;
  };
  path.StreamRegistered(0);
  REQUIRE(path.ShouldAsk(1, 999 * kMs) == HeadLiveness::Ask::kNo);
  REQUIRE(path.ShouldAsk(2, 1000 * kMs) == HeadLiveness::Ask::kByDatagram);
  REQUIRE(path.StillThere(3000 * kMs, 0, machine));  // the timeout not yet past
  REQUIRE(machine_asked == 0);                       // only asked once the head gave no answer in time
  REQUIRE_FALSE(path.StillThere(3001 * kMs, 0, machine));  // nothing known of the machine: dropped
  acked_ms = 2100;  // before the head went silent (3001 ms ago) plus a second: gone as well
  REQUIRE_FALSE(path.StillThere(3001 * kMs, 0, machine));
  acked_ms = 100;  // the machine acknowledges: stopped or starved, kept
  REQUIRE(path.StillThere(3001 * kMs, 0, machine));
  REQUIRE(path.StillThere(4000 * kMs, 0, machine));
  REQUIRE(machine_asked == 4);
  // A datagram answer to the ask: heard again, no ask outstanding.
  REQUIRE(path.StillThere(4100 * kMs, 2, machine));
  REQUIRE(machine_asked == 4);
  REQUIRE(path.ShouldAsk(3, 4200 * kMs) == HeadLiveness::Ask::kNo);
  // A new stream's registration counts as an answer too.
  REQUIRE(path.ShouldAsk(4, 5100 * kMs) == HeadLiveness::Ask::kByDatagram);
  REQUIRE(path.ShouldAsk(5, 5600 * kMs) == HeadLiveness::Ask::kOnStreamToo);
  path.StreamRegistered(9000 * kMs);
  REQUIRE(path.StillThere(9000 * kMs, 0, machine));
  REQUIRE(path.ShouldAsk(6, 9500 * kMs) == HeadLiveness::Ask::kNo);
}
