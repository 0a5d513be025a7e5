// The job state machine driven through HeadCore with fake agents and a fake
// clock: placement, environment, restarts, node death, stop, infeasible,
// FIFO, timeouts and the journal.
#include <catch2/catch.hpp>

#include <memory>

#include "daemon/head/job_replay.h"
#include "head_harness.h"
#include "temp_tree.h"

using namespace clusterd;
using namespace clusterd::testing;


TEST_CASE("a gang on one node is launched at once and its node picks MASTER_PORT, journaled when told",
          "[jobs]") {
  Harness h;
  h.AddNode("a", 4);
  h.AddNode("b", 4);
  std::string id = h.Submit(3, 1, PACK);
  REQUIRE(h.Job(id).state() == RUNNING);
  auto launches = h.Launches("a");
  REQUIRE(launches.size() == 1);  // no ReservePort round trip first
  REQUIRE(launches[0].pick_master_port());
  for (const auto& sent : h.agents["a"]->sent) REQUIRE_FALSE(sent.has_reserve_port());
  REQUIRE(h.Job(id).attempts(0).master_port() == 0);
  AgentMessage started;
  started.mutable_rank_started()->set_job_id(id);
  started.mutable_rank_started()->set_attempt(0);
  started.mutable_rank_started()->set_rank(0);
  started.mutable_rank_started()->set_pid(4242);
  started.mutable_rank_started()->set_master_port(41000);
  h.From("a", started);
  REQUIRE(h.Job(id).attempts(0).master_port() == 41000);
  // A restarted head reads it back from the journal.
  auto latest = LatestJobs(h.store.entries());
  REQUIRE(latest.count(id) == 1);
  REQUIRE(latest[id].attempts(0).master_port() == 41000);

  // A gang across nodes still asks rank 0's node first, and no node picks.
  h.Submit(2, 4, SPREAD);
  REQUIRE(h.Launches("b").empty());
  h.AnswerPort("b", 29500);
  for (const auto& launch : h.Launches("b")) REQUIRE_FALSE(launch.pick_master_port());
}

TEST_CASE("a SPREAD gang is placed contiguously per node with the torchrun environment", "[jobs]") {
  Harness h;
  h.AddNode("a", 2, 2);
  h.AddNode("b", 2, 2);
  std::string id = h.Submit(3, 1, SPREAD, 0, 1);
  REQUIRE(h.Job(id).state() == RUNNING);
  REQUIRE(h.Launches("a").empty());  // nothing launches before MASTER_PORT is known

  h.AnswerPort("a", 29500);
  auto a = h.Launches("a");
  auto b = h.Launches("b");
  REQUIRE(a.size() == 1);
  REQUIRE(b.size() == 1);
  REQUIRE(a[0].ranks_size() == 2);  // round-robin 2 + 1, numbered per node
  REQUIRE(b[0].ranks_size() == 1);
  auto r0 = EnvOf(a[0], 0), r1 = EnvOf(a[0], 1), r2 = EnvOf(b[0], 0);
  REQUIRE(r0["RANK"] == "0");
  REQUIRE(r1["RANK"] == "1");
  REQUIRE(r2["RANK"] == "2");
  REQUIRE(r1["LOCAL_RANK"] == "1");
  REQUIRE(r1["LOCAL_WORLD_SIZE"] == "2");
  REQUIRE(r2["LOCAL_RANK"] == "0");
  REQUIRE(r2["LOCAL_WORLD_SIZE"] == "1");
  REQUIRE(r2["NODE_RANK"] == "1");
  for (auto* env : {&r0, &r1, &r2}) {
    REQUIRE((*env)["WORLD_SIZE"] == "3");
    REQUIRE((*env)["MASTER_ADDR"] == "10.0.0.1");
    REQUIRE((*env)["MASTER_PORT"] == "29500");
    REQUIRE((*env)["CLUSTER_JOB_ID"] == id);
    REQUIRE((*env)["CLUSTER_ATTEMPT"] == "0");
    REQUIRE((*env)["FOO"] == "bar");
  }
  REQUIRE(r0["CUDA_VISIBLE_DEVICES"] == "0");
  REQUIRE(r1["CUDA_VISIBLE_DEVICES"] == "1");
  REQUIRE(r2["CUDA_VISIBLE_DEVICES"] == "0");
  REQUIRE(r0["CLUSTER_CHECKPOINT_DIR"] == "/work/checkpoints/" + id);

  // Resources are held while it runs and come back when it ends.
  REQUIRE(Amount(h.head->GetStatus().used(), kCpu) == 3);
  for (int rank = 0; rank < 2; ++rank) h.Exit("a", id, 0, rank, 0);
  REQUIRE(h.Job(id).state() == RUNNING);
  h.Exit("b", id, 0, 2, 0);
  REQUIRE(h.Job(id).state() == SUCCEEDED);
  REQUIRE(Amount(h.head->GetStatus().used(), kCpu) == 0);
}

