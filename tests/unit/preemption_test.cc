// Preemption through the head (daemon/head/preemption/preemption.h), with
// fake agents and a fake clock: the notice (journalled, then sent), the
// deadline and its SIGTERM with the job's grace, the requeue with the same
// id from its newest stored checkpoint, uncounted against max_failures,
// max_preemptions, a stop under notice, and a head restarted mid-preemption.
#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include <fmt/format.h>

#include "blob_store_dir.h"
#include "checkpoint_messages.h"
#include "daemon/head/job_replay.h"
#include "head_harness.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

// Priorities as the queue policy gives them (the job file's priority:), admins by name.
Preemption::Policy TestPolicy() {
  Preemption::Policy policy;
  policy.priority = [](const JobSpec& spec) -> int64_t { return spec.priority(); };
  policy.is_admin = [](const std::string& user) { return user == "root-admin"; };
  return policy;
}

SubmitJobRequest WithPriority(int64_t priority, double cpus = 4, int max_failures = 0) {
  SubmitJobRequest request = SubmitRequestFor(1, cpus);
  request.mutable_spec()->set_max_failures(max_failures);
  request.mutable_spec()->set_priority(static_cast<int32_t>(priority));
  return request;
}

const PreemptRanks* NoticeTo(Harness& h, const std::string& node, const std::string& job) {
  const PreemptRanks* found = nullptr;
  for (const HeadMessage& sent : h.agents[node]->sent) {
    if (sent.has_preempt() && sent.preempt().job_id() == job) found = &sent.preempt();
  }
  return found;
}

const KillRanks* KillOf(Harness& h, const std::string& node, const std::string& job, int attempt) {
  for (const HeadMessage& sent : h.agents[node]->sent) {
    if (sent.has_kill() && sent.kill().job_id() == job && sent.kill().attempt() == attempt) return &sent.kill();
  }
  return nullptr;
}

// Moves the fake clock by `ms` and runs the head's timers once.
void Pass(Harness& h, int64_t ms) {
  h.clock.AdvanceMillis(ms);
  h.head->Tick();
}

// A 4-CPU node running a low-priority job (priority 0) with its
// checkpoint_000002 stored, and a priority-10 job submitted after it.
struct Preempted {
  BlobStoreDir blobs;
  Harness h{blobs.blobs.get()};
  std::string low, high, c2;
  explicit Preempted(int64_t low_priority = 0, SubmitJobRequest low_request = WithPriority(0)) {
    h.head->jobs().set_preemption_policy(TestPolicy());
    h.AddNode("a", 4);
    low_request.mutable_spec()->set_priority(static_cast<int32_t>(low_priority));
    low = h.Submit(low_request);
    REQUIRE(h.Job(low).state() == RUNNING);
    h.From("a", Stored(low, 0, blobs.Folder("epoch 1"), 1));
    c2 = blobs.Folder("epoch 2");
    h.From("a", Stored(low, 0, c2, 2));
    high = h.Submit(WithPriority(10));
  }
};

}  // namespace

