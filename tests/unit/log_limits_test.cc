// A rank's output is capped: its node keeps the first
// and last part within the job's log limit and says what was dropped
// (RankOutputCap), the head holds every rank and job to the limits
// whatever a node sends (LogAdmission), and the head's whole log store
// stays under log_store_limit_mb, the logs of the jobs that finished first
// going first (JobLogs::MakeRoom).
#include <catch2/catch.hpp>

#include <functional>
#include <string>

#include "common/logs/attempt_banner.h"
#include "common/jobspec/job_spec.h"
#include "daemon/agent/rank_output_cap.h"
#include "daemon/head/log_admission.h"
#include "head_harness.h"
#include "temp_tree.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

// Bytes with no newline and no repeat within 26, so that any cut shows.
std::string Letters(size_t n, size_t from = 0) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += static_cast<char>('a' + (from + i) % 26);
  return s;
}

std::string Feed(RankOutputCap& cap, const std::string& data, size_t chunk) {
  std::string kept;
  for (size_t at = 0; at < data.size(); at += chunk) kept += cap.Take(std::string_view(data).substr(at, chunk));
  return kept;
}

std::string ReadAll(const LogStore& logs, const std::string& job, int rank) {
  int64_t end = 0;
  auto data = logs.Read(job, rank, 0, logs.Size(job, rank), &end);
  REQUIRE(data.ok());
  return *data;
}

AgentMessage Log(const std::string& job, int attempt, int rank, const std::string& data) {
  AgentMessage m;
  m.mutable_log()->set_job_id(job);
  m.mutable_log()->set_attempt(attempt);
  m.mutable_log()->set_rank(rank);
  m.mutable_log()->set_data(data);
  return m;
}

// A head whose config and log store the test chooses, with node "a" of 8 CPUs.
struct LimitsHarness {
  TempTree dir;
  FakeClock clock;
  MemoryJobStore store;
  Config config;
  std::unique_ptr<LogStore> logs;
  std::unique_ptr<HeadCore> head;
  std::shared_ptr<FakeAgentConnection> agent = std::make_shared<FakeAgentConnection>();

  // probe: the free space of the store's disk, as LogStore::SetFreeSpaceProbe takes it.
  void Start(int64_t store_limit_bytes = 0, int64_t min_free_bytes = 0,
             std::function<int64_t(const std::string&)> probe = nullptr) {
    logs = std::make_unique<LogStore>(dir.Path("jobs"), LogStore::kDefaultPackedLimit, store_limit_bytes,
                                      min_free_bytes);
    if (probe) logs->SetFreeSpaceProbe(std::move(probe));
    head = std::make_unique<HeadCore>(&clock, config, &store, logs.get());
    AgentMessage reg;
    reg.mutable_register_()->set_name("a");
    reg.mutable_register_()->set_name_given(true);
    reg.mutable_register_()->set_address("10.0.0.1");
    (*reg.mutable_register_()->mutable_total()->mutable_amounts())[kCpu] = 8;
    head->OnAgentMessage(agent, reg);
  }
  std::string Submit(int workers, int64_t log_limit = 0) {
    Harness shape;  // only for its request builder
    SubmitJobRequest request = shape.Request(workers, 1, PACK);
    request.mutable_spec()->set_log_limit_bytes(log_limit);
    auto id = head->jobs().Submit(request);
    REQUIRE(id.ok());
    return *id;
  }
  LaunchRanks LastLaunch() {
    LaunchRanks last;
    for (const auto& sent : agent->sent) {
      if (sent.has_launch()) last = sent.launch();
    }
    return last;
  }
  void Send(const AgentMessage& m) { head->OnAgentMessage(agent, m); }
  void Exit(const std::string& job, int rank, int code) {
    AgentMessage m;
    m.mutable_rank_exited()->set_job_id(job);
    m.mutable_rank_exited()->set_attempt(0);
    m.mutable_rank_exited()->set_rank(rank);
    m.mutable_rank_exited()->set_exit_code(code);
    Send(m);
  }
  JobInfo Job(const std::string& id) { return *head->jobs().Get(id); }

