// Two heads in HA (clusterd start --head --ha etcd://...) on three real etcd
// members and a real S3 (radosgw): exactly one leads and the other
// redirects; a client and a worker given both heads follow whichever
// leads; the leader's SIGKILL hands leadership to the standby within the
// lease's TTL plus 1 s, knows the jobs the first leader ran (the state is
// in etcd), the worker registers with it and a job submitted afterwards runs; a leader cut off from etcd stops acknowledging and
// serves again once etcd is back. Along the way: `status --json` lists the
// heads, a packed job submitted with the standby first gets its package
// through the leader (clusterctl's store and the worker's), a submit
// started during the election waits for the new leader, and both leaders'
// job ids end with the one cluster id. And with etcd away, a leader whose
// journal fails goes on answering status at once (the journal's retry waits
// for etcd off the head's loop), and heals once etcd is back.
#include <grpcpp/grpcpp.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "ceph_fixture.h"
#include "cluster.grpc.pb.h"
#include "common/net/auth.h"
#include "common/net/leader_redirect.h"
#include "etcd_members.h"
#include "harness.h"
#include "http_get.h"
#include "job_json.h"
#include "test_skip.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

namespace {

// What one head answers to a GetStatus of its own.
struct HeadAnswer {
  grpc::StatusCode code = grpc::StatusCode::UNKNOWN;
  std::string message;
  bool standby = false;  // the redirect's metadata key was there
  std::string leader;    // the leader it named
};

HeadAnswer Ask(const std::string& address, const std::string& token) {
  auto stub = HeadService::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  AttachToken(&context, token);
  context.set_deadline(std::chrono::system_clock::now() + 2s);
  StatusRequest request;
  ClusterStatus reply;
  grpc::Status status = stub->GetStatus(&context, request, &reply);
  HeadAnswer answer;
  answer.code = status.error_code();
  answer.message = status.error_message();
  answer.standby = context.GetServerTrailingMetadata().count(kLeaderMetadataKey) > 0;
  answer.leader = LeaderRedirectOf(status, context);
  return answer;
}

std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

// "job-12-a1b2c3" -> "a1b2c3": the cluster's id.
std::string ClusterIdOf(const std::string& job_id) { return job_id.substr(job_id.rfind('-') + 1); }

}  // namespace

TEST_CASE("clusterd start --ha without an S3 store, or as a worker, is refused saying why", "[ha][bad_input]") {
  Cluster cluster;
  RunResult no_store = cluster.StartHead({"--ha", "etcd://127.0.0.1:2379/x"});
  CHECK(no_store.exit_code == 2);
  CHECK_THAT(FirstLine(no_store.err), Catch::StartsWith("clusterd start: --ha needs --store s3://BUCKET/PREFIX: "));
  RunResult local_store = cluster.StartHead({"--ha", "etcd://127.0.0.1:2379/x", "--store", "/some/dir"});
  CHECK(local_store.exit_code == 2);
  RunResult bad_url = cluster.StartHead({"--ha", "http://127.0.0.1:2379", "--store", "s3://bucket/p"});
  CHECK(bad_url.exit_code == 2);
  CHECK_THAT(FirstLine(bad_url.err), Catch::StartsWith("clusterd start: --ha: "));
  RunResult worker = Run({CLUSTERD_BIN, "start", "--address", "127.0.0.1:1", "--ha", "etcd://127.0.0.1:2379",
                          "--temp-dir", cluster.temp_dir(), "--token", "t"});
  CHECK(worker.exit_code == 2);
  CHECK_THAT(FirstLine(worker.err), Catch::Contains("--ha is the head's"));
  RunResult lone_cert = cluster.StartHead({"--ha-cert", "/x.pem"});
  CHECK(lone_cert.exit_code == 2);
  CHECK_THAT(FirstLine(lone_cert.err), Catch::Contains("go with --ha"));
}