TEST_CASE("a failed rank restarts the gang while attempts last, then the job FAILS with the reason", "[jobs]") {
  Harness h;
  h.AddNode("a", 4);
  std::string id = h.Submit(4, 1, PACK, /*max_failures=*/1);
  h.AnswerPort("a", 1000);
  h.Exit("a", id, 0, 2, 1);
  REQUIRE(h.GotKill("a", 0));  // the rest of the gang is stopped
  REQUIRE(h.Job(id).state() == RUNNING);  // until every rank is down
  for (int rank : {0, 1, 3}) h.Exit("a", id, 0, rank, 0, 15);
  JobInfo job = h.Job(id);
  REQUIRE(job.state() == RESTARTING);  // waits out the first restart delay
  REQUIRE(job.reason() ==
          "retrying in 1s after attempt 0 failed: rank 2 exited with code 1 on node a (attempt 0); last log lines:\nboom");
  h.Advance(1000);
  job = h.Job(id);
  REQUIRE(job.state() == RUNNING);  // attempt 1
  REQUIRE(job.attempts_size() == 2);
  REQUIRE(job.attempts(0).failure_reason() ==
          "rank 2 exited with code 1 on node a (attempt 0); last log lines:\nboom");

  h.AnswerPort("a", 1001);
  auto launches = h.Launches("a");
  REQUIRE(EnvOf(launches.back(), 0)["CLUSTER_ATTEMPT"] == "1");
  h.Exit("a", id, 1, 2, 1);
  for (int rank : {0, 1, 3}) h.Exit("a", id, 1, rank, 0, 15);
  job = h.Job(id);
  REQUIRE(job.state() == FAILED);
  REQUIRE(job.reason() == "rank 2 exited with code 1 on node a (attempt 1); last log lines:\nboom");

  // Late news of an old attempt changes nothing.
  h.Exit("a", id, 0, 1, 3);
  REQUIRE(h.Job(id).state() == FAILED);
}

TEST_CASE("with max_failures 0 the first failure is final", "[jobs]") {
  Harness h;
  h.AddNode("a", 2);
  std::string id = h.Submit(2, 1, PACK);
  h.AnswerPort("a", 1000);
  h.Exit("a", id, 0, 1, 0, 9);
  h.Exit("a", id, 0, 0, 0, 15);
  REQUIRE(h.Job(id).state() == FAILED);
  REQUIRE(h.Job(id).reason().rfind("rank 1 was killed by signal 9 on node a (attempt 0)", 0) == 0);
}

TEST_CASE("a dead node fails its ranks and the gang restarts on the remaining nodes", "[jobs]") {
  Harness h;
  h.AddNode("a", 2);
  h.AddNode("b", 2);
  std::string id = h.Submit(2, 1, SPREAD, 1);
  h.AnswerPort("a", 1000);
  h.head->OnAgentDisconnected(h.agents["b"].get(), "connection lost");
  REQUIRE(h.GotKill("a", 0));
  h.Exit("a", id, 0, 0, 0, 15);
  h.Advance(1000);
  JobInfo job = h.Job(id);
  REQUIRE(job.attempts_size() == 2);
  REQUIRE(job.attempts(0).failure_reason() == "node b died (connection lost) with rank 1 of attempt 0");
  REQUIRE(job.attempts(1).ranks(0).node_name() == "a");
  REQUIRE(job.attempts(1).ranks(1).node_name() == "a");
}

