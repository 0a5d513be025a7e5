// A head restarted over its journal while jobs run: it adopts the ranks
// their agents report again, waits for none that had exited, keeps an
// attempt's failure, and takes logs only from the nodes that run the ranks.
#include <catch2/catch.hpp>

#include <memory>

#include "head_harness.h"
#include "temp_tree.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

// A second head over the first one's journal, with one agent registering again.
struct RestartedHead {
  FakeClock clock;
  LogStore logs{""};
  HeadCore head;
  std::shared_ptr<FakeAgentConnection> conn = std::make_shared<FakeAgentConnection>();

  explicit RestartedHead(Harness& before) : head(&clock, before.config, &before.store, &logs) {
    REQUIRE(head.Restore().ok());
  }
  void Register(const std::string& node, double cpus, const std::string& job_id, const std::vector<int>& ranks) {
    head.OnAgentMessage(conn, RegisterAgain(node, cpus, job_id, ranks));
  }
  void PastAdoptionDeadline() {  // 10 s and more, the node alive throughout
    AgentMessage beat;
    beat.mutable_heartbeat()->set_seq(1);
    for (int i = 0; i < 21; ++i) {
      clock.AdvanceMillis(500);
      head.OnAgentMessage(conn, beat);
      head.Tick();
    }
  }
  void Exit(const std::string& job_id, int rank) {  // attempt 0, exit 0
    AgentMessage exit;
    exit.mutable_rank_exited()->set_job_id(job_id);
    exit.mutable_rank_exited()->set_rank(rank);
    head.OnAgentMessage(conn, exit);
  }
};

}  // namespace

TEST_CASE("a restarted head adopts a running job whose ranks all come back, else restarts it", "[jobs][journal]") {
  Harness h;
  h.AddNode("a", 2);
  std::string id = h.Submit(2, 1, PACK, 1);
  h.AnswerPort("a", 1000);

  auto run_restart = [&](int ranks_back) {
    FakeClock clock2;
    LogStore logs("");
    HeadCore head2(&clock2, h.config, &h.store, &logs);
    REQUIRE(head2.Restore().ok());
    auto conn = std::make_shared<FakeAgentConnection>();
    std::vector<int> back;
    for (int rank = 0; rank < ranks_back; ++rank) back.push_back(rank);
    AgentMessage m = RegisterAgain("a", 2, id, back);
    head2.OnAgentMessage(conn, m);
    AgentMessage beat;
    beat.mutable_heartbeat()->set_seq(1);
    for (int i = 0; i < 21; ++i) {  // past the adoption deadline (10 s), node alive throughout
      clock2.AdvanceMillis(500);
      head2.OnAgentMessage(conn, beat);
      head2.Tick();
    }
    JobInfo job = *head2.jobs().Get(id);
    return std::make_pair(job, conn);
  };

  auto [adopted, conn1] = run_restart(2);
  REQUIRE(adopted.state() == RUNNING);
  REQUIRE(adopted.attempts_size() == 1);
  REQUIRE(adopted.attempts(0).ranks(1).pid() == 101);

  auto [lost, conn2] = run_restart(1);
  REQUIRE(lost.attempts(0).failure_reason() == "rank 1 did not come back after the head restarted");
  bool killed = false;
  for (const auto& sent : conn2->sent) killed = killed || sent.has_kill();
  REQUIRE(killed);  // the surviving rank is stopped before the retry
}

// A rank's exit is journalled as it comes, not only with its attempt's end:
// a head restarted between the two would otherwise wait for the rank, whose
// agent has told of its exit already, and fail the attempt.
TEST_CASE("a restarted head does not wait for a rank that exited before it restarted", "[jobs][journal]") {
  Harness h;
  h.AddNode("a", 2);
  std::string id = h.Submit(2, 1, PACK);
  h.AnswerPort("a", 1000);
  h.Exit("a", id, 0, 1, 0);
  REQUIRE(h.Job(id).state() == RUNNING);

  RestartedHead again(h);
  REQUIRE(again.head.jobs().Get(id)->attempts(0).ranks(1).exited());
  again.Register("a", 2, id, {0});
  again.PastAdoptionDeadline();
  REQUIRE(again.head.jobs().Get(id)->state() == RUNNING);
  again.Exit(id, 0);
  JobInfo job = *again.head.jobs().Get(id);
  REQUIRE(job.state() == SUCCEEDED);
  REQUIRE(job.attempts_size() == 1);
}

