// `clusterd start` on the machines of a cluster with heads in HA, in any
// order: a head started with --ha and a node of its own (the default CPUs)
// starts, and its node registers once a head leads, even when its agent
// dials before any head does; a worker given every head and started before
// any of them waits for a leader (ha_leader_wait_ms), saying so, and joins
// once one leads, or fails naming the heads when none does in time; a
// worker given one head without HA still fails at once on a wrong address.
// On loopback: three real etcd members and a real S3 (radosgw), as
// ha_heads_test.cc.
#include <google/protobuf/util/json_util.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "ceph_fixture.h"
#include "etcd_members.h"
#include "etcd_test_client.h"
#include "harness.h"
#include "cluster.pb.h"
#include "test_skip.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

namespace {

constexpr char kToken[] = "ha-start-token-0123456789abcdef";

std::string TokenFile(const Cluster& cluster) {
  const std::string path = cluster.temp_dir() + "/cluster.token";
  std::ofstream(path) << kToken << "\n";
  REQUIRE(chmod(path.c_str(), 0600) == 0);
  return path;
}

// The flags of a head in HA on these etcd members and this bucket.
std::vector<std::string> HaHeadFlags(const EtcdMembers& etcd, const CephFixture& ceph, const std::string& prefix,
                                     const std::string& token_file, const std::string& name) {
  return {"--ha", etcd.url(prefix), "--store", "s3://ha-start/" + name, "--s3-endpoint", ceph.endpoint(),
          "--token-file", token_file, "--node-name", name, "--heartbeat-ms", "200", "--node-timeout-ms", "1500"};
}

// Whether `heads` (a clusterctl --address) lists the node `name` as ALIVE.
bool AliveOn(Cluster& cluster, const std::string& heads, const std::string& name) {
  RunResult status = cluster.Ctl({"--address", heads, "--token", kToken, "status", "--json"});
  if (status.exit_code != 0) return false;
  ClusterStatus parsed;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  if (!google::protobuf::util::JsonStringToMessage(status.out, &parsed, options).ok()) {
    UNSCOPED_INFO("clusterctl status --json printed what is not a status: " << status.out << status.err);
    return false;
  }
  for (const NodeInfo& node : parsed.nodes()) {
    if (node.name() == name && node.state() == ALIVE) return true;
  }
  return false;
}

// Holds <prefix>/leader for a head that is not there, as a leader whose
// machine died holds it until its lease expires: the heads stand by and
// send their callers to an address that refuses them.
class GhostLeader {
 public:
  GhostLeader(const EtcdMembers& etcd, const std::string& prefix, int dead_port)
      : client_(TestEtcdClient(etcd.client_addresses())) {
    auto lease = client_->LeaseGrant(60);
    REQUIRE(lease.ok());
    lease_ = lease->id;
    const std::string value =
        std::string(R"({"id":"ghost","address":"127.0.0.1:)") + std::to_string(dead_port) + R"("})";
    REQUIRE(client_->Put(prefix + "/leader", value, lease_).ok());
  }
  // The ghost's lease ends: a head may lead.
  void Vanish() { REQUIRE(client_->LeaseRevoke(lease_).ok()); }

 private:
  std::unique_ptr<EtcdClient> client_;
  int64_t lease_ = 0;
};

}  // namespace

TEST_CASE("HA start: a head with --ha and a node of its own starts, leads, and its node is ALIVE, also when its "
          "agent dials before any head leads",
          "[ha][etcd][ceph]") {
  REQUIRE_ETCD();
  REQUIRE_CEPH(ceph);
  REQUIRE(ceph->CreateBucket("ha-start"));
  UseCeph(*ceph);
  EtcdMembers etcd(3);
  REQUIRE(etcd.error() == "");  // it holds the members' last log lines when they failed to start

  SECTION("started alone: its agent dials while the head campaigns and loads its state") {
    Cluster a;
    RunResult started = a.StartHead(HaHeadFlags(etcd, *ceph, "/alone", TokenFile(a), "head-a"));
    INFO(started.out << started.err);
    REQUIRE(started.exit_code == 0);
    CHECK_THAT(started.out, Catch::Contains("this head leads now"));
    CHECK(WaitFor([&] { return AliveOn(a, a.address(), "head-a"); }, 10s, 100ms));
    a.Stop({"--force"});
  }

  SECTION("started while another holds the leader key: it waits, says so, and registers once it leads") {
    const std::string prefix = "/ghost";
    GhostLeader ghost(etcd, prefix, FreePort());
    Cluster a;
    const std::string token_file = TokenFile(a);
    RunResult started;
    // Its agent is sent on to the ghost, which refuses it, until the
    // ghost's lease ends and this head leads.
    std::thread start([&] { started = a.StartHead(HaHeadFlags(etcd, *ceph, prefix, token_file, "head-a")); });
    std::this_thread::sleep_for(3s);
    ghost.Vanish();
    start.join();
    INFO(started.out << started.err);
    REQUIRE(started.exit_code == 0);
    CHECK_THAT(started.err, Catch::Contains("clusterd start: waiting up to 60 s (ha_leader_wait_ms) for a leader "
                                            "among the heads electing in " + etcd.url(prefix)));
    CHECK_THAT(started.out, Catch::Contains("this head leads now"));
    CHECK(WaitFor([&] { return AliveOn(a, a.address(), "head-a"); }, 10s, 100ms));

    // A standby's own node is a node like any other: it registers with the leader.
    Cluster b;
    RunResult standby = b.StartHead(HaHeadFlags(etcd, *ceph, prefix, token_file, "head-b"));
    INFO(standby.out << standby.err);
    REQUIRE(standby.exit_code == 0);
    CHECK_THAT(standby.out, Catch::Contains("this head stands by"));
    CHECK(WaitFor([&] { return AliveOn(a, a.address(), "head-b"); }, 10s, 100ms));
    b.Stop({"--force"});
    a.Stop({"--force"});
  }
}

TEST_CASE("HA start: a worker given every head, started before any of them, waits for a leader and joins",
          "[ha][etcd][ceph]") {
  REQUIRE_ETCD();
  REQUIRE_CEPH(ceph);
  REQUIRE(ceph->CreateBucket("ha-start"));
  UseCeph(*ceph);
  EtcdMembers etcd(3);
  REQUIRE(etcd.error() == "");  // it holds the members' last log lines when they failed to start

  Cluster a, b, worker;
  const std::string token_file = TokenFile(worker);
  const std::string heads = a.address() + "," + b.address();
  RunResult joined;
  std::thread join([&] {
    joined = Run({CLUSTERD_BIN, "start", "--address", heads, "--temp-dir", worker.temp_dir(), "--node-name", "w1",
                  "--token-file", token_file, "--num-cpus", "1", "--num-gpus", "0", "--heartbeat-ms", "200"},
                 {}, 90s);
  });
  // Nothing listens at either address yet: every try is refused.
  std::this_thread::sleep_for(2s);
  auto head_flags = [&](const std::string& name) {
    std::vector<std::string> flags = HaHeadFlags(etcd, *ceph, "/boot", token_file, name);
    flags.insert(flags.end(), {"--num-cpus", "0", "--num-gpus", "0"});
    return flags;
  };
  RunResult started_b = b.StartHead(head_flags("head-b"));
  INFO(started_b.out << started_b.err);
  REQUIRE(started_b.exit_code == 0);
  RunResult started_a = a.StartHead(head_flags("head-a"));
  INFO(started_a.out << started_a.err);
  REQUIRE(started_a.exit_code == 0);
  join.join();
  INFO(joined.out << joined.err);
  REQUIRE(joined.exit_code == 0);
  CHECK_THAT(joined.err, Catch::Contains("clusterd start: waiting up to 60 s (ha_leader_wait_ms) for a leader among " +
                                         a.address() + ", " + b.address() + ": "));
  CHECK_THAT(joined.out, Catch::StartsWith("clusterd worker joined"));
  CHECK(WaitFor([&] { return AliveOn(worker, heads, "w1"); }, 10s, 100ms));

  // A wrong token is no reason to wait for a leader: the leader refuses it
  // and the start fails at once, saying so.
  Cluster stranger;
  const auto began = Steady::now();
  RunResult refused = Run({CLUSTERD_BIN, "start", "--address", heads, "--temp-dir", stranger.temp_dir(),
                           "--node-name", "w2", "--token", "not-the-cluster-token-0123456789", "--num-cpus", "1",
                           "--num-gpus", "0"},
                          {}, 90s);
  INFO(refused.out << refused.err);
  CHECK(refused.exit_code == 1);
  CHECK_THAT(refused.err, Catch::Contains("token") && !Catch::Contains("led within"));
  CHECK(MillisSince(began) < 20000);  // far below ha_leader_wait_ms (60 s); an outer bound for a loaded machine

  Run({CLUSTERD_BIN, "stop", "--force", "--temp-dir", worker.temp_dir()});
  a.Stop({"--force"});
  b.Stop({"--force"});
}

TEST_CASE("HA start: a worker whose heads never lead fails after ha_leader_wait_ms naming them, and a worker of one "
          "head without HA fails at once on a wrong address",
          "[ha]") {
  Cluster worker;
  const std::string token_file = TokenFile(worker);
  const std::string first = "127.0.0.1:" + std::to_string(FreePort());
  const std::string second = "127.0.0.1:" + std::to_string(FreePort());

  SECTION("every head given, none there: the wait is bounded and the error says what happened") {
    const auto began = Steady::now();
    RunResult joined = Run({CLUSTERD_BIN, "start", "--address", first + "," + second, "--temp-dir",
                            worker.temp_dir(), "--node-name", "w1", "--token-file", token_file, "--num-cpus", "1",
                            "--num-gpus", "0", "--ha-leader-wait-ms", "1500"});
    const int64_t took_ms = MillisSince(began);
    INFO(joined.out << joined.err);
    CHECK(joined.exit_code == 1);
    CHECK_THAT(joined.err, Catch::Contains("waiting up to 1.5 s (ha_leader_wait_ms) for a leader among " + first +
                                           ", " + second));
    CHECK_THAT(joined.err, Catch::Contains("no head of " + first + "," + second +
                                           " led within 1500 ms (ha_leader_wait_ms)"));
    CHECK(took_ms >= 1500);
    CHECK(took_ms < 20000);  // an outer bound for a loaded machine
  }

  SECTION("one head, a wrong address: a typo fails at once, without waiting for a leader") {
    const auto began = Steady::now();
    RunResult joined = Run({CLUSTERD_BIN, "start", "--address", first, "--temp-dir", worker.temp_dir(),
                            "--node-name", "w1", "--token-file", token_file, "--num-cpus", "1", "--num-gpus", "0"});
    const int64_t took_ms = MillisSince(began);
    INFO(joined.out << joined.err);
    CHECK(joined.exit_code == 1);
    CHECK_THAT(joined.err, Catch::Contains("cannot reach a clusterd head at " + first));
    CHECK_THAT(joined.err, !Catch::Contains("waiting"));
    // Far below ha_leader_wait_ms (60 s) and register_timeout_ms (10 s).
    CHECK(took_ms < 5000);
  }
}