TEST_CASE("a higher-priority job preempts a lower one: notice, SIGTERM at the deadline with its grace, requeue",
          "[preemption]") {
  Preempted p;
  Harness& h = p.h;
  REQUIRE(h.Job(p.high).state() == PENDING);
  // The notice is in the journal, and on its way to the node with the deadline.
  JobInfo low = h.Job(p.low);
  REQUIRE(low.preempting().by_job() == p.high);
  const int64_t deadline = low.preempting().deadline_unix_ms();
  CHECK(deadline == low.preempting().notice_unix_ms() + h.config.preemption_notice_ms);
  CHECK(LatestJobs(h.store.entries())[p.low].preempting().deadline_unix_ms() == deadline);
  const PreemptRanks* notice = NoticeTo(h, "a", p.low);
  REQUIRE(notice != nullptr);
  CHECK(notice->deadline_unix_ms() == deadline);
  CHECK(notice->attempt() == 0);

  // Nothing is killed before the deadline; at it, SIGTERM with the job's grace.
  Pass(h, h.config.preemption_notice_ms - 1);
  CHECK(KillOf(h, "a", p.low, 0) == nullptr);
  Pass(h, 1);
  const KillRanks* kill = KillOf(h, "a", p.low, 0);
  REQUIRE(kill != nullptr);
  CHECK(kill->grace_ms() == h.config.preemption_grace_default_s * 1000);
  CHECK(h.Job(p.high).state() == PENDING);  // the victim's rank still holds its room

  // Its rank down: the victim waits in the queue with its id, the other runs.
  h.Exit("a", p.low, 0, 0, 0, 15);
  low = h.Job(p.low);
  CHECK(low.state() == RESTARTING);
  CHECK(low.preemptions() == 1);
  CHECK_FALSE(low.has_preempting());
  CHECK(low.attempts(0).preempted_by() == p.high);
  CHECK(low.attempts(0).failure_reason().empty());
  CHECK(low.uncounted_failures() == 0);
  CHECK(h.head->jobs().PreemptionsTotal() == 1);
  CHECK(h.Job(p.high).state() == RUNNING);

  // Once the other is done it resumes from its newest stored checkpoint,
  // although max_failures is 0.
  h.Exit("a", p.high, 0, 0, 0);
  REQUIRE(h.Job(p.high).state() == SUCCEEDED);
  low = h.Job(p.low);
  REQUIRE(low.state() == RUNNING);
  REQUIRE(low.attempts_size() == 2);
  CHECK(low.attempts(1).restored_checkpoint() == "checkpoint_000002");
  std::vector<LaunchRanks> launches = h.Launches("a");
  CHECK(launches.back().job_id() == p.low);
  CHECK(launches.back().restore().manifest_id() == p.c2);
  h.Exit("a", p.low, 1, 0, 0);
  CHECK(h.Job(p.low).state() == SUCCEEDED);
}

TEST_CASE("a rank that exits on notice ends its attempt as preempted, not as a success", "[preemption]") {
  Preempted p;
  Harness& h = p.h;
  REQUIRE(h.Job(p.low).has_preempting());
  // It saved a checkpoint on notice and exited 0 before the deadline.
  h.Exit("a", p.low, 0, 0, 0);
  JobInfo low = h.Job(p.low);
  CHECK(low.state() == RESTARTING);
  CHECK(low.preemptions() == 1);
  CHECK(h.Job(p.high).state() == RUNNING);
}

TEST_CASE("a node that dies under notice ends the attempt as preempted, not as a failure", "[preemption]") {
  Preempted p;
  Harness& h = p.h;
  REQUIRE(h.Job(p.low).has_preempting());
  h.head->OnAgentDisconnected(h.agents["a"].get(), "connection lost");
  JobInfo low = h.Job(p.low);
  // Queued again (its only node gone, it waits as INFEASIBLE), not FAILED
  // with its max_failures: 0.
  CHECK(low.state() == INFEASIBLE);
  CHECK(low.preemptions() == 1);
  CHECK(low.attempts(0).preempted_by() == p.high);
  CHECK(low.attempts(0).failure_reason().empty());
}

TEST_CASE("nothing is preempted for an equal priority, nor a job that is not preemptible or was preempted enough",
          "[preemption]") {
  SECTION("equal priority") {
    Preempted p(10);
    CHECK_FALSE(p.h.Job(p.low).has_preempting());
    CHECK(NoticeTo(p.h, "a", p.low) == nullptr);
  }
  SECTION("preemptible: false") {
    SubmitJobRequest request = WithPriority(0);
    request.mutable_spec()->set_not_preemptible(true);
    Preempted p(0, request);
    CHECK_FALSE(p.h.Job(p.low).has_preempting());
  }
  SECTION("max_preemptions reached") {
    SubmitJobRequest request = WithPriority(0);
    request.mutable_spec()->set_max_preemptions(1);
    Preempted p(0, request);
    Harness& h = p.h;
    REQUIRE(h.Job(p.low).has_preempting());
    h.Exit("a", p.low, 0, 0, 0, 15);
    h.Exit("a", p.high, 0, 0, 0);
    REQUIRE(h.Job(p.low).state() == RUNNING);
    const std::string higher = h.Submit(WithPriority(20));
    CHECK(h.Job(higher).state() == PENDING);
    CHECK_FALSE(h.Job(p.low).has_preempting());
  }
}

