// A crash loop (a job failing at start with max_failures 100000) must not
// grow the head's journal: each transition journals what changed, not the
// whole record with every attempt's log tail, and retries back off. Here,
// on a fake clock with a real FileJobStore in a temp folder: the journal
// and the head's record of the job stay small.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <google/protobuf/util/message_differencer.h>

#include <climits>
#include <memory>

#include "daemon/head/job_store.h"
#include "head_harness.h"
#include "temp_tree.h"

using namespace clusterd;
using namespace clusterd::testing;
using google::protobuf::util::MessageDifferencer;

namespace {

// One node whose agent answers every launch of the job with an instant
// failure quoting an 8 KiB log tail.
struct CrashLoop {
  QuietLogs quiet;
  TempTree dir;
  FakeClock clock;
  LogStore logs{""};
  Config config;
  std::unique_ptr<FileJobStore> store;
  std::unique_ptr<HeadCore> head;
  std::shared_ptr<FakeAgentConnection> agent = std::make_shared<FakeAgentConnection>();
  size_t handled = 0;  // of agent->sent
  std::string id;
  uint64_t max_bytes = 0;
  int64_t snapshots = 0;

  CrashLoop(const Config& given, const RestartDelay* delay) : config(given) {
    auto opened = FileJobStore::Open(dir.Path("journal"));
    REQUIRE(opened.ok());
    store = std::move(*opened);
    head = std::make_unique<HeadCore>(&clock, config, store.get(), &logs);
    AgentMessage reg;
    reg.mutable_register_()->set_name("a");
    reg.mutable_register_()->set_address("10.0.0.1");
    (*reg.mutable_register_()->mutable_total()->mutable_amounts())[kCpu] = 1;
    head->OnAgentMessage(agent, reg);
    Harness shape;  // only for its request builder
    SubmitJobRequest request = shape.Request(1, 1, PACK, /*max_failures=*/100000);
    if (delay) *request.mutable_spec()->mutable_restart_delay() = *delay;
    auto submitted = head->jobs().Submit(request);
    REQUIRE(submitted.ok());
    id = *submitted;
  }

  // Answers what the head sent: a port for each ReservePort, an instant
  // failure for each launch; stops after `attempts` failures.
  int Answer(int attempts) {
    int failed = 0;
    while (handled < agent->sent.size() && failed < attempts) {
      HeadMessage sent = agent->sent[handled++];
      AgentMessage reply;
      if (sent.has_reserve_port()) {
        reply.mutable_port_reserved()->set_job_id(sent.reserve_port().job_id());
        reply.mutable_port_reserved()->set_attempt(sent.reserve_port().attempt());
        reply.mutable_port_reserved()->set_port(29500);
      } else if (sent.has_launch()) {
        auto* exited = reply.mutable_rank_exited();
        exited->set_job_id(sent.launch().job_id());
        exited->set_attempt(sent.launch().attempt());
        exited->set_rank(0);
        exited->set_exit_code(1);
        exited->set_log_tail(std::string(8191, 'e') + "\n");
        ++failed;
      } else {
        continue;
      }
      head->OnAgentMessage(agent, reply);
      max_bytes = std::max(max_bytes, store->bytes());
    }
    return failed;
  }

  // `ms` of simulated time in heartbeat steps, every launch failing at once.
  void RunFor(int64_t ms) {
    AgentMessage beat;
    beat.mutable_heartbeat()->set_seq(1);
    for (int64_t t = 0; t < ms; t += 500) {
      clock.AdvanceMillis(500);
      head->OnAgentMessage(agent, beat);
      head->Tick();
      Answer(INT_MAX);
    }
  }

  JobInfo Job() { return *head->jobs().Get(id); }
  int Attempts() { return Job().older_attempts().count() + Job().attempts_size(); }

