// JobLogs on its own over a job table, a node table and a log store on
// disk: a rank's output is kept only from the node running it in the
// current attempt, opened by the attempt's banner and cut at the rank's
// log limit with a line that says so; a job file asking more than the head
// allows is refused naming the key; a store past its limit makes room by
// removing the logs of the jobs that ended first, never a running job's,
// and the record says why; a deleted job's logs go with it.
#include <catch2/catch.hpp>

#include <string>

#include "common/logs/attempt_banner.h"
#include "common/logs/log_store.h"
#include "daemon/head/job_logs.h"
#include "daemon/head/job_replay.h"
#include "daemon/head/node_table.h"
#include "job_table_fixture.h"
#include "temp_tree.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

// Bytes with no newline and no repeat within 26, so that any cut shows.
std::string Letters(size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += static_cast<char>('a' + i % 26);
  return s;
}

struct LogsFixture : JobTableFixture {
  NodeTable nodes{&clock, 2'000'000};
  TempTree dir;
  LogStore rank_logs;
  JobLogs job_logs{&clock, config, &table, &nodes, &rank_logs};
  std::string a;

  // limit_bytes: the log store's (log_store_limit_mb); 0: none.
  explicit LogsFixture(int64_t limit_bytes = 0)
      : rank_logs(dir.Path("logs"), LogStore::kDefaultPackedLimit, limit_bytes) {
    table.Subscribe(&job_logs);
    auto node = nodes.Register(Node("a", 4));
    REQUIRE(node.ok());
    a = (*node)->node_id();
  }

  // A job running attempt 0 with its one rank on node a, told its budget.
  TrackedJob& Running(int64_t log_limit = 0) {
    TrackedJob& job = Add(RUNNING);
    job.info.mutable_spec()->set_log_limit_bytes(log_limit);
    AttemptInfo* attempt = job.info.add_attempts();
    attempt->set_attempt(0);
    RankInfo* rank = attempt->add_ranks();
    rank->set_rank(0);
    rank->set_node_id(a);
    rank->set_node_name("a");
    RankSlot slot;
    slot.node_id = a;
    job.run.slots.push_back(slot);
    job.active = true;
    job_logs.StartAttempt(job);
    return job;
  }
  static LogData Log(const std::string& job_id, int attempt, int rank, const std::string& data) {
    LogData message;
    message.set_job_id(job_id);
    message.set_attempt(attempt);
    message.set_rank(rank);
    message.set_data(data);
    return message;
  }
  std::string Read(const std::string& job_id) {
    int64_t end = 0;
    auto data = rank_logs.Read(job_id, 0, 0, rank_logs.Size(job_id, 0), &end);
    REQUIRE(data.ok());
    return *data;
  }
};

}  // namespace

TEST_CASE("a rank's output is kept only from its node in the current attempt, after the attempt's banner",
          "[jobs][logs]") {
  LogsFixture f;
  TrackedJob& job = f.Running();
  const std::string id = job.info.job_id();
  auto b = f.nodes.Register(JobTableFixture::Node("b", 4, 2));
  REQUIRE(b.ok());
  f.job_logs.OnLog((*b)->node_id(), LogsFixture::Log(id, 0, 0, "made up by another node\n"));
  f.job_logs.OnLog(f.a, LogsFixture::Log(id, 1, 0, "of an attempt that is not\n"));
  f.job_logs.OnLog(f.a, LogsFixture::Log(id, 0, 3, "of a rank that is not\n"));
  f.job_logs.OnLog(f.a, LogsFixture::Log("job-0099", 0, 0, "of a job that is not\n"));
  REQUIRE(f.rank_logs.JobBytes(id) == 0);
  f.job_logs.OnLog(f.a, LogsFixture::Log(id, 0, 0, "epoch 1\n"));
  f.job_logs.OnLog(f.a, LogsFixture::Log(id, 0, 0, "epoch 2\n"));
  REQUIRE(f.Read(id) == AttemptBanner(0, "a") + "epoch 1\nepoch 2\n");
}