TEST_CASE("a stop under notice stops the victim: it is not queued again", "[preemption]") {
  Preempted p;
  Harness& h = p.h;
  REQUIRE(h.head->jobs().Stop(p.low).ok());
  h.Exit("a", p.low, 0, 0, 0, 15);
  CHECK(h.Job(p.low).state() == STOPPED);
  CHECK(h.Job(p.high).state() == RUNNING);
}

TEST_CASE("a stop after the deadline, while the victim's ranks end, stops it", "[preemption]") {
  Preempted p;
  Harness& h = p.h;
  Pass(h, h.config.preemption_notice_ms);
  REQUIRE(KillOf(h, "a", p.low, 0) != nullptr);
  REQUIRE(h.head->jobs().Stop(p.low).ok());
  h.Exit("a", p.low, 0, 0, 0, 15);
  CHECK(h.Job(p.low).state() == STOPPED);
}

TEST_CASE("a head restarted mid-preemption ends the victim at its deadline and requeues it, never both running",
          "[preemption][journal]") {
  Preempted p;
  Harness& before = p.h;
  REQUIRE(before.Job(p.low).has_preempting());
  // A second head over the journal, later than the deadline.
  FakeClock clock(before.clock.NowMicros() + 5'000'000);
  LogStore logs("");
  HeadCore head(&clock, before.config, &before.store, &logs, p.blobs.blobs.get());
  head.jobs().set_preemption_policy(TestPolicy());
  REQUIRE(head.Restore().ok());
  auto conn = std::make_shared<FakeAgentConnection>();
  head.OnAgentMessage(conn, RegisterAgain("a", 4, p.low, {0}));
  head.Tick();
  // The victim's rank is back: it is ended now (its deadline passed), and
  // the other job waits until its rank is down.
  // Its node hears of the notice again (one sent while the head was away
  // may be lost), with the deadline the journal kept.
  bool killed = false, noticed = false;
  for (const HeadMessage& sent : conn->sent) {
    if (sent.has_kill() && sent.kill().job_id() == p.low) killed = true;
    if (sent.has_preempt() && sent.preempt().job_id() == p.low) {
      noticed = true;
      CHECK(sent.preempt().deadline_unix_ms() == before.Job(p.low).preempting().deadline_unix_ms());
    }
  }
  CHECK(noticed);
  CHECK(killed);
  CHECK(head.jobs().Get(p.high)->state() == PENDING);
  AgentMessage exit;
  exit.mutable_rank_exited()->set_job_id(p.low);
  exit.mutable_rank_exited()->set_rank(0);
  exit.mutable_rank_exited()->set_signal(15);
  head.OnAgentMessage(conn, exit);
  CHECK(head.jobs().Get(p.low)->state() == RESTARTING);
  CHECK(head.jobs().Get(p.low)->preemptions() == 1);
  CHECK(head.jobs().Get(p.high)->state() == RUNNING);
}

