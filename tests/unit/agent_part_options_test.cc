// The options each part of a node agent is built with, read alone: every
// config key and agent option lands on the part that uses it.
#include <catch2/catch.hpp>

#include "daemon/agent/agent_part_options.h"
#include "fake_waitable_clock.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

NodeAgentOptions Options() {
  NodeAgentOptions options;
  options.head_address = "10.0.0.1:6379";
  options.token = "secret";
  options.node_ip = "10.0.0.7";
  options.session_dir = "/run/s";
  options.socket_path = "/run/s/agent.sock";
  options.python_path = "/opt/py";
  options.package_dir = "/var/cache/packages";
  Config& c = options.config;
  c.heartbeat_ms = 111;
  c.reconnect_initial_ms = 222;
  c.reconnect_max_ms = 3333;
  c.connect_timeout_ms = 6666;
  c.keepalive_ms = 444;
  c.keepalive_timeout_ms = 555;
  c.log_tail_lines = 7;
  c.run_as = "runner";
  c.package_cache_mb = 3;
  c.report_slots_per_rank = 9;
  c.report_rate_per_s = 11;
  c.report_burst = 13;
  return options;
}

}  // namespace

TEST_CASE("the link to the head gets the head's address, token and the link's timings", "[agent_part_options]") {
  FakeWaitableClock clock;
  HeadLink::Options link = HeadLinkOptionsOf(Options(), &clock);
  CHECK(link.head_address == "10.0.0.1:6379");
  CHECK(link.token == "secret");
  CHECK(link.heartbeat_ms == 111);
  CHECK(link.reconnect_initial_ms == 222);
  CHECK(link.reconnect_max_ms == 3333);
  CHECK(link.connect_timeout_ms == 6666);
  CHECK(link.keepalive_ms == 444);
  CHECK(link.keepalive_timeout_ms == 555);
  CHECK(link.clock == &clock);
}

TEST_CASE("the rank runner, package cache and report server get their folders and limits", "[agent_part_options]") {
  RankRunner::Options runner = RankRunnerOptionsOf(Options());
  CHECK(runner.logs_dir == "/run/s/logs/jobs");
  CHECK(runner.ranks_dir == "/run/s/ranks");
  CHECK(runner.socket_path == "/run/s/agent.sock");
  CHECK(runner.python_path == "/opt/py");
  CHECK(runner.node_ip == "10.0.0.7");
  CHECK(runner.log_tail_lines == 7);
  CHECK(runner.run_as == "runner");

  PackageCache::Options cache = PackageCacheOptionsOf(Options());
  CHECK(cache.dir == "/var/cache/packages");
  CHECK(cache.capacity_bytes == 3 * (int64_t{1} << 20));

  ReportLimits limits = ReportLimitsOf(Options().config);
  CHECK(limits.slots_per_rank == 9);
  CHECK(limits.rate_per_s == 11);
  CHECK(limits.burst == 13);
}