  // A new head on the same file rebuilds exactly the record this one holds.
  void RequireReplayEqualsMemory() {
    store.reset();
    auto reopened = FileJobStore::Open(dir.Path("journal"));
    REQUIRE(reopened.ok());
    HeadCore again(&clock, config, reopened->get(), &logs);
    REQUIRE(again.Restore().ok());
    REQUIRE(MessageDifferencer::Equals(*again.jobs().Get(id), Job()));
  }
};

std::unique_ptr<FileJobStore> OpenJournal(const std::string& path) {
  auto store = FileJobStore::Open(path);
  REQUIRE(store.ok());
  return std::move(*store);
}

// The whole record in one entry, as an older head wrote every transition.
void AppendWhole(JobStore& store, const JobInfo& record) {
  JournalEntry entry;
  entry.set_job_id(record.job_id());
  *entry.mutable_job() = record;
  REQUIRE(store.Append(entry).ok());
}

// A head (not yet restored) on the journal file at `path`.
struct HeadOnJournal {
  explicit HeadOnJournal(const std::string& path) : store(OpenJournal(path)) {}
  std::unique_ptr<FileJobStore> store;
  FakeClock clock;
  LogStore logs{""};
  Config config;
  HeadCore head{&clock, config, store.get(), &logs};
};

}  // namespace

TEST_CASE("a job failing at start with max_failures 100000 for 60 minutes: restart delays keep the journal small", "[jobs][journal][backoff]") {
  CrashLoop loop(Config(), nullptr);
  loop.RunFor(60 * 60 * 1000);
  // 1+2+4+...+256 s, then one attempt every 5 minutes.
  REQUIRE(loop.Attempts() >= 18);
  REQUIRE(loop.Attempts() <= 22);
  REQUIRE(loop.Job().state() == RESTARTING);
  REQUIRE_THAT(loop.Job().reason(), Catch::StartsWith("retrying in 5m after attempt "));
  REQUIRE(loop.Job().attempts_size() <= loop.config.max_attempts_kept);
  WARN("60 simulated minutes, default restart_delay: " << loop.Attempts() << " attempts, journal at most "
       << loop.max_bytes << " bytes");
  REQUIRE(loop.max_bytes < 1 * 1024 * 1024);
  loop.RequireReplayEqualsMemory();
}

TEST_CASE("a job failing at start with no restart delay: compaction bounds the journal, the attempt cap the head's record", "[jobs][journal]") {
  Config config;
  config.journal_compact_mb = 1;  // the floor of the threshold, small to compact often
  RestartDelay none;
  none.set_initial_s(0);
  none.set_max_s(300);
  none.set_factor(2);
  CrashLoop loop(config, &none);
  // The old head: in 20 s about 120 attempts wrote 185 MB. Here 2000, as
  // fast as the loop goes.
  uint64_t record_bytes = 0;
  while (loop.Attempts() < 2000) {
    REQUIRE(loop.Job().state() == RUNNING);  // no wait: the next attempt is already out
    REQUIRE(loop.Answer(1) == 1);
    record_bytes = std::max<uint64_t>(record_bytes, loop.Job().ByteSizeLong());
    REQUIRE(loop.Job().attempts_size() <= config.max_attempts_kept);
  }
  JournalStatus journal = loop.head->GetStatus().journal();
  REQUIRE(journal.ok());
  // Every entry of this job is at most two 8 KiB tails and change; the
  // bound is the threshold, max(1 MiB, 4 x the last snapshot), plus two entries.
  const uint64_t bound = (1u << 20) + 64 * 1024;
  WARN("2000 attempts with no restart delay: journal at most " << loop.max_bytes << " bytes (bound " << bound
       << "), " << journal.snapshots() << " snapshots, the last " << journal.snapshot_bytes()
       << " bytes; the job's record at most " << record_bytes << " bytes");
  REQUIRE(journal.snapshots() >= 10);
  REQUIRE(static_cast<uint64_t>(journal.snapshot_bytes()) * config.journal_compact_ratio < (1u << 20));
  REQUIRE(loop.max_bytes <= bound);
  REQUIRE(record_bytes < 256 * 1024);
  loop.RequireReplayEqualsMemory();
}