TEST_CASE("stop ends a running gang as STOPPED and a queued job at once", "[jobs]") {
  Harness h;
  h.AddNode("a", 1);
  std::string running = h.Submit(1, 1, PACK);
  std::string queued = h.Submit(1, 1, PACK);
  REQUIRE(h.Job(queued).state() == PENDING);
  REQUIRE(h.Job(queued).reason().rfind("waiting for resources", 0) == 0);
  REQUIRE(h.head->GetStatus().pending_size() == 1);

  REQUIRE(h.head->jobs().Stop(queued)->state() == STOPPED);
  h.AnswerPort("a", 1000);
  REQUIRE(h.head->jobs().Stop(running)->state() == RUNNING);  // stopping
  REQUIRE(h.GotKill("a", 0));
  h.Exit("a", running, 0, 0, 0, 15);
  REQUIRE(h.Job(running).state() == STOPPED);
  REQUIRE(h.head->jobs().Stop("job-9999").status().code() == Status::Code::kNotFound);
}

TEST_CASE("an infeasible job says why and runs once a big enough node joins", "[jobs]") {
  Harness h;
  h.AddNode("a", 2);
  std::string id = h.Submit(1, 4, PACK);
  REQUIRE(h.Job(id).state() == INFEASIBLE);
  REQUIRE(h.Job(id).reason() ==
          "cannot fit even on an idle cluster: needs 1 x {4 CPU} (PACK); 1 schedulable node holds 0 such workers; "
          "e.g. on a: CPU: 4 > 2");
  // An infeasible job does not hold back the queue.
  std::string small = h.Submit(1, 1, PACK);
  REQUIRE(h.Job(small).state() == RUNNING);
  h.AddNode("big", 8);
  REQUIRE(h.Job(id).state() == RUNNING);
  REQUIRE(h.Job(id).attempts(0).ranks(0).node_name() == "big");
}

TEST_CASE("a node that holds no worker of an infeasible job leaves it be until the next tick", "[jobs]") {
  Harness h;
  h.AddNode("a", 2);
  std::string id = h.Submit(1, 4, PACK);
  REQUIRE(h.Job(id).state() == INFEASIBLE);
  const std::string before = h.Job(id).reason();
  REQUIRE(before.find("1 schedulable node holds 0 such workers") != std::string::npos);
  // Two more small nodes: nothing to re-examine at once...
  h.AddNode("b", 2);
  h.AddNode("c", 3);
  REQUIRE(h.Job(id).state() == INFEASIBLE);
  REQUIRE(h.Job(id).reason() == before);
  // ...and the reason counts them after the next tick.
  h.head->Tick();
  REQUIRE(h.Job(id).state() == INFEASIBLE);
  REQUIRE(h.Job(id).reason() ==
          "cannot fit even on an idle cluster: needs 1 x {4 CPU} (PACK); 3 schedulable nodes hold 0 such workers; "
          "e.g. on a: CPU: 4 > 2");
  // One that can hold it places it at once.
  h.AddNode("big", 4);
  REQUIRE(h.Job(id).state() == RUNNING);
  REQUIRE(h.Job(id).attempts(0).ranks(0).node_name() == "big");
}

TEST_CASE("the queue is FIFO: a waiting job holds back later ones", "[jobs]") {
  Harness h;
  h.AddNode("a", 2);
  std::string first = h.Submit(1, 1, PACK);
  std::string big = h.Submit(2, 1, PACK);    // waits for first to end
  std::string small = h.Submit(1, 1, PACK);  // would fit, but is behind big
  REQUIRE(h.Job(big).state() == PENDING);
  REQUIRE(h.Job(small).state() == PENDING);
  h.AnswerPort("a", 1000);
  h.Exit("a", first, 0, 0, 0);
  REQUIRE(h.Job(big).state() == RUNNING);
  REQUIRE(h.Job(small).state() == PENDING);
}