  // A 1-rank job that logs 100 KiB, runs `ms` more and succeeds; its id.
  // Past 64 KiB a log has a file of its own, so that removing it frees its
  // bytes at once.
  std::string FinishedJobWithLog(int64_t ms) {
    const std::string id = Submit(1);
    Send(Log(id, 0, 0, Letters(100 << 10)));
    clock.AdvanceMillis(ms);
    Exit(id, 0, 0);
    REQUIRE(Job(id).state() == SUCCEEDED);
    return id;
  }
};

}  // namespace

TEST_CASE("a rank's node keeps the first part and the last of its output, exactly, and says what it dropped between",
          "[logs][log_limit]") {
  RankOutputCap cap(100, 30);  // the first 70 bytes and the last 30
  const std::string out = Letters(250);
  const std::string now = Feed(cap, out, 7);
  CHECK(now == out.substr(0, 70) +
                   "\n[clusterd: this rank's output passed its log limit (100 B); what follows is dropped but for the "
                   "last 30 B, kept when the rank ends]\n");
  CHECK(cap.dropped() == 150);
  const std::string cut =
      "\n[clusterd: this rank's log is cut: 150 B of its output were dropped before the last 30 B above (its log limit "
      "is 100 B)]\n";
  CHECK(cap.Finish() ==
        "[clusterd: 150 B of this rank's output dropped here (its log limit is 100 B); the last 30 B follow]\n" +
            out.substr(220) + cut);
  CHECK(cap.Finish().empty());  // once

  SECTION("one chunk larger than the whole limit") {
    RankOutputCap big(100, 30);
    const std::string kept = big.Take(out);
    CHECK(kept.substr(0, 70) == out.substr(0, 70));
    CHECK(big.Finish() ==
          "[clusterd: 150 B of this rank's output dropped here (its log limit is 100 B); the last 30 B follow]\n" +
              out.substr(220) + cut);
  }
}

TEST_CASE("output within the log limit is kept whole, byte for byte, with no line added", "[logs][log_limit]") {
  RankOutputCap cap(100, 30);
  const std::string out = Letters(100);
  const std::string kept = Feed(cap, out, 9);
  CHECK(kept + cap.Finish() == out);
  RankOutputCap none;  // no limit
  CHECK(none.Take(out) == out);
  CHECK(none.Finish().empty());
}

TEST_CASE("the head tells each rank its log limit at launch: the job file's, or the config's, within the job's",
          "[logs][log_limit]") {
  LimitsHarness h;
  h.config.log_rank_limit_mb = 64;
  h.config.log_tail_kb = 1024;
  h.config.log_job_limit_mb = 4096;
  h.Start();
  h.Submit(1);
  CHECK(h.LastLaunch().log_limit_bytes() == int64_t{64} << 20);
  CHECK(h.LastLaunch().log_tail_bytes() == int64_t{1} << 20);
  h.Submit(1, 128 << 10);  // the job file's log_limit: 128Ki
  CHECK(h.LastLaunch().log_limit_bytes() == 128 << 10);
  CHECK(h.LastLaunch().log_tail_bytes() == 64 << 10);  // at most half the limit

  SECTION("a job's limit shared out among its ranks") {
    h.config.log_job_limit_mb = 1;
    h.Start();
    h.Submit(4);
    CHECK(h.LastLaunch().log_limit_bytes() == (1 << 20) / 4);
  }
  SECTION("a log_limit above log_limit_max_mb is refused, naming the key") {
    h.config.log_limit_max_mb = 1;
    h.Start();
    Harness shape;
    SubmitJobRequest request = shape.Request(1, 1, PACK);
    request.mutable_spec()->set_log_limit_bytes(2 << 20);
    auto refused = h.head->jobs().Submit(request);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().message().find("log_limit_max_mb") != std::string::npos);
  }
}

TEST_CASE("the head holds a rank to its log limit whatever its node sends, and says so once", "[logs][log_limit]") {
  LimitsHarness h;
  h.Start();
  const std::string id = h.Submit(1, 64 << 10);
  std::string sent;
  for (int i = 0; i < 20; ++i) {  // 320 KiB from a node that ignores the limit
    const std::string chunk = Letters(16 << 10, static_cast<size_t>(i));
    sent += chunk;
    h.Send(Log(id, 0, 0, chunk));
  }
  const int64_t allowed = (64 << 10) + LogAdmission::kLineRoom;
  CHECK(ReadAll(*h.logs, id, 0) ==
        AttemptBanner(0, "a") + sent.substr(0, static_cast<size_t>(allowed)) +
            "\n[clusterd: the head drops the rest of this rank's output in attempt 0: its node sent more than this "
            "rank's log limit (64.0 KiB) allows]\n");
}