TEST_CASE("preemptible: false above preemption_exempt_max_priority is refused to who is not an admin, "
          "a grace above preemption_grace_max_s to all",
          "[preemption]") {
  Harness h;
  h.head->jobs().set_preemption_policy(TestPolicy());
  SubmitJobRequest request = WithPriority(h.config.preemption_exempt_max_priority + 1);
  request.mutable_spec()->set_not_preemptible(true);
  auto refused = h.head->jobs().Submit(request);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == Status::Code::kPermissionDenied);
  CHECK_THAT(refused.status().message(), Catch::Contains("preemption_exempt_max_priority"));
  // An admin may; a sweep's check before its trials' submit (no owner yet) leaves it to that submit.
  CHECK(h.head->jobs().Submit(request, "root-admin").ok());
  CHECK(h.head->jobs().CheckSpec(request.spec()).ok());
  // At the set priority anyone may.
  request = WithPriority(h.config.preemption_exempt_max_priority);
  request.mutable_spec()->set_not_preemptible(true);
  CHECK(h.head->jobs().Submit(request).ok());
  request = WithPriority(0);
  request.mutable_spec()->set_preemption_grace_s(h.config.preemption_grace_max_s + 1);
  auto too_long = h.head->jobs().Submit(request);
  REQUIRE_FALSE(too_long.ok());
  CHECK_THAT(too_long.status().message(), Catch::Contains("preemption_grace_max_s"));
}

// Two ranks on two nodes: rank 1 sees the notice first and leaves, while
// rank 0 is still storing the checkpoint the notice asked for. Rank 0 is
// left to finish (no SIGTERM before the deadline), and the job resumes
// from what it stored; one that does not finish gets SIGTERM at the
// deadline, once, and the attempt still ends as preempted.
TEST_CASE("a rank that leaves on notice leaves the others until the deadline, and the job resumes from what rank 0 "
          "stored then",
          "[preemption]") {
  const bool rank0_finishes = GENERATE(true, false);
  INFO((rank0_finishes ? "rank 0 stores and leaves" : "rank 0 stays until the deadline"));
  BlobStoreDir blobs;
  Harness h{blobs.blobs.get()};
  h.head->jobs().set_preemption_policy(TestPolicy());
  h.AddNode("a", 1);
  h.AddNode("b", 1);
  SubmitJobRequest two_ranks = WithPriority(0, 1);
  two_ranks.mutable_spec()->set_num_workers(2);
  two_ranks.mutable_spec()->set_placement(STRICT_SPREAD);
  const std::string low = h.Submit(two_ranks);
  REQUIRE(h.Job(low).state() == RUNNING);
  for (const char* node : {"a", "b"}) h.AnswerPort(node, 29500);  // launched: a gang across nodes waits for its port
  const std::string rank0_node = h.Job(low).attempts(0).ranks(0).node_name();
  const std::string rank1_node = rank0_node == "a" ? "b" : "a";
  h.From(rank0_node, Stored(low, 0, blobs.Folder("epoch 1"), 1));
  SubmitJobRequest urgent = WithPriority(10, 1);
  urgent.mutable_spec()->set_num_workers(2);
  urgent.mutable_spec()->set_placement(STRICT_SPREAD);
  const std::string high = h.Submit(urgent);
  REQUIRE(h.Job(low).has_preempting());

  h.Exit(rank1_node, low, 0, 1, 0);
  CHECK(h.Job(low).state() == RUNNING);  // rank 0 still runs, and is not told to stop
  CHECK(KillOf(h, rank0_node, low, 0) == nullptr);
  Pass(h, h.config.preemption_notice_ms - 1);
  CHECK(KillOf(h, rank0_node, low, 0) == nullptr);

  std::string resumed_from = "checkpoint_000001";
  if (rank0_finishes) {
    h.From(rank0_node, Stored(low, 0, blobs.Folder("saved on notice"), 2));
    resumed_from = "checkpoint_000002";
    h.Exit(rank0_node, low, 0, 0, 0);
    CHECK(KillOf(h, rank0_node, low, 0) == nullptr);
  } else {
    Pass(h, 1);
    const KillRanks* kill = KillOf(h, rank0_node, low, 0);
    REQUIRE(kill != nullptr);
    CHECK(kill->grace_ms() == h.config.preemption_grace_default_s * 1000);
    const size_t sent = h.agents[rank0_node]->sent.size();
    Pass(h, 1000);
    CHECK(h.agents[rank0_node]->sent.size() == sent);  // SIGTERM once
    h.Exit(rank0_node, low, 0, 0, 0, 15);
  }
  JobInfo victim = h.Job(low);
  CHECK(victim.state() == RESTARTING);
  CHECK(victim.preemptions() == 1);
  CHECK(victim.attempts(0).failure_reason().empty());
  REQUIRE(h.Job(high).state() == RUNNING);
  for (const char* node : {"a", "b"}) h.AnswerPort(node, 29501);
  h.Exit("a", high, 0, h.Job(high).attempts(0).ranks(0).node_name() == "a" ? 0 : 1, 0);
  h.Exit("b", high, 0, h.Job(high).attempts(0).ranks(0).node_name() == "b" ? 0 : 1, 0);
  victim = h.Job(low);
  REQUIRE(victim.state() == RUNNING);
  CHECK(victim.attempts(1).restored_checkpoint() == resumed_from);
}