TEST_CASE("the job waiting at the queue's front starts as soon as room is freed or a node joins with no tick between",
          "[jobs]") {
  Harness h;
  h.AddNode("a", 2);
  std::string first = h.Submit(2, 1, PACK);
  std::string second = h.Submit(2, 1, PACK);
  // Submits behind a waiting front do not place it again (nothing changed
  // for it), and must not keep it from starting once something has.
  std::vector<std::string> behind;
  for (int i = 0; i < 3; ++i) behind.push_back(h.Submit(1, 1, PACK));
  REQUIRE(h.Job(second).state() == PENDING);
  h.AnswerPort("a", 1000);
  h.Exit("a", first, 0, 0, 0);
  h.Exit("a", first, 0, 1, 0);
  REQUIRE(h.Job(second).state() == RUNNING);  // room freed
  REQUIRE(h.Job(behind[0]).state() == PENDING);
  h.AddNode("b", 2);
  CHECK(h.Job(behind[0]).state() == RUNNING);  // a node joined
  CHECK(h.Job(behind[1]).state() == RUNNING);
  CHECK(h.Job(behind[2]).state() == PENDING);
}

TEST_CASE("a drained node gets no new ranks", "[jobs]") {
  Harness h;
  h.AddNode("a", 4);
  h.AddNode("b", 4);
  REQUIRE(h.head->DrainNode("a").ok());
  std::string id = h.Submit(2, 1, SPREAD);
  JobInfo job = h.Job(id);
  REQUIRE(job.attempts(0).ranks_size() == 2);
  for (const auto& rank : job.attempts(0).ranks()) REQUIRE(rank.node_name() == "b");
}

TEST_CASE("a job over its timeout fails and is not retried", "[jobs]") {
  Harness h;
  h.AddNode("a", 1);
  SubmitJobRequest request;
  request.mutable_spec()->set_name("slow");
  request.mutable_spec()->add_entrypoint("sleep");
  request.mutable_spec()->set_num_workers(1);
  request.mutable_spec()->set_timeout_s(10);
  request.mutable_spec()->set_max_failures(3);
  std::string id = *h.head->jobs().Submit(request);
  h.AnswerPort("a", 1000);
  h.Advance(9999);
  REQUIRE_FALSE(h.GotKill("a", 0));
  h.Advance(1);
  REQUIRE(h.GotKill("a", 0));
  h.Exit("a", id, 0, 0, 0, 15);
  REQUIRE(h.Job(id).state() == FAILED);
  REQUIRE(h.Job(id).reason() == "timed out after 10 s");
}

TEST_CASE("every transition is journaled and a new head replays the history", "[jobs][journal]") {
  Harness h;
  h.AddNode("a", 1);
  std::string id = h.Submit(1, 1, PACK);
  h.AnswerPort("a", 1000);
  h.Exit("a", id, 0, 0, 0);
  std::string waiting = h.Submit(1, 8, PACK);

  auto latest = LatestJobs(h.store.entries());
  REQUIRE(latest.at(id).state() == SUCCEEDED);
  REQUIRE(latest.at(waiting).state() == INFEASIBLE);


  FakeClock clock2;
  LogStore logs("");
  HeadCore restarted(&clock2, h.config, &h.store, &logs);
  REQUIRE(restarted.Restore().ok());
  REQUIRE(restarted.jobs().Get(id)->state() == SUCCEEDED);
  REQUIRE(restarted.jobs().Get(waiting)->state() == INFEASIBLE);
  REQUIRE(restarted.jobs().List().size() == 2);

  // It still waits for a node that can hold it: one too small leaves it
  // INFEASIBLE, a big one places it.
  auto small = std::make_shared<FakeAgentConnection>(), big = std::make_shared<FakeAgentConnection>();
  restarted.OnAgentMessage(small, RegisterAgain("a", 1, "", {}));
  REQUIRE(restarted.jobs().Get(waiting)->state() == INFEASIBLE);
  restarted.OnAgentMessage(big, RegisterAgain("big", 8, "", {}));
  REQUIRE(restarted.jobs().Get(waiting)->state() == RUNNING);
  REQUIRE(restarted.jobs().Get(waiting)->attempts(0).ranks(0).node_name() == "big");
}