TEST_CASE("a journal of an older head, far above the threshold, is compacted when the head starts", "[jobs][journal]") {
  QuietLogs quiet;
  TempTree dir;
  const std::string path = dir.Path("journal");
  Harness shape;
  JobInfo record;
  {
    // What an old head wrote: the whole record after every transition.
    std::unique_ptr<FileJobStore> store = OpenJournal(path);
    record.set_job_id("job-0007");
    *record.mutable_spec() = shape.Request(1, 1, PACK, 100000).spec();
    record.set_state(RESTARTING);
    for (int attempt = 0; attempt < 150; ++attempt) {
      AttemptInfo* a = record.add_attempts();
      a->set_attempt(attempt);
      a->set_failure_reason(std::string(8192, 'e'));
      AppendWhole(*store, record);
    }
    REQUIRE(store->bytes() > 80u << 20);
  }
  HeadOnJournal restarted(path);
  HeadCore& head = restarted.head;
  REQUIRE(head.Restore().ok());
  REQUIRE(restarted.store->bytes() < 2u << 20);  // the one record, 150 attempts of it
  REQUIRE(head.GetStatus().journal().snapshots() == 1);
  REQUIRE(MessageDifferencer::Equals(*head.jobs().Get("job-0007"), record));
  // Ids go on after it.
  auto next = head.jobs().Submit(shape.Request(1, 1, PACK));
  REQUIRE(next.ok());
  REQUIRE(*next == "job-0008");
}

// A head restarted on 200,000 finished jobs rewrote its 49 MB journal,
// a fresh snapshot already, at every start (1.4 s, and a copy of every job).
TEST_CASE("a journal above the threshold that is about its state's size is not rewritten when the head starts", "[jobs][journal]") {
  QuietLogs quiet;
  TempTree dir;
  const std::string path = dir.Path("journal");
  Harness shape;
  {
    // 160 finished jobs of ~64 KiB each, a record apiece: 10 MiB, over the
    // 8 MiB floor, and no more than the state it holds.
    std::unique_ptr<FileJobStore> store = OpenJournal(path);
    for (int i = 1; i <= 160; ++i) {
      JobInfo record;
      record.set_job_id(fmt::format("job-{:04d}", i));
      *record.mutable_spec() = shape.Request(1, 1, PACK).spec();
      record.set_state(FAILED);
      record.set_reason(std::string(64 << 10, 'e'));
      AppendWhole(*store, record);
    }
    REQUIRE(store->bytes() > 10u << 20);
  }
  HeadOnJournal restarted(path);
  const uint64_t before = restarted.store->bytes();
  REQUIRE(restarted.head.Restore().ok());
  CHECK(restarted.head.GetStatus().journal().snapshots() == 0);
  CHECK(restarted.store->bytes() == before);
  CHECK(restarted.head.jobs().List().size() == 160);
}

TEST_CASE("a restarted head never hands out the id of a deleted job again, compacted or not", "[jobs][journal]") {
  for (bool compact : {false, true}) {
    INFO("compacted: " << compact);
    Harness h;
    h.AddNode("a", 1);
    std::string first = h.Submit(1, 1, PACK);
    h.AnswerPort("a", 1000);
    h.Exit("a", first, 0, 0, 0);
    std::string second = h.Submit(1, 1, PACK);
    h.AnswerPort("a", 1001);
    h.Exit("a", second, 0, 0, 0);
    REQUIRE(h.head->jobs().Delete(second).ok());  // its logs stay on the head's disk
    if (compact) {
      // What a snapshot of the head now holds: the counter, then the one job.
      JournalEntry counter;
      counter.mutable_snapshot()->set_next_job_number(3);
      JournalEntry job;
      job.set_job_id(first);
      *job.mutable_job() = h.Job(first);
      REQUIRE(h.store.Compact({counter, job}).ok());
    }
    FakeClock clock2;
    LogStore logs("");
    HeadCore restarted(&clock2, h.config, &h.store, &logs);
    REQUIRE(restarted.Restore().ok());
    auto next = restarted.jobs().Submit(h.Request(1, 1, PACK));
    REQUIRE(next.ok());
    REQUIRE(*next == "job-0003");
  }
}