namespace {

// Rank 0's report of `checkpoint` (a folder's path), as its node forwards it.
AgentMessage ReportOf(const std::string& job, int attempt, const std::string& checkpoint, int64_t seq) {
  AgentMessage m;
  MetricsReport* report = m.mutable_metrics();
  report->set_job_id(job);
  report->set_attempt(attempt);
  report->set_rank(0);
  report->set_report_seq(seq);
  (*report->mutable_values())["loss"] = 0.5;
  report->set_checkpoint(checkpoint);
  return m;
}

// The victim's rank 0 reported checkpoint_000003 and left on notice
// before its node stored it.
void ExitWhileStoring(Preempted& p) {
  p.h.From("a", ReportOf(p.low, 0, "/work/job/checkpoints/checkpoint_000003", 1));
  p.h.Exit("a", p.low, 0, 0, 0);
}

}  // namespace

TEST_CASE("a victim ended while its node still stores the checkpoint rank 0 reported last waits, holding no room, "
          "until the node settles it or resume_checkpoint_wait_ms passes, and resumes from the newest stored",
          "[preemption][resume_wait]") {
  const std::string how = GENERATE(as<std::string>{}, "stored", "not stored", "wait over");
  INFO("the checkpoint: " << how);
  Preempted p;
  Harness& h = p.h;
  // It reported checkpoint_000003 after the stored checkpoint_000002 and
  // ignores its notice: SIGTERM ends it while its node still sends it.
  h.From("a", ReportOf(p.low, 0, "/work/job/checkpoints/checkpoint_000003", 1));
  Pass(h, h.config.preemption_notice_ms);
  h.Exit("a", p.low, 0, 0, 0, 15);
  JobInfo low = h.Job(p.low);
  CHECK(low.state() == RESTARTING);
  CHECK(low.preemptions() == 1);
  CHECK(low.reason() == fmt::format("preempted by {} (attempt 0, preemption 1); resumes from checkpoint_000003, which "
                                    "rank 0 reported last, once its node has stored it (at most 120 s from now, "
                                    "resume_checkpoint_wait_ms; else from checkpoint_000002)",
                                    p.high));
  CHECK(low.retry_at_unix_ms() == h.clock.UnixMillis() + h.config.resume_checkpoint_wait_ms);
  // The wait holds no room: the preempting job runs, and ends, meanwhile.
  REQUIRE(h.Job(p.high).state() == RUNNING);
  h.Exit("a", p.high, 0, 0, 0);
  REQUIRE(h.Job(p.high).state() == SUCCEEDED);
  h.Advance(1000);  // (its node beating meanwhile)
  CHECK(h.Job(p.low).state() == RESTARTING);
  CHECK(h.Job(p.low).attempts_size() == 1);

  std::string resumed_from;
  if (how == "stored") {
    h.From("a", Stored(p.low, 0, p.blobs.Folder("epoch 3"), 3));
    resumed_from = "checkpoint_000003";
  } else if (how == "not stored") {
    h.From("a", NotStored(p.low, 0, 3, "a file changed while it was read"));
    resumed_from = "checkpoint_000002";
  } else {
    h.Advance(h.config.resume_checkpoint_wait_ms - 1000 - 1);
    CHECK(h.Job(p.low).state() == RESTARTING);
    h.Advance(1);
    resumed_from = "checkpoint_000002";
  }
  low = h.Job(p.low);
  REQUIRE(low.state() == RUNNING);
  REQUIRE(low.attempts_size() == 2);
  CHECK(low.attempts(1).restored_checkpoint() == resumed_from);
  CHECK(h.Launches("a").back().restore().name() == resumed_from);
  CHECK(low.retry_at_unix_ms() == 0);
  CHECK(low.uncounted_failures() == 0);
  CHECK(low.attempts(0).failure_reason().empty());
}