// Queued and restarting jobs must not flap to INFEASIBLE at every head
// restart, until their nodes register again.
TEST_CASE("a job placed right after a head restart waits for the nodes it knew and is infeasible only once they are gone",
          "[jobs][journal]") {
  FakeClock clock;
  MemoryJobStore jobs, nodes;
  LogStore logs("");
  Harness request_maker;  // for its job requests only
  Config config;
  config.node_timeout_ms = 2000;
  auto start_head = [&] {
    auto head = std::make_unique<HeadCore>(&clock, config, &jobs, &logs, nullptr, nullptr, &nodes);
    REQUIRE(head->Restore().ok());
    return head;
  };
  auto conn_a = std::make_shared<FakeAgentConnection>(), conn_b = std::make_shared<FakeAgentConnection>();
  {
    auto before = start_head();
    before->OnAgentMessage(conn_a, RegisterAgain("a", 1, "", {}));
    before->OnAgentMessage(conn_b, RegisterAgain("b", 1, "", {}));
    REQUIRE(before->nodes().Nodes().size() == 2);
  }
  auto again = start_head();
  // A 2-node gang, submitted before either agent is back, and after one is.
  auto id = again->jobs().Submit(request_maker.Request(2, 1, STRICT_SPREAD));
  REQUIRE(id.ok());
  CHECK(again->jobs().Get(*id)->state() == PENDING);
  again->OnAgentMessage(conn_a, RegisterAgain("a", 1, "", {}));
  again->Tick();
  CHECK(again->jobs().Get(*id)->state() == PENDING);
  // Node b never comes back: nothing could ever run it.
  AgentMessage beat;
  beat.mutable_heartbeat()->set_seq(1);
  for (int ms = 0; ms <= config.node_timeout_ms; ms += 250) {  // ticking, node a beating
    clock.AdvanceMillis(250);
    again->OnAgentMessage(conn_a, beat);
    again->Tick();
  }
  REQUIRE(again->nodes().Find("b")->state() == DEAD);
  const JobInfo job = *again->jobs().Get(*id);
  INFO(job.reason());
  CHECK(job.state() == INFEASIBLE);
  CHECK(job.reason().find("cannot fit even on an idle cluster") != std::string::npos);
}

// After the restart the other ranks' clean exits must not make an attempt
// that a rank has failed SUCCEED, losing its retry.
TEST_CASE("a restarted head still fails an attempt that a rank failed before it restarted and retries it",
          "[jobs][journal]") {
  Harness h;
  h.AddNode("a", 2);
  std::string id = h.Submit(2, 1, PACK, 1);
  h.AnswerPort("a", 1000);
  h.Exit("a", id, 0, 1, 3);
  REQUIRE(h.GotKill("a", 0));  // rank 0 is being stopped when the head dies

  RestartedHead again(h);
  again.Register("a", 2, id, {0});
  bool killed = false;
  for (const auto& sent : again.conn->sent) killed = killed || (sent.has_kill() && sent.kill().attempt() == 0);
  REQUIRE(killed);  // the rest stop as they would have
  again.Exit(id, 0);  // its SIGTERM handler ended it cleanly
  JobInfo job = *again.head.jobs().Get(id);
  REQUIRE(job.state() == RESTARTING);
  REQUIRE(job.attempts(0).failure_reason() == "rank 1 exited with code 3 on node a (attempt 0), before the head restarted");
}

TEST_CASE("a restarted head keeps what a rank printed before it exited while the head was away and only from its node",
          "[jobs][journal]") {
  Harness h;
  h.AddNode("a", 2);
  h.AddNode("b", 2);
  std::string id = h.Submit(2, 1, PACK, 1);
  h.AnswerPort("a", 1000);
  REQUIRE(h.Job(id).attempts(0).ranks(1).node_name() == "a");

  FakeClock clock2;
  TempTree dir;
  LogStore logs(dir.Path("logs"));
  HeadCore head2(&clock2, h.config, &h.store, &logs);
  REQUIRE(head2.Restore().ok());
  auto a = std::make_shared<FakeAgentConnection>(), b = std::make_shared<FakeAgentConnection>();
  head2.OnAgentMessage(a, RegisterAgain("a", 2, id, {0}));  // rank 1 exited meanwhile
  head2.OnAgentMessage(b, RegisterAgain("b", 2, "", {}));
  auto log = [&](const std::string& data) {
    AgentMessage m;
    m.mutable_log()->set_job_id(id);
    m.mutable_log()->set_attempt(0);
    m.mutable_log()->set_rank(1);
    m.mutable_log()->set_data(data);
    return m;
  };
  head2.OnAgentMessage(b, log("made up by another node\n"));
  REQUIRE(logs.Size(id, 1) == 0);
  head2.OnAgentMessage(a, log("printed while the head was away\n"));
  AgentMessage exit;
  exit.mutable_rank_exited()->set_job_id(id);
  exit.mutable_rank_exited()->set_rank(1);
  head2.OnAgentMessage(a, exit);
  int64_t end = 0;
  auto text = logs.Read(id, 1, 0, 1 << 20, &end);
  REQUIRE(text.ok());
  REQUIRE(text->find("printed while the head was away\n") != std::string::npos);
  REQUIRE(text->find("made up") == std::string::npos);
  REQUIRE(head2.jobs().Get(id)->state() == RUNNING);  // rank 0 still runs, adopted
}
