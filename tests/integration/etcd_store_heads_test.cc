// The head's state in etcd end to end: two real heads in HA (clusterd start
// --head --ha) on three etcd members and a real S3 (radosgw). Clients
// submit in a burst while the leader is SIGKILLed; every submit the head
// acknowledged is known to the head that leads next, read from etcd.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ceph_fixture.h"
#include "etcd_members.h"
#include "etcd_test_client.h"
#include "harness.h"
#include "job_json.h"
#include "test_skip.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;

TEST_CASE("etcd store, two heads: every submit acknowledged before and during the leader's SIGKILL is known to the "
          "next leader",
          "[etcd_store][etcd][ceph]") {
  REQUIRE_ETCD();
  REQUIRE_CEPH(ceph);
  REQUIRE(ceph->CreateBucket("store-heads"));
  UseCeph(*ceph);
  EtcdMembers etcd(3);
  REQUIRE(etcd.error() == "");  // it holds the members' last log lines when they failed to start

  Cluster a, b;
  const std::string token = "etcd-store-heads-token-0123456789";
  const std::string token_file = a.temp_dir() + "/cluster.token";
  {
    std::ofstream(token_file) << token << "\n";
    REQUIRE(chmod(token_file.c_str(), 0600) == 0);
  }
  // No CPUs anywhere: the jobs stay pending, their records are what counts.
  auto head_flags = [&](const std::string& name) {
    return std::vector<std::string>{"--ha", etcd.url("/store-heads"), "--store", "s3://store-heads/cluster",
                                    "--s3-endpoint", ceph->endpoint(), "--token-file", token_file,
                                    "--num-cpus", "0", "--num-gpus", "0", "--node-name", name};
  };
  RunResult started_a = a.StartHead(head_flags("head-a"));
  INFO(started_a.out << started_a.err);
  REQUIRE(started_a.exit_code == 0);
  REQUIRE(WaitFor([&] { return a.Ctl({"--address", a.address(), "--token", token, "status"}, 2s).exit_code == 0; },
                  10s, 100ms));
  RunResult started_b = b.StartHead(head_flags("head-b"));
  INFO(started_b.out << started_b.err);
  REQUIRE(started_b.exit_code == 0);

  const std::string both = a.address() + "," + b.address();
  const std::string job_file = a.temp_dir() + "/wait.yaml";
  std::ofstream(job_file) << "name: wait\nentrypoint: sleep 1\n";

  // Four clients submit one job after another until told to stop.
  std::mutex mutex;
  std::vector<std::string> acknowledged;
  int refused = 0;
  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&] {
      while (!stop.load()) {
        RunResult submitted = a.Ctl({"--address", both, "--token", token, "submit", job_file, "--json"}, 20s);
        std::lock_guard<std::mutex> lock(mutex);
        if (submitted.exit_code == 0) {
          acknowledged.push_back(SubmittedJobId(submitted));
        } else {
          ++refused;  // during the failover: not acknowledged, so owed nothing
        }
        if (submitted.exit_code != 0) std::this_thread::sleep_for(50ms);
      }
    });
  }
  auto acknowledged_count = [&] {
    std::lock_guard<std::mutex> lock(mutex);
    return acknowledged.size();
  };
  // The leader dies in the middle of the burst.
  const bool burst_began = WaitFor([&] { return acknowledged_count() >= 20; }, 60s, 20ms);
  a.KillHead(SIGKILL);
  const size_t before_kill = acknowledged_count();
  // The burst goes on through the failover, to the new leader.
  const bool burst_resumed = WaitFor([&] { return acknowledged_count() >= before_kill + 20; }, 60s, 50ms);
  stop = true;
  for (auto& client : clients) client.join();
  REQUIRE(burst_began);
  CHECK(burst_resumed);
  INFO(acknowledged.size() << " submits acknowledged, " << refused << " refused; " << before_kill
                           << " before the kill");

  // The next leader knows every acknowledged job (all of them on one page:
  // far fewer than a page holds).
  RunResult listed = b.Ctl({"--address", b.address(), "--token", token, "jobs", "--json"}, 30s);
  INFO(listed.out << listed.err);
  REQUIRE(listed.exit_code == 0);
  std::vector<std::string> missing;
  for (const std::string& id : acknowledged) {
    if (listed.out.find("\"" + id + "\"") == std::string::npos) missing.push_back(id);
  }
  std::string missing_list;
  for (const std::string& id : missing) missing_list += id + " ";
  INFO("missing: " << missing_list);
  CHECK(missing.empty());
  b.Stop({"--force"});
}