TEST_CASE("a rank's output past its log limit is dropped, with one line that says so", "[jobs][logs][log_limit]") {
  LogsFixture f;
  TrackedJob& job = f.Running(64 << 10);
  const std::string id = job.info.job_id();
  const int64_t allowed = (64 << 10) + LogAdmission::kLineRoom;
  f.job_logs.OnLog(f.a, LogsFixture::Log(id, 0, 0, Letters(static_cast<size_t>(allowed) + 100)));
  f.job_logs.OnLog(f.a, LogsFixture::Log(id, 0, 0, "more\n"));
  REQUIRE(f.Read(id) == AttemptBanner(0, "a") + Letters(static_cast<size_t>(allowed)) +
                            "\n[clusterd: the head drops the rest of this rank's output in attempt 0: its node sent "
                            "more than this rank's log limit (64.0 KiB) allows]\n");
}

TEST_CASE("a job file asking to keep more of a rank's output than the head allows is refused, naming the key",
          "[jobs][logs][log_limit]") {
  LogsFixture f;
  f.config.log_limit_max_mb = 1;
  JobSpec spec;
  spec.set_log_limit_bytes(int64_t{1} << 20);
  REQUIRE(f.job_logs.CheckSpec(spec).ok());
  spec.set_log_limit_bytes((int64_t{1} << 20) + 1);
  Status refused = f.job_logs.CheckSpec(spec);
  REQUIRE(refused.code() == Status::Code::kInvalidArgument);
  REQUIRE_THAT(refused.message(), Catch::StartsWith("key 'log_limit': "));
  REQUIRE_THAT(refused.message(), Catch::EndsWith("(log_limit_max_mb)"));
}

TEST_CASE("a log store past its limit loses the logs of the job that ended first, never a running job's",
          "[jobs][logs][log_limit]") {
  LogsFixture f(400 << 10);  // removes from 360 KiB down to 320 KiB
  TrackedJob& submitted_first = f.Add(RUNNING);
  TrackedJob& ended_first = f.Add(RUNNING);
  f.clock.AdvanceMillis(1000);
  f.table.SetState(ended_first, SUCCEEDED, "done");
  f.clock.AdvanceMillis(1000);
  f.table.SetState(submitted_first, SUCCEEDED, "done");
  // Past 64 KiB a log has a file of its own: removing it frees its bytes at once.
  f.rank_logs.Append(submitted_first.info.job_id(), 0, Letters(100 << 10));
  f.rank_logs.Append(ended_first.info.job_id(), 0, Letters(100 << 10));
  TrackedJob& running = f.Running();
  const std::string id = running.info.job_id();
  f.job_logs.OnLog(f.a, LogsFixture::Log(id, 0, 0, Letters(100 << 10)));
  REQUIRE(f.rank_logs.JobBytes(ended_first.info.job_id()) > 0);

  f.job_logs.OnLog(f.a, LogsFixture::Log(id, 0, 0, Letters(80 << 10)));  // past 360 KiB
  const std::string why = "logs removed to keep the log store under 400.0 KiB (log_store_limit_mb)";
  REQUIRE(f.rank_logs.JobBytes(ended_first.info.job_id()) == 0);
  REQUIRE(ended_first.info.logs_released() == why);
  REQUIRE(LatestJobs(f.store.entries()).at(ended_first.info.job_id()).logs_released() == why);
  REQUIRE(f.rank_logs.JobBytes(submitted_first.info.job_id()) == 100 << 10);
  REQUIRE(submitted_first.info.logs_released().empty());
  REQUIRE(f.Read(id) == AttemptBanner(0, "a") + Letters(100 << 10) + Letters(80 << 10));
}

TEST_CASE("a deleted job's logs go with it", "[jobs][logs]") {
  LogsFixture f;
  TrackedJob& job = f.Add(SUCCEEDED);
  const std::string id = job.info.job_id();
  f.rank_logs.Append(id, 0, "kept until the job is deleted\n");
  REQUIRE(f.rank_logs.JobBytes(id) > 0);
  REQUIRE(f.table.Remove(job, "deleted by a test").ok());
  REQUIRE(f.rank_logs.JobBytes(id) == 0);
  REQUIRE(f.rank_logs.Size(id, 0) == 0);
}