TEST_CASE("the head holds a job to log_job_limit_mb over all its ranks and attempts", "[logs][log_limit]") {
  Config config;
  config.log_rank_limit_mb = 0;
  config.log_job_limit_mb = 1;
  config.log_tail_kb = 1024;
  LogAdmission admission(config);
  JobSpec spec;
  LogAdmission::Budget budget = admission.StartAttempt("j", 0, spec, 2, 0);
  CHECK(budget.limit_bytes == 512 << 10);  // each of 2 ranks, half the job's
  CHECK(budget.tail_bytes == 256 << 10);
  const int64_t job_allowed = (1 << 20) + 2 * LogAdmission::kLineRoom;
  const std::string line =
      "[clusterd: the head drops the rest of this rank's output in attempt 0: the job's logs reached their limit of "
      "1.0 MiB (log_job_limit_mb)]\n";
  CHECK(admission.Admit("j", 0, 0, Letters(1000), spec, 2, job_allowed - 100) == Letters(100) + "\n" + line);
  CHECK(admission.Admit("j", 0, 0, "more\n", spec, 2, job_allowed - 100).empty());  // said once
  CHECK(admission.Admit("j", 0, 1, "rank 1\n", spec, 2, job_allowed) == line);
  // The next attempt gets what is left: nothing but a few lines each.
  budget = admission.StartAttempt("j", 1, spec, 2, job_allowed);
  CHECK(budget.limit_bytes == LogAdmission::kMinRankBudget);
  CHECK(budget.tail_bytes == LogAdmission::kMinRankBudget / 2);
}

TEST_CASE("output the log store's limit refuses is marked where it is missing once there is room",
          "[logs][log_limit]") {
  TempTree dir;
  LogStore logs(dir.Path("jobs"), LogStore::kDefaultPackedLimit, 1000);
  logs.Append("j1", 0, std::string(600, 'a'));
  CHECK(logs.Size("j1", 0) == 600);
  CHECK(logs.JobBytes("j1") == 600);
  logs.Append("j2", 0, std::string(600, 'b'));  // past the limit: refused
  CHECK(logs.Size("j2", 0) == 0);
  CHECK(logs.DiskBytes() <= 1000);
  logs.Delete("j1", 1);
  CHECK(logs.JobBytes("j1") == 0);
  logs.Append("j2", 0, "next\n");
  CHECK(ReadAll(logs, "j2", 0) ==
        "[clusterd: 600 bytes of this log were lost here: the head's log store is at its limit of 1000 B "
        "(log_store_limit_mb)]\nnext\n");
}

TEST_CASE("past its limit the head's log store loses the oldest finished job's logs first, never a running job's",
          "[logs][log_limit]") {
  LimitsHarness h;
  h.Start(400 << 10);  // removes from 360 KiB down to 320 KiB
  const std::string first = h.FinishedJobWithLog(1000), second = h.FinishedJobWithLog(1000);
  const std::string running = h.Submit(1);
  h.Send(Log(running, 0, 0, Letters(100 << 10)));
  CHECK(h.logs->JobBytes(first) > 0);
  CHECK(h.Job(first).logs_released().empty());
  h.Send(Log(running, 0, 0, Letters(80 << 10)));  // past 360 KiB
  CHECK(h.logs->JobBytes(first) == 0);
  CHECK(h.logs->Size(first, 0) == 0);
  CHECK(h.Job(first).logs_released() == "logs removed to keep the log store under 400.0 KiB (log_store_limit_mb)");
  CHECK(h.logs->JobBytes(second) > 100 << 10);
  CHECK(h.Job(second).logs_released().empty());
  CHECK(ReadAll(*h.logs, running, 0) == AttemptBanner(0, "a") + Letters(100 << 10) + Letters(80 << 10));
  CHECK(h.logs->DiskBytes() <= 320 << 10);

  SECTION("a head started again knows why the logs are gone") {
    h.head.reset();
    h.head = std::make_unique<HeadCore>(&h.clock, h.config, &h.store, h.logs.get());
    REQUIRE(h.head->Restore().ok());
    CHECK(h.Job(first).logs_released() == "logs removed to keep the log store under 400.0 KiB (log_store_limit_mb)");
    CHECK(h.Job(second).logs_released().empty());
  }
}