TEST_CASE("only the newest max_attempts_kept attempts are kept in full, older ones summed up", "[jobs][journal]") {
  Harness h;
  h.AddNode("a", 1);
  std::string id = h.Submit(1, 1, PACK, /*max_failures=*/30);
  for (int attempt = 0; attempt <= 30; ++attempt) {
    h.AnswerPort("a", 1000);
    REQUIRE(EnvOf(h.Launches("a").back(), 0)["CLUSTER_ATTEMPT"] == std::to_string(attempt));
    h.Exit("a", id, attempt, 0, 1);
    h.Advance(10 * 60 * 1000);  // past any restart delay
    REQUIRE(h.Job(id).attempts_size() <= h.config.max_attempts_kept);
  }
  JobInfo job = h.Job(id);
  REQUIRE(job.state() == FAILED);
  REQUIRE(h.config.max_attempts_kept == 20);
  REQUIRE(job.attempts_size() == 20);
  REQUIRE(job.attempts(0).attempt() == 11);
  REQUIRE(job.attempts(19).attempt() == 30);
  const AttemptsSummary& older = job.older_attempts();
  REQUIRE(older.count() == 11);
  REQUIRE(older.failed() == 11);
  REQUIRE(older.first_failed_attempt() == 0);
  REQUIRE(older.first_failure_reason() == "rank 0 exited with code 1 on node a (attempt 0); last log lines:\nboom");
  REQUIRE(older.last_failed_attempt() == 10);
  REQUIRE(older.last_failure_reason() == "rank 0 exited with code 1 on node a (attempt 10); last log lines:\nboom");
  REQUIRE(older.first_start_unix_ms() > 0);
  REQUIRE(job.reason() == "rank 0 exited with code 1 on node a (attempt 30); last log lines:\nboom");

  // The journal holds the same, and a new head comes back to it.
  auto replayed = LatestJobs(h.store.entries());
  REQUIRE(replayed.at(id).attempts_size() == 20);
  REQUIRE(replayed.at(id).older_attempts().count() == 11);
  FakeClock clock2;
  LogStore logs("");
  HeadCore restarted(&clock2, h.config, &h.store, &logs);
  REQUIRE(restarted.Restore().ok());
  REQUIRE(restarted.jobs().Get(id)->attempts(0).attempt() == 11);
}

// The dead node's ranks are marked gone before the retry starts: marked
// after, they would count as the new attempt's, which would "succeed"
// while its rank 0 ran, and that rank's CPU would leak.
TEST_CASE("a retry after a lost node that lands where a rank had exited waits for all of its own ranks", "[jobs]") {
  Harness h;
  h.AddNode("a", 2);
  h.AddNode("b", 2);
  std::string id = h.Submit(2, 1, SPREAD, 2);
  REQUIRE(h.Job(id).attempts(0).ranks(0).node_name() == "a");
  h.AnswerPort("a", 1000);
  h.Exit("b", id, 0, 1, 0);
  h.head->OnAgentDisconnected(h.agents["a"].get(), "connection lost");
  h.Advance(1000);
  JobInfo job = h.Job(id);
  REQUIRE(job.attempts_size() == 2);
  REQUIRE(job.attempts(1).ranks(0).node_name() == "b");
  REQUIRE(job.attempts(1).ranks(1).node_name() == "b");
  REQUIRE(h.head->GetStatus().nodes(1).available().amounts().at(kCpu) == 0);
  h.Exit("b", id, 1, 1, 0);
  REQUIRE(h.Job(id).state() == RUNNING);
  h.Exit("b", id, 1, 0, 0);
  job = h.Job(id);
  REQUIRE(job.state() == SUCCEEDED);
  REQUIRE(job.attempts(1).ranks(0).exited());
  REQUIRE(h.head->GetStatus().nodes(1).available().amounts().at(kCpu) == 2);  // both CPUs back
}
