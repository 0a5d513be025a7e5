// Journal deltas: a transition journals what changed, replay rebuilds
// exactly the records the head had in memory, and journals written whole
// by older heads still replay.
#include <catch2/catch.hpp>

#include <google/protobuf/util/message_differencer.h>

#include "common/logging.h"
#include "daemon/head/job_delta.h"
#include "daemon/head/job_replay.h"
#include "head_harness.h"

using namespace clusterd;
using namespace clusterd::testing;
using google::protobuf::util::MessageDifferencer;

namespace {

// Whether replaying the store gives exactly the records the head holds.
void RequireReplayEqualsMemory(const MemoryJobStore& store, JobManager& jobs) {
  auto replayed = ReplayJobs(store.entries()).jobs;
  std::vector<JobInfo> live = jobs.List();
  REQUIRE(replayed.size() == live.size());
  for (const JobInfo& job : live) {
    INFO("job " << job.job_id());
    REQUIRE(replayed.count(job.job_id()) == 1);
    std::string diff;
    MessageDifferencer differ;
    differ.ReportDifferencesToString(&diff);
    bool same = differ.Compare(replayed.at(job.job_id()), job);
    INFO(diff);
    REQUIRE(same);
  }
}

AttemptInfo Attempt(int number, const std::string& failure = "") {
  AttemptInfo attempt;
  attempt.set_attempt(number);
  attempt.set_start_unix_ms(1000 + number);
  attempt.set_failure_reason(failure);
  RankInfo* rank = attempt.add_ranks();
  rank->set_rank(0);
  rank->set_node_name("a");
  return attempt;
}

}  // namespace

TEST_CASE("ApplyDelta(MakeDelta(a, b)) on a gives b, for every kind of change", "[journal]") {
  JobInfo a;
  a.set_job_id("job-0001");
  a.mutable_spec()->set_name("train");
  a.mutable_spec()->set_config_json(std::string(1000, 'x'));
  (*a.mutable_passthrough_env())["DVC_X"] = "1";
  a.set_state(PENDING);
  a.set_reason("queued");

  std::vector<std::function<void(JobInfo*)>> changes = {
      [](JobInfo* j) { j->set_state(RUNNING); *j->add_attempts() = Attempt(0); },
      [](JobInfo* j) { j->mutable_attempts(0)->mutable_ranks(0)->set_pid(42); },
      [](JobInfo* j) { j->set_latest_checkpoint("/ckpt/1"); },
      [](JobInfo* j) { j->add_stored_checkpoints()->set_manifest_id("m1"); },
      [](JobInfo* j) { j->add_stored_checkpoints()->set_manifest_id("m2"); },
      [](JobInfo* j) { j->mutable_stored_checkpoints()->DeleteSubrange(0, 1); },
      [](JobInfo* j) { j->mutable_attempts(0)->set_failure_reason("boom"); j->set_state(RESTARTING); },
      [](JobInfo* j) { *j->add_attempts() = Attempt(1); *j->add_attempts() = Attempt(2); j->set_state(RUNNING); },
      [](JobInfo* j) {  // the cap: the oldest is summed up, journaled as first_attempt alone
        FoldAttempt(j->attempts(0), j->mutable_older_attempts());
        j->mutable_attempts()->DeleteSubrange(0, 1);
      },
      [](JobInfo* j) { j->mutable_attempts()->DeleteSubrange(0, 1); },  // dropped without a fold: summary travels
      [](JobInfo* j) { j->clear_stored_checkpoints(); j->set_data_released("evicted"); },
      [](JobInfo* j) { j->set_state(SUCCEEDED); j->set_end_unix_ms(99); j->set_outputs_manifest("o"); j->add_outputs_missing("x"); },
  };
  JobInfo replayed = a;
  for (size_t i = 0; i < changes.size(); ++i) {
    INFO("change " << i);
    JobInfo b = a;
    changes[i](&b);
    JobDelta delta;
    REQUIRE(MakeDelta(WithoutSpec(a), b, &delta));
    REQUIRE_FALSE(delta.info().has_spec());
    REQUIRE(delta.info().passthrough_env().empty());
    if (i == 8) {
      REQUIRE_FALSE(delta.older_changed());
      REQUIRE_FALSE(delta.info().has_older_attempts());
      REQUIRE(delta.first_attempt() == 1);
    }
    if (i == 9) REQUIRE(delta.older_changed());
    ApplyDelta(delta, &replayed);
    REQUIRE(MessageDifferencer::Equals(replayed, b));
    a = b;
  }
  JobDelta none;
  REQUIRE_FALSE(MakeDelta(a, a, &none));
}