TEST_CASE("the log store leaves log_store_min_free_mb free on its disk, and marks what it refused for that",
          "[logs][log_limit]") {
  TempTree dir;
  LogStore logs(dir.Path("jobs"), LogStore::kDefaultPackedLimit, 0, 1000);
  int64_t free = 2000;
  logs.SetFreeSpaceProbe([&](const std::string&) { return free; });
  CHECK_FALSE(logs.WantsRoom());
  logs.Append("j1", 0, std::string(600, 'a'));
  CHECK(logs.Size("j1", 0) == 600);
  CHECK(logs.FreeBytes() == 1400);  // counted down without asking the disk again
  CHECK(logs.WantsRoom());          // under twice the floor
  logs.Append("j2", 0, std::string(600, 'b'));  // would leave 800: refused
  CHECK(logs.Size("j2", 0) == 0);
  logs.Delete("j1", 1);
  free = 5000;  // the disk is asked again after a deletion
  CHECK(logs.HasRoom());
  logs.Append("j2", 0, "next\n");
  CHECK(ReadAll(logs, "j2", 0) ==
        "[clusterd: 600 bytes of this log were lost here: the disk of the head's log store has 1.4 KiB free, and the "
        "store leaves at least 1000 B (log_store_min_free_mb)]\nnext\n");
}

TEST_CASE("a disk that other things fill makes the head remove the oldest finished job's logs first",
          "[logs][log_limit]") {
  LimitsHarness h;
  // A disk of 1 MiB that only the logs fill; 300 KiB must stay free, and
  // logs go once less than 600 KiB is.
  h.Start(0, 300 << 10, [&h](const std::string&) { return (int64_t{1} << 20) - h.logs->DiskBytes(); });
  const std::string first = h.FinishedJobWithLog(1000), second = h.FinishedJobWithLog(1000);
  const std::string running = h.Submit(1);
  h.Send(Log(running, 0, 0, Letters(100 << 10)));
  CHECK(h.logs->JobBytes(first) > 0);
  h.Send(Log(running, 0, 0, Letters(200 << 10)));  // 500 KiB of logs: 524 KiB free
  CHECK(h.logs->JobBytes(first) == 0);
  CHECK(h.Job(first).logs_released() ==
        "logs removed to keep 600.0 KiB free on the head's disk (log_store_min_free_mb)");
  CHECK(h.logs->JobBytes(second) > 100 << 10);
  CHECK(h.Job(second).logs_released().empty());
  CHECK(ReadAll(*h.logs, running, 0) == AttemptBanner(0, "a") + Letters(100 << 10) + Letters(200 << 10));
}

TEST_CASE("log_limit in a job file: a size, at least 64Ki", "[logs][log_limit][job_spec]") {
  auto spec = ParseJobSpec("entrypoint: train\nlog_limit: 256Mi\n", "job.yaml");
  REQUIRE(spec.ok());
  CHECK(spec->log_limit_bytes() == int64_t{256} << 20);
  CHECK(ParseJobSpec("entrypoint: train\n", "job.yaml")->log_limit_bytes() == 0);
  auto small = ParseJobSpec("entrypoint: train\nlog_limit: 1Ki\n", "job.yaml");
  REQUIRE_FALSE(small.ok());
  CHECK(small.status().message().find("log_limit") != std::string::npos);
  CHECK(small.status().message().find("at least 64Ki") != std::string::npos);
  CHECK_FALSE(ParseJobSpec("entrypoint: train\nlog_limit: lots\n", "job.yaml").ok());
  CHECK_FALSE(ParseJobSpec("entrypoint: train\nlog_limit: [1]\n", "job.yaml").ok());
}