TEST_CASE("a victim waiting for its checkpoint is queued at once when the checkpoint was stored before its end, when "
          "its node dies, and not at all when it is stopped",
          "[preemption][resume_wait]") {
  SECTION("stored before the attempt ended: no wait") {
    Preempted p;
    Harness& h = p.h;
    h.From("a", ReportOf(p.low, 0, "/work/job/checkpoints/checkpoint_000003", 1));
    h.From("a", Stored(p.low, 0, p.blobs.Folder("epoch 3"), 3));
    h.Exit("a", p.low, 0, 0, 0);
    JobInfo low = h.Job(p.low);
    CHECK(low.state() == RESTARTING);
    CHECK(low.retry_at_unix_ms() == 0);
    // Queued: it starts as soon as the room is free again.
    h.Exit("a", p.high, 0, 0, 0);
    low = h.Job(p.low);
    REQUIRE(low.state() == RUNNING);
    CHECK(low.attempts(1).restored_checkpoint() == "checkpoint_000003");
  }
  SECTION("its node dies") {
    Preempted p;
    Harness& h = p.h;
    ExitWhileStoring(p);
    REQUIRE(h.Job(p.low).retry_at_unix_ms() > 0);
    h.AddNode("b", 4);
    h.head->OnAgentDisconnected(h.agents["a"].get(), "connection lost");
    const JobInfo low = h.Job(p.low);
    REQUIRE(low.state() == RUNNING);
    CHECK(low.attempts(1).ranks(0).node_name() == "b");
    CHECK(low.attempts(1).restored_checkpoint() == "checkpoint_000002");
  }
  SECTION("stopped while it waits") {
    Preempted p;
    Harness& h = p.h;
    ExitWhileStoring(p);
    REQUIRE(h.head->jobs().Stop(p.low, "stopped by the test").ok());
    REQUIRE(h.Job(p.low).state() == STOPPED);
    h.From("a", Stored(p.low, 0, p.blobs.Folder("epoch 3"), 3));
    h.Advance(h.config.resume_checkpoint_wait_ms);
    CHECK(h.Job(p.low).state() == STOPPED);
    CHECK(h.Job(p.low).attempts_size() == 1);
  }
}

TEST_CASE("a notice set between the head's ticks asks for a tick at its deadline", "[preemption]") {
  BlobStoreDir blobs;
  Harness h{blobs.blobs.get()};
  h.head->jobs().set_preemption_policy(TestPolicy());
  std::vector<Micros> wanted;
  h.head->set_tick_wanted([&](Micros at) { wanted.push_back(at); });
  h.AddNode("a", 4);
  const std::string low = h.Submit(WithPriority(0));
  REQUIRE(h.Job(low).state() == RUNNING);
  CHECK(wanted.empty());
  // The last Tick said "in a heartbeat period"; the notice is shorter.
  h.clock.AdvanceMillis(40);
  const Micros noticed_at = h.clock.NowMicros();
  h.Submit(WithPriority(10));
  REQUIRE(h.Job(low).has_preempting());
  REQUIRE(wanted.size() == 1);
  CHECK(wanted[0] == noticed_at + Micros{h.config.preemption_notice_ms} * 1000);
  CHECK(wanted[0] < noticed_at + Micros{h.config.heartbeat_ms} * 1000);
}