TEST_CASE("HA heads: one leads, the standby redirects, clients and a worker follow the leader through a SIGKILL "
          "and an etcd outage",
          "[ha][etcd][ceph]") {
  std::string why;
  if (!EtcdMembers::Installed(&why)) {
    SkipTest(why);
    return;
  }
  REQUIRE_CEPH(ceph);
  REQUIRE(ceph->CreateBucket("ha-store"));
  UseCeph(*ceph);
  EtcdMembers etcd(3);
  REQUIRE(etcd.error() == "");  // it holds the members' last log lines when they failed to start

  Cluster a, b, worker;
  const std::string token_file = worker.temp_dir() + "/cluster.token";
  {
    std::ofstream(token_file) << "ha-test-token-0123456789abcdef\n";
    REQUIRE(chmod(token_file.c_str(), 0600) == 0);
  }
  const std::string token = "ha-test-token-0123456789abcdef";
  const int dashboard_a = FreePort(), dashboard_b = FreePort();
  auto head_flags = [&](const std::string& name) {
    return std::vector<std::string>{"--dashboard-port", std::to_string(name == "head-a" ? dashboard_a : dashboard_b),"--ha", etcd.url("/ha-test"), "--store", "s3://ha-store/cluster",
                                    "--s3-endpoint", ceph->endpoint(), "--token-file", token_file,
                                    "--num-cpus", "0", "--num-gpus", "0", "--node-name", name,
                                    "--heartbeat-ms", "200", "--node-timeout-ms", "1500"};
  };

  RunResult started_a = a.StartHead(head_flags("head-a"));
  INFO(started_a.out << started_a.err);
  REQUIRE(started_a.exit_code == 0);
  // The first head leads before the second starts: which one leads is known.
  REQUIRE(WaitFor([&] { return Ask(a.address(), token).code == grpc::StatusCode::OK; }, 5s, 50ms));
  RunResult started_b = b.StartHead(head_flags("head-b"));
  INFO(started_b.out << started_b.err);
  REQUIRE(started_b.exit_code == 0);
  CHECK_THAT(started_b.out, Catch::Contains("this head stands by"));

  // Exactly one leads; the other redirects to it once it has seen it lead.
  REQUIRE(WaitFor([&] { return !Ask(b.address(), token).leader.empty(); }, 3s, 20ms));
  HeadAnswer from_b = Ask(b.address(), token);
  CHECK(from_b.code == grpc::StatusCode::FAILED_PRECONDITION);
  CHECK(from_b.standby);
  CHECK(from_b.leader == a.address());
  CHECK(Ask(a.address(), token).code == grpc::StatusCode::OK);

  // The standby's dashboard sends the browser to the leader's, same path.
  const std::string redirected = HttpGet(dashboard_b, "/job?id=job-1", "", "", 5s);
  CHECK_THAT(redirected, Catch::StartsWith("HTTP/1.1 307 Temporary Redirect\r\n") &&
                             Catch::Contains("\r\nLocation: http://127.0.0.1:" + std::to_string(dashboard_a) +
                                             "/job?id=job-1\r\n"));
  // The leader's own dashboard answers itself (here: no token, refused).
  CHECK_THAT(HttpGet(dashboard_a, "/", "", "", 5s), Catch::StartsWith("HTTP/1.1 401"));

  // A client given both heads, in either order, reaches the leader.
  const std::string both = a.address() + "," + b.address();
  const std::string both_reversed = b.address() + "," + a.address();
  for (const std::string& heads : {both, both_reversed}) {
    RunResult status = a.Ctl({"--address", heads, "--token", token, "status"});
    INFO(heads << ": " << status.out << status.err);
    CHECK(status.exit_code == 0);
  }

  // clusterctl status names the heads, which leads and the standby, asked
  // of either.
  for (const std::string& heads : {a.address(), b.address()}) {
    RunResult status = a.Ctl({"--address", heads, "--token", token, "status"});
    INFO(status.out << status.err);
    CHECK_THAT(status.out, Catch::Contains("Heads (HA, leader: head-a):") &&
                               Catch::Contains(" head-a at " + a.address() + ": leader for ") &&
                               Catch::Contains(" head-b at " + b.address() + ": standby"));
  }

  // clusterctl status --json carries them too, asked of either head.
  for (const std::string& heads : {a.address(), b.address()}) {
    RunResult status = a.Ctl({"--address", heads, "--token", token, "status", "--json"});
    INFO(status.out << status.err);
    REQUIRE(status.exit_code == 0);
    const HeadsReply listed = ParseJson<ClusterStatus>(status).ha_heads();
    CHECK(listed.leader_id() == "head-a");
    CHECK(listed.leader_address() == a.address());
    CHECK(listed.answered_by() == "head-a");  // the call went to the leader
    REQUIRE(listed.heads_size() == 2);
    CHECK((listed.heads(0).id() == "head-a" && listed.heads(0).address() == a.address() && listed.heads(0).leading()));
    CHECK((listed.heads(1).id() == "head-b" && listed.heads(1).address() == b.address() && !listed.heads(1).leading()));
    CHECK(listed.leading_since_unix_ms() > 0);
  }

  // A worker given both heads, the standby first, registers with the leader.
  RunResult joined = Run({CLUSTERD_BIN, "start", "--address", both_reversed, "--temp-dir", worker.temp_dir(),
                          "--node-name", "w1", "--token-file", token_file, "--num-cpus", "1", "--num-gpus", "0",
                          "--heartbeat-ms", "200"});
  INFO(joined.out << joined.err);
  REQUIRE(joined.exit_code == 0);
  auto alive_on = [&](const std::string& head) {
    RunResult nodes = a.Ctl({"--address", head, "--token", token, "status", "--json"});
    if (nodes.exit_code != 0) return false;
    ClusterStatus status = ParseJson<ClusterStatus>(nodes);
    for (const NodeInfo& node : status.nodes()) {
      if (node.name() == "w1" && node.state() == ALIVE) return true;
    }
    return false;
  };
  REQUIRE(WaitFor([&] { return alive_on(a.address()); }, 10s, 100ms));

  // A job that ran under the first leader, whose record the next must know.
  const std::string job_file = worker.temp_dir() + "/echo.yaml";
  std::ofstream(job_file) << "name: echo\nentrypoint: echo ran\n";
  auto succeeded_on = [&](const std::string& heads, const std::string& id) {
    RunResult job = a.Ctl({"--address", heads, "--token", token, "job", id, "--json"});
    return job.exit_code == 0 && ParseJson<JobInfo>(job).state() == SUCCEEDED;
  };
  RunResult before = a.Ctl({"--address", both, "--token", token, "submit", job_file, "--json"}, 30s);
  INFO(before.out << before.err);
  REQUIRE(before.exit_code == 0);
  const std::string before_id = SubmittedJobId(before);
  REQUIRE(WaitFor([&] { return succeeded_on(a.address(), before_id); }, 30s, 200ms));

  // A job with a working_dir, submitted with the standby first: clusterctl
  // stores its package, and the worker fetches it, each asking where the
  // store is of the leader, not of the first head of its list.
  const std::string code_dir = worker.temp_dir() + "/code";
  REQUIRE(mkdir(code_dir.c_str(), 0755) == 0);
  std::ofstream(code_dir + "/hello.txt") << "hello from the package\n";
  const std::string packed_file = worker.temp_dir() + "/packed.yaml";
  std::ofstream(packed_file) << "name: packed\nworking_dir: " << code_dir << "\nentrypoint: cat hello.txt\n";
  RunResult packed = a.Ctl({"--address", both_reversed, "--token", token, "submit", packed_file, "--json"}, 60s);
  INFO(packed.out << packed.err);
  REQUIRE(packed.exit_code == 0);
  const std::string packed_id = SubmittedJobId(packed);
  CHECK(WaitFor([&] { return succeeded_on(a.address(), packed_id); }, 30s, 200ms));
  {
    RunResult logs = a.Ctl({"--address", both, "--token", token, "logs", packed_id});
    CHECK_THAT(logs.out, Catch::Contains("hello from the package"));
    RunResult job = a.Ctl({"--address", both, "--token", token, "job", packed_id, "--json"});
    INFO(job.out);
    CHECK(ParseJson<JobInfo>(job).state() == SUCCEEDED);
  }

  // A job whose rank runs through the failover, on the worker.
  const std::string flag = worker.temp_dir() + "/release";
  const std::string running_file = worker.temp_dir() + "/through.yaml";
  std::ofstream(running_file) << "name: through\nentrypoint: while [ ! -e " << flag
                              << " ]; do sleep 0.1; done; echo released\n";
  RunResult through = a.Ctl({"--address", both, "--token", token, "submit", running_file, "--json"}, 30s);
  INFO(through.out << through.err);
  REQUIRE(through.exit_code == 0);
  const std::string through_id = SubmittedJobId(through);
  REQUIRE(WaitFor(
      [&] {
        RunResult job = a.Ctl({"--address", a.address(), "--token", token, "job", through_id, "--json"});
        return job.exit_code == 0 && ParseJson<JobInfo>(job).state() == RUNNING;
      },
      30s, 100ms));

  // The leader's machine dies: the standby leads within the TTL (2 s) + 1 s.
  const int64_t killed_unix_ms = NowUnixMs();
  a.KillHead(SIGKILL);
  // A submit started while no head leads (the dead leader's lease has not
  // expired yet): clusterctl waits for the new leader, up to the call's
  // timeout, then submits there.
  RunResult during;
  std::thread during_election([&] {
    during = a.Ctl({"--address", both, "--token", token, "--timeout-ms", "10000", "submit", job_file, "--json"},
                   30s);
  });
  const bool none_led_yet = Ask(b.address(), token).code != grpc::StatusCode::OK;
  // Serving follows the election by the time the new leader takes to read
  // the cluster's state, which a loaded machine stretches: an outer bound
  // here, the figure in bench/ha.
  REQUIRE(WaitFor([&] { return Ask(b.address(), token).code == grpc::StatusCode::OK; }, 10s, 20ms));
  // When the election landed, by head-b's own log (one clock: same machine).
  const int64_t led_unix_ms = FirstLogLineUnixMs(b.DaemonLogs(), "leader election: head-b leads");
  REQUIRE(led_unix_ms > 0);
  const int64_t failover_ms = led_unix_ms - killed_unix_ms;
  CHECK(failover_ms <= 3000);
  during_election.join();
  CHECK(none_led_yet);  // the submit did start during the election
  INFO(during.out << during.err);
  REQUIRE(during.exit_code == 0);
  const std::string during_id = SubmittedJobId(during);
  // It read the cluster's state from etcd: the first leader's job is there.
  CHECK(succeeded_on(b.address(), before_id));
  // The worker finds the new leader and registers with it.
  CHECK(WaitFor([&] { return alive_on(b.address()); }, 10s, 100ms));

  // The new leader adopts the running rank: released, it ends the job in
  // its first attempt.
  std::ofstream(flag) << "go\n";
  CHECK(WaitFor([&] { return succeeded_on(b.address(), through_id); }, 20s, 200ms));
  RunResult through_job = a.Ctl({"--address", b.address(), "--token", token, "job", through_id, "--json"});
  CHECK(ParseJson<JobInfo>(through_job).attempts_size() == 1);

  // A job submitted through both addresses (the dead head first) runs.
  RunResult submitted = a.Ctl({"--address", both, "--token", token, "submit", job_file, "--json"}, 30s);
  INFO(submitted.out << submitted.err);
  REQUIRE(submitted.exit_code == 0);
  const std::string job_id = SubmittedJobId(submitted);
  CHECK(WaitFor([&] { return succeeded_on(both, job_id); }, 30s, 200ms));
  CHECK(WaitFor([&] { return succeeded_on(both, during_id); }, 30s, 200ms));
  // One cluster, one id: the ids the second leader minted end as the
  // first's did.
  CHECK(ClusterIdOf(before_id).size() == 6);
  CHECK(ClusterIdOf(job_id) == ClusterIdOf(before_id));
  CHECK(ClusterIdOf(during_id) == ClusterIdOf(before_id));

  // etcd's members all gone: the leader stops acknowledging within its
  // lease's TTL, and says so.
  const auto cut = Steady::now();
  for (int i = 0; i < 3; ++i) etcd.Kill(i);
  REQUIRE(WaitFor([&] { return Ask(b.address(), token).code != grpc::StatusCode::OK; }, 5s, 20ms));
  CHECK(MillisSince(cut) <= 2000);
  // Then it stands by, and says why it takes nothing.
  REQUIRE(WaitFor([&] { return Ask(b.address(), token).standby; }, 5s, 20ms));
  RunResult refused = a.Ctl({"--address", b.address(), "--token", token, "submit", job_file, "--json"}, 30s);
  CHECK(refused.exit_code != 0);
  CHECK_THAT(refused.err, Catch::Contains("serves nothing now") && Catch::Contains("stands by"));

  // etcd back: the head leads and serves again.
  for (int i = 0; i < 3; ++i) etcd.Restart(i);
  REQUIRE(etcd.WaitHealthy(10s));
  CHECK(WaitFor([&] { return Ask(b.address(), token).code == grpc::StatusCode::OK; }, 10s, 50ms));
  RunResult again = a.Ctl({"--address", both, "--token", token, "submit", job_file, "--json"}, 30s);
  INFO(again.out << again.err);
  CHECK(again.exit_code == 0);

  Run({CLUSTERD_BIN, "stop", "--force", "--temp-dir", worker.temp_dir()});
  b.Stop({"--force"});
}