TEST_CASE("transitions journal deltas whose size does not grow with the job's attempts", "[jobs][journal]") {
  QuietLogs quiet;
  Harness h;
  h.AddNode("a", 1);
  std::string id = h.Submit(1, 1, PACK, /*max_failures=*/40);
  REQUIRE(h.store.entries().front().has_job());  // the whole record, once
  const std::string tail(8192, 'l');
  std::vector<size_t> sizes;  // of the entry recording each attempt's failure
  for (int attempt = 0; attempt <= 40; ++attempt) {
    h.AnswerPort("a", 1000 + attempt);
    AgentMessage m;
    auto* e = m.mutable_rank_exited();
    e->set_job_id(id);
    e->set_attempt(attempt);
    e->set_rank(0);
    e->set_exit_code(1);
    e->set_log_tail(tail);
    size_t before = h.store.entries().size();
    h.From("a", m);
    REQUIRE(h.store.entries().size() > before);
    sizes.push_back(h.store.entries()[before].ByteSizeLong());
    RequireReplayEqualsMemory(h.store, h.head->jobs());
    h.Advance(10 * 60 * 1000);  // past any restart delay
  }
  REQUIRE(h.Job(id).state() == FAILED);
  for (size_t i = 1; i < h.store.entries().size(); ++i) {
    const JournalEntry& entry = h.store.entries()[i];
    REQUIRE((entry.has_delta() || entry.has_metric()));
  }
  // Two copies of the tail at most (the attempt's failure and the job's reason).
  for (size_t size : sizes) REQUIRE(size < 3 * tail.size());
  REQUIRE(sizes.back() < sizes.front() + 1024);
}

TEST_CASE("replay of a delta journal equals the head's records after every kind of transition", "[jobs][journal]") {
  Harness h;
  h.AddNode("a", 2);
  h.AddNode("b", 2);
  std::string ok = h.Submit(2, 1, SPREAD);
  std::string retried = h.Submit(1, 1, PACK, 2);
  std::string stopped = h.Submit(1, 2, PACK);  // waits
  std::string infeasible = h.Submit(1, 64, PACK);
  RequireReplayEqualsMemory(h.store, h.head->jobs());
  h.AnswerPort("a", 1000);
  h.AnswerPort("b", 1000);
  h.Exit("a", retried, 0, 0, 3);
  h.Advance(60'000);
  RequireReplayEqualsMemory(h.store, h.head->jobs());
  REQUIRE(h.head->jobs().Stop(stopped).ok());
  h.head->OnAgentDisconnected(h.agents["b"].get(), "connection lost");  // ok's rank 1 dies with b
  h.Exit("a", ok, 0, 0, 0, 15);  // the rest of the gang is down: the attempt ends
  h.Advance(60'000);
  RequireReplayEqualsMemory(h.store, h.head->jobs());
  for (const auto& name : {"a", "b"}) h.AnswerPort(name, 2000);
  for (const auto& job : h.head->jobs().List()) {
    if (job.state() != RUNNING) continue;
    const AttemptInfo& attempt = job.attempts(job.attempts_size() - 1);
    for (const auto& rank : attempt.ranks()) h.Exit(rank.node_name(), job.job_id(), attempt.attempt(), rank.rank(), 0);
  }
  h.Advance(1000);
  RequireReplayEqualsMemory(h.store, h.head->jobs());
  REQUIRE(h.Job(stopped).state() == STOPPED);
  REQUIRE(h.Job(infeasible).state() == INFEASIBLE);
  REQUIRE(h.Job(retried).attempts_size() >= 2);
  REQUIRE(h.head->jobs().Delete(stopped).ok());
  RequireReplayEqualsMemory(h.store, h.head->jobs());
}

TEST_CASE("a journal written whole by an older head replays, and a new head appends deltas to it", "[jobs][journal]") {
  // What an older head wrote: the whole record after every transition.
  Harness old;
  old.AddNode("a", 1);
  std::string id = old.Submit(1, 1, PACK, 3);
  old.AnswerPort("a", 1000);
  old.Exit("a", id, 0, 0, 1);
  old.Advance(60'000);
  MemoryJobStore whole;
  for (const JournalEntry& entry : old.store.entries()) {
    JournalEntry rewritten = entry;
    if (entry.has_delta()) {
      JobInfo record = ReplayJobs({old.store.entries().begin(), old.store.entries().begin() + (&entry - &old.store.entries()[0]) + 1}).jobs.at(id);
      *rewritten.mutable_job() = record;
    }
    REQUIRE(whole.Append(rewritten).ok());
  }
  for (const JournalEntry& entry : whole.entries()) REQUIRE_FALSE(entry.has_delta());

  FakeClock clock;
  LogStore logs("");
  HeadCore head(&clock, old.config, &whole, &logs);
  REQUIRE(head.Restore().ok());
  REQUIRE(MessageDifferencer::Equals(*head.jobs().Get(id), old.Job(id)));
  size_t before = whole.entries().size();
  REQUIRE(head.jobs().Stop(id).ok());
  REQUIRE(whole.entries().size() > before);
  REQUIRE(whole.entries().back().has_delta());
  RequireReplayEqualsMemory(whole, head.jobs());
}
