// The head's bound on connections that have not proven the token: the
// newest is always admitted, the oldest unproven one of its source (or, past
// the port's bound, of any source) goes, and proven ones are not counted.
#include <catch2/catch.hpp>

#include "daemon/rpc/connection_gate.h"

namespace clusterd {
namespace {

TEST_CASE("a source past its bound loses its oldest unproven connection", "[connection_gate]") {
  ConnectionGate gate(GateLimits{3, 100});
  std::vector<ConnectionGate::Id> evict;
  const auto a = gate.Admit("10.0.0.1", &evict);
  const auto b = gate.Admit("10.0.0.1", &evict);
  gate.Admit("10.0.0.1", &evict);
  REQUIRE(evict.empty());
  const auto d = gate.Admit("10.0.0.1", &evict);
  REQUIRE(evict == std::vector<ConnectionGate::Id>{a});
  CHECK(gate.unproven_from("10.0.0.1") == 3);
  // Another address is not touched by the first one's flood.
  evict.clear();
  const auto other = gate.Admit("10.0.0.2", &evict);
  CHECK(evict.empty());
  CHECK(gate.unproven() == 4);
  // A connection that proved the token leaves the count: the next newcomer
  // of its source takes its place without closing anything.
  gate.Proven(b);
  gate.Admit("10.0.0.1", &evict);
  CHECK(evict.empty());
  gate.Closed(d);
  gate.Closed(other);
  CHECK(gate.unproven_from("10.0.0.1") == 2);
  CHECK(gate.unproven_from("10.0.0.2") == 0);
  CHECK(gate.evicted() == 1);
}

TEST_CASE("a port past its bound loses the oldest unproven connection of any source", "[connection_gate]") {
  ConnectionGate gate(GateLimits{10, 4});
  std::vector<ConnectionGate::Id> evict;
  std::vector<ConnectionGate::Id> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(gate.Admit("10.0.0." + std::to_string(i), &evict));
  REQUIRE(evict.empty());
  gate.Admit("10.0.0.9", &evict);
  REQUIRE(evict == std::vector<ConnectionGate::Id>{ids[0]});
  CHECK(gate.unproven() == 4);
  CHECK(gate.unproven_from("10.0.0.0") == 0);
  // Forgetting an id twice, or one never seen, changes nothing.
  gate.Closed(ids[0]);
  gate.Proven(12345);
  CHECK(gate.unproven() == 4);
}

TEST_CASE("a flood of any length keeps at most the bound and admits the newest", "[connection_gate]") {
  ConnectionGate gate(GateLimits{64, 1024});
  std::vector<ConnectionGate::Id> evict;
  ConnectionGate::Id last = 0;
  for (int i = 0; i < 20000; ++i) last = gate.Admit("192.0.2.7", &evict);
  CHECK(gate.unproven() == 64);
  CHECK(evict.size() == 20000 - 64);
  CHECK(gate.evicted() == 20000 - 64);
  // The newest is among those kept: proving it takes it out of the count.
  gate.Proven(last);
  CHECK(gate.unproven() == 63);
}

}  // namespace
}  // namespace clusterd