TEST_CASE("HA heads: while etcd is away the leader's journal fails, and status goes on answering at once until it "
          "heals",
          "[ha][etcd][ceph]") {
  std::string why;
  if (!EtcdMembers::Installed(&why)) {
    SkipTest(why);
    return;
  }
  REQUIRE_CEPH(ceph);
  REQUIRE(ceph->CreateBucket("ha-away"));
  UseCeph(*ceph);
  EtcdMembers etcd(3);
  REQUIRE(etcd.error() == "");  // it holds the members' last log lines when they failed to start

  Cluster a;
  const std::string token = "ha-away-token-0123456789abcdef";
  const std::string token_file = a.temp_dir() + "/cluster.token";
  {
    std::ofstream(token_file) << token << "\n";
    REQUIRE(chmod(token_file.c_str(), 0600) == 0);
  }
  // A long lease, so that the leader goes on leading (and being asked)
  // for a while with etcd gone, rather than stepping down after 1.5 s.
  RunResult started = a.StartHead({"--ha", etcd.url("/ha-away"), "--store", "s3://ha-away/cluster", "--s3-endpoint",
                                   ceph->endpoint(), "--token-file", token_file, "--num-cpus", "0", "--num-gpus", "0",
                                   "--node-name", "head-a", "--ha-lease-ttl-ms", "20000"});
  INFO(started.out << started.err);
  REQUIRE(started.exit_code == 0);
  REQUIRE(WaitFor([&] { return Ask(a.address(), token).code == grpc::StatusCode::OK; }, 10s, 50ms));
  const std::string job_file = a.temp_dir() + "/echo.yaml";
  std::ofstream(job_file) << "name: echo\nentrypoint: echo ran\n";
  REQUIRE(a.Ctl({"--token", token, "submit", job_file, "--json"}).exit_code == 0);

  // etcd gone: a submit's sync fails, and the job journal fails.
  const auto cut = Steady::now();
  for (int i = 0; i < 3; ++i) etcd.Kill(i);
  RunResult refused = a.Ctl({"--token", token, "submit", job_file, "--json"});
  CHECK(refused.exit_code != 0);
  auto journal_of = [&](std::chrono::milliseconds* took) {
    auto stub = HeadService::NewStub(grpc::CreateChannel(a.address(), grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    AttachToken(&context, token);
    context.set_deadline(std::chrono::system_clock::now() + 5s);
    ClusterStatus reply;
    const auto asked = Steady::now();
    grpc::Status status = stub->GetStatus(&context, StatusRequest(), &reply);
    *took = std::chrono::duration_cast<std::chrono::milliseconds>(Steady::now() - asked);
    INFO(status.error_message());
    REQUIRE(status.ok());
    return reply.journal();
  };
  std::chrono::milliseconds took{0};
  REQUIRE(WaitFor([&] { return !journal_of(&took).ok(); }, 5s, 100ms));
  // The journal retries every journal_retry_ms (1 s), each retry waiting up
  // to ha_etcd_call_timeout_ms (1 s) for etcd: off the loop, the status is
  // answered at once all along; on it, about every other ask would wait.
  std::chrono::milliseconds slowest{0};
  JournalStatus failing;
  for (int i = 0; i < 25; ++i) {
    failing = journal_of(&took);
    slowest = std::max(slowest, took);
    std::this_thread::sleep_for(200ms);
  }
  WARN("the slowest status while etcd was away took " << slowest.count() << " ms");
  CHECK(slowest.count() < 500);  // an outer bound: a retry on the loop holds it about 1000 ms
  CHECK_FALSE(failing.ok());
  CHECK_THAT(failing.reason(), Catch::Contains("etcd"));
  CHECK(MillisSince(cut) < 18000);  // it was the leader all along (the lease: 20 s)

  // etcd back: the journal heals, and takes submits again.
  for (int i = 0; i < 3; ++i) etcd.Restart(i);
  REQUIRE(etcd.WaitHealthy(10s));
  CHECK(WaitFor([&] { return journal_of(&took).ok(); }, 15s, 200ms));
  RunResult again = a.Ctl({"--token", token, "submit", job_file, "--json"}, 30s);
  INFO(again.out << again.err);
  CHECK(again.exit_code == 0);
  a.Stop({"--force"});
}
