#include <catch2/catch.hpp>

#include <cstdlib>
#include <ctime>
#include <string>

#include "cli/job_printer.h"
#include "common/logs/attempt_banner.h"

using namespace clusterd;
using namespace clusterd::cli;

namespace {

// Local times in these tests are UTC; the process's TZ comes back after.
class UtcZone {
 public:
  UtcZone() {
    const char* old = std::getenv("TZ");
    had_ = old != nullptr;
    if (had_) old_ = old;
    setenv("TZ", "UTC", 1);
    tzset();
  }
  ~UtcZone() {
    if (had_) {
      setenv("TZ", old_.c_str(), 1);
    } else {
      unsetenv("TZ");
    }
    tzset();
  }

 private:
  bool had_ = false;
  std::string old_;
};

constexpr int64_t kT0 = 1714564800000;  // 2024-05-01 12:00:00 UTC

JobInfo LinearJob() {
  JobInfo job;
  job.set_job_id("job-0001");
  JobSpec* spec = job.mutable_spec();
  spec->set_name("linear-regression");
  spec->add_entrypoint("/bin/sh");
  spec->add_entrypoint("-c");
  spec->add_entrypoint("build/examples/linear --epochs 20");
  spec->set_working_dir("/home/u/proj");
  spec->set_num_workers(2);
  (*spec->mutable_resources_per_worker()->mutable_amounts())["CPU"] = 1;
  spec->set_placement(SPREAD);
  spec->set_max_failures(1);
  spec->mutable_checkpoint()->set_dir("checkpoints/linear");
  spec->mutable_checkpoint()->set_keep(2);
  spec->set_config_json("{\"samples\":1000}");
  spec->add_env_passthrough("DVC_*");
  (*job.mutable_passthrough_env())["DVC_REMOTE"] = "s3://secret";
  job.set_state(SUCCEEDED);
  job.set_reason("all 2 ranks exited 0 (attempt 1)");
  job.set_submit_unix_ms(kT0);
  job.set_end_unix_ms(kT0 + 65'000);
  job.set_latest_checkpoint("/home/u/proj/checkpoints/linear/epoch-19");
  for (int a = 0; a < 2; ++a) {
    AttemptInfo* attempt = job.add_attempts();
    attempt->set_attempt(a);
    attempt->set_start_unix_ms(kT0 + 1000 + a * 30'000);
    attempt->set_end_unix_ms(kT0 + 30'000 + a * 35'000);
    attempt->set_master_addr("10.0.0.1");
    attempt->set_master_port(29500 + a);
    if (a == 0) attempt->set_failure_reason("rank 1 exited with code 3 on node w2 (attempt 0); last log lines:\nboom\n");
    if (a == 1) attempt->set_restored_checkpoint("epoch-9");
    for (int r = 0; r < 2; ++r) {
      RankInfo* rank = attempt->add_ranks();
      rank->set_rank(r);
      rank->set_node_name(r == 0 ? "head" : "w2");
      rank->set_node_id(r == 0 ? "n-1" : "n-2");
      rank->set_node_rank(r);
      rank->set_pid(1000 + 10 * a + r);
      rank->set_exited(true);
      if (a == 0 && r == 0) rank->set_signal(15);
      if (a == 0 && r == 1) rank->set_exit_code(3);
    }
  }
  return job;
}

MetricRecord Record(int attempt, int rank, int64_t index, int64_t unix_ms,
                    std::map<std::string, double> values, const std::string& checkpoint = "") {
  MetricRecord record;
  record.set_attempt(attempt);
  record.set_rank(rank);
  record.set_index(index);
  record.set_unix_ms(unix_ms);
  for (const auto& [name, value] : values) (*record.mutable_values())[name] = value;
  record.set_checkpoint(checkpoint);
  return record;
}

}  // namespace

TEST_CASE("durations and times read as a person would write them", "[cli]") {
  UtcZone utc;
  CHECK(FormatDuration(850) == "850ms");
  CHECK(FormatDuration(12'400) == "12s");
  CHECK(FormatDuration(185'000) == "3m05s");
  CHECK(FormatDuration(7'500'000) == "2h05m");
  CHECK(FormatDuration(97'200'000) == "1d03h");
  CHECK(FormatDuration(-1) == "-");
  CHECK(FormatLocalTime(kT0) == "2024-05-01 12:00:00");
  CHECK(FormatLocalTime(0) == "-");
  CHECK(HangingIndent("failed; last log lines:\nTraceback\n  x\n\n", 2) == "failed; last log lines:\n  Traceback\n    x");
  CHECK(Truncate("short", 10) == "short");
  CHECK(Truncate("tail lines:\nboom\n", 20) == "tail lines: boom");
  CHECK(Truncate("a reason that goes on\nand on", 12) == "a reason ...");
  // Never cut inside a UTF-8 sequence: "é" is two bytes.
  CHECK(Truncate("abcdé fgh", 8) == "abcd...");
}

TEST_CASE("entrypoints and summaries show what the user wrote", "[cli]") {
  JobSpec spec = LinearJob().spec();
  CHECK(FormatEntrypoint(spec) == "build/examples/linear --epochs 20");
  CHECK(FormatSpecSummary(spec) == "linear-regression, 2 workers x {1 CPU}, SPREAD, max_failures 1");
  spec.clear_entrypoint();
  spec.add_entrypoint("python3");
  spec.add_entrypoint("train.py");
  spec.add_entrypoint("--name=it's here");
  CHECK(FormatEntrypoint(spec) == "python3 train.py '--name=it'\\''s here'");
  spec.set_num_workers(1);
  (*spec.mutable_resources_per_worker()->mutable_amounts())["GPU"] = 1;
  spec.set_placement(PACK);
  spec.set_max_failures(0);
  CHECK(FormatSpecSummary(spec) == "linear-regression, 1 worker x {1 CPU, 1 GPU}, PACK, max_failures 0");
}

TEST_CASE("the jobs table has one aligned row per job", "[cli]") {
  UtcZone utc;
  JobInfo done = LinearJob();
  JobInfo waiting;
  waiting.set_job_id("job-0002");
  waiting.mutable_spec()->set_name("big");
  waiting.mutable_spec()->set_num_workers(16);
  waiting.set_state(INFEASIBLE);
  waiting.set_reason("no set of live nodes can hold 16 workers of {8 GPU}: the largest node has 0 GPU, and none can grow");
  waiting.set_submit_unix_ms(kT0 + 120'000);
  waiting.set_owner("alice");  // the others are from before owners: the admin's
  JobInfo running = LinearJob();
  running.set_job_id("job-0003");
  running.set_state(RUNNING);
  running.set_reason("placed");
  running.set_end_unix_ms(0);
  running.mutable_attempts()->DeleteSubrange(1, 1);
  CHECK(FormatJobsTable({done, waiting, running}, kT0 + 601'000) ==
        "ID        NAME               OWNER  STATE       ATTEMPT  WORKERS  SUBMITTED            DURATION  REASON\n"
        "job-0001  linear-regression  admin  SUCCEEDED   2/2      2        2024-05-01 12:00:00  1m04s     "
        "all 2 ranks exited 0 (attempt 1)\n"
        "job-0002  big                alice  INFEASIBLE  0/1      16       2024-05-01 12:02:00  -         "
        "no set of live nodes can hold 16 workers of {8 GPU}: the ...\n"
        "job-0003  linear-regression  admin  RUNNING     1/2      2        2024-05-01 12:00:00  10m00s    placed\n");
  CHECK(FormatJobsTable({}, kT0) == "No jobs.\n");
}

TEST_CASE("an array is one row of the jobs table, its jobs counted by the head or from those listed", "[cli][array]") {
  UtcZone utc;
  JobInfo first;
  first.set_job_id("job-0001");
  first.mutable_spec()->set_name("sweep-by-hand");
  first.mutable_spec()->set_num_workers(1);
  first.mutable_spec()->set_array_id("job-0001");
  first.mutable_spec()->mutable_array()->set_count(100000);
  first.set_state(SUCCEEDED);
  first.set_submit_unix_ms(kT0);
  JobInfo second = first;
  second.set_job_id("job-0002");
  second.set_state(RUNNING);
  const std::string header =
      "ID        NAME           OWNER  STATE  ATTEMPT      WORKERS  SUBMITTED            DURATION  REASON\n";
  // Only two of 100,000 listed: counted from them, and said so.
  CHECK(FormatJobsTable({first, second}, kT0) ==
        header + "job-0001  sweep-by-hand  admin  ARRAY  100000 jobs  1        2024-05-01 12:00:00            "
                 "1 RUNNING, 1 SUCCEEDED (of the 2 listed; clusterctl jobs --array ID lists them all)\n");
  // The head's counts, over all of them, win over those listed.
  ArrayStates counted;
  counted.set_array_id("job-0001");
  for (auto [state, count] : {std::pair<JobState, int>{RUNNING, 40}, {SUCCEEDED, 99960}}) {
    JobStateCount* entry = counted.add_counts();
    entry->set_state(state);
    entry->set_count(count);
  }
  CHECK(FormatJobsTable({first}, kT0, {counted}) ==
        header + "job-0001  sweep-by-hand  admin  ARRAY  100000 jobs  1        2024-05-01 12:00:00            "
                 "40 RUNNING, 99960 SUCCEEDED\n");
}

TEST_CASE("one job's details show attempts, placement and exits", "[cli]") {
  UtcZone utc;
  CHECK(FormatJobDetail(LinearJob(), kT0 + 100'000) ==
        "Job job-0001 (linear-regression): SUCCEEDED\n"
        "  reason:       all 2 ranks exited 0 (attempt 1)\n"
        "  attempts:     2 of 2 (max_failures 1)\n"
        "  owner:        admin\n"
        "  submitted:    2024-05-01 12:00:00\n"
        "  ended:        2024-05-01 12:01:05\n"
        "  duration:     1m04s\n"
        "  entrypoint:   build/examples/linear --epochs 20\n"
        "  working dir:  /home/u/proj\n"
        "  workers:      2 x {1 CPU}, SPREAD\n"
        "  checkpoint:   /home/u/proj/checkpoints/linear/epoch-19 (dir checkpoints/linear, keep 2)\n"
        "  passthrough:  DVC_* -> DVC_REMOTE\n"
        "  config:       {\"samples\":1000}\n"
        "\n"
        "Attempt 0: started 2024-05-01 12:00:01, ended 2024-05-01 12:00:30, 29s\n"
        "  master: 10.0.0.1:29500\n"
        "  failure: rank 1 exited with code 3 on node w2 (attempt 0); last log lines:\n"
        "    boom\n"
        "  RANK  NODE  LOCAL_RANK  NODE_RANK  GPUS  PID   EXIT\n"
        "  0     head  0           0          -     1000  signal 15 (SIGTERM)\n"
        "  1     w2    0           1          -     1001  3\n"
        "\n"
        "Attempt 1: started 2024-05-01 12:00:31, ended 2024-05-01 12:01:05, 34s\n"
        "  master: 10.0.0.1:29501\n"
        "  resumed from: epoch-9\n"
        "  RANK  NODE  LOCAL_RANK  NODE_RANK  GPUS  PID   EXIT\n"
        "  0     head  0           0          -     1010  0\n"
        "  1     w2    0           1          -     1011  0\n");

  JobInfo paced = LinearJob();
  paced.mutable_spec()->mutable_checkpoint()->set_upload_bytes_per_s(250 << 20);
  CHECK(FormatJobDetail(paced, kT0 + 100'000).find("  checkpoint:   /home/u/proj/checkpoints/linear/epoch-19 (dir "
                                                   "checkpoints/linear, keep 2), uploaded at 250.0 MiB/s at most\n") !=
        std::string::npos);

  JobInfo running = LinearJob();
  running.set_state(RUNNING);
  running.clear_reason();
  running.set_end_unix_ms(0);
  running.clear_latest_checkpoint();
  running.mutable_spec()->clear_checkpoint();
  running.mutable_spec()->clear_env_passthrough();
  running.mutable_spec()->clear_config_json();
  running.mutable_spec()->mutable_resources_per_worker()->mutable_amounts()->insert({"GPU", 2});
  running.mutable_attempts()->DeleteSubrange(1, 1);
  AttemptInfo* attempt = running.mutable_attempts(0);
  attempt->set_end_unix_ms(0);
  attempt->clear_failure_reason();
  attempt->mutable_ranks(0)->set_exited(false);
  attempt->mutable_ranks(0)->add_gpus(0);
  attempt->mutable_ranks(0)->add_gpus(1);
  attempt->mutable_ranks(1)->set_exited(false);
  attempt->mutable_ranks(1)->set_pid(0);
  running.set_checkpoint_refused("checkpoint_000001 (epoch 1, 100 bytes, attempt 0) was uploaded but not kept: why");
  CHECK(FormatJobDetail(running, kT0 + 61'000) ==
        "Job job-0001 (linear-regression): RUNNING\n"
        "  attempts:     1 of 2 (max_failures 1)\n"
        "  owner:        admin\n"
        "  submitted:    2024-05-01 12:00:00\n"
        "  duration:     1m00s\n"
        "  entrypoint:   build/examples/linear --epochs 20\n"
        "  working dir:  /home/u/proj\n"
        "  workers:      2 x {1 CPU, 2 GPU}, SPREAD\n"
        "  checkpoint:   none yet\n"
        "  not kept:     checkpoint_000001 (epoch 1, 100 bytes, attempt 0) was uploaded but not kept: why\n"
        "\n"
        "Attempt 0: started 2024-05-01 12:00:01, running for 1m00s so far\n"
        "  master: 10.0.0.1:29500\n"
        "  RANK  NODE  LOCAL_RANK  NODE_RANK  GPUS  PID   EXIT\n"
        "  0     head  0           0          0,1   1000  running\n"
        "  1     w2    0           1          -     -     running\n");
}

TEST_CASE("a rank's exit reads as code, signal, running or lost", "[cli]") {
  RankInfo rank;
  CHECK(FormatRankExit(rank, false) == "running");
  CHECK(FormatRankExit(rank, true) == "lost");
  rank.set_exited(true);
  CHECK(FormatRankExit(rank, true) == "0");
  rank.set_exit_code(137);
  CHECK(FormatRankExit(rank, true) == "137");
  rank.set_signal(9);
  CHECK(FormatRankExit(rank, true) == "signal 9 (SIGKILL)");
  rank.set_signal(33);
  CHECK(FormatRankExit(rank, true) == "signal 33");
}

TEST_CASE("metrics show rank 0's reports in order, one column per name", "[cli]") {
  UtcZone utc;
  MetricsReply reply;
  *reply.add_records() = Record(1, 0, 0, kT0 + 40'000, {{"loss", 0.25}, {"accuracy", 0.9}}, "/ck/epoch-2");
  *reply.add_records() = Record(0, 0, 1, kT0 + 20'000, {{"loss", 0.5}}, "/ck/epoch-1");
  *reply.add_records() = Record(0, 1, 0, kT0 + 10'000, {{"loss", 9.0}, {"rank1_only", 1}});
  *reply.add_records() = Record(0, 0, 0, kT0 + 10'000, {{"loss", 1.0 / 3}});
  CHECK(FormatMetricsTable(reply) ==
        "ATTEMPT  INDEX  TIME                 accuracy  loss      CHECKPOINT\n"
        "0        0      2024-05-01 12:00:10  -         0.333333  -\n"
        "0        1      2024-05-01 12:00:20  -         0.5       /ck/epoch-1\n"
        "1        0      2024-05-01 12:00:40  0.9       0.25      /ck/epoch-2\n");
  CHECK(FormatMetricsCsv(reply) ==
        "attempt,index,unix_ms,accuracy,loss,checkpoint\n"
        "0,0,1714564810000,,0.3333333333333333,\n"
        "0,1,1714564820000,,0.5,/ck/epoch-1\n"
        "1,0,1714564840000,0.9,0.25,/ck/epoch-2\n");

  MetricsReply odd;
  *odd.add_records() = Record(0, 0, 0, kT0, {{"a,b", 1e-12}, {"big", 1e20}}, "/ck/with,comma \"q\"");
  CHECK(FormatMetricsCsv(odd) ==
        "attempt,index,unix_ms,\"a,b\",big,checkpoint\n"
        "0,0,1714564800000,1e-12,1e+20,\"/ck/with,comma \"\"q\"\"\"\n");

  MetricsReply none;
  *none.add_records() = Record(0, 1, 0, kT0, {{"loss", 1}});
  CHECK(FormatMetricsTable(none) == "No metrics reported by rank 0 yet.\n");
  CHECK(FormatMetricsCsv(none) == "attempt,index,unix_ms,checkpoint\n");
}

TEST_CASE("metrics say how many reports the head kept when it thinned them", "[cli][metrics_bound]") {
  UtcZone utc;
  MetricsReply reply;
  for (int64_t index : {0, 4, 6, 7}) *reply.add_records() = Record(0, 0, index, kT0, {{"loss", 1}});
  *reply.add_records() = Record(1, 0, 0, kT0, {{"loss", 1}});
  const std::string table = FormatMetricsTable(reply);
  CHECK(table.find("Kept 5 of the job's 9 reports: the head thins") != std::string::npos);
  CHECK(FormatMetricsCsv(reply).find("Kept") == std::string::npos);  // CSV stays data only
  MetricsReply whole;
  for (int64_t index : {0, 1, 2}) *whole.add_records() = Record(0, 0, index, kT0, {{"loss", 1}});
  CHECK(FormatMetricsTable(whole).find("Kept") == std::string::npos);
}

TEST_CASE("log chunks become whole lines, prefixed by rank", "[cli]") {
  LogLines lines(true);
  CHECK(lines.Add(0, "epoch 1 lo") == "");
  CHECK(lines.Add(1, "hello\nwor") == "[rank 1] hello\n");
  CHECK(lines.Add(0, "ss 0.5\nepoch 2\n") == "[rank 0] epoch 1 loss 0.5\n[rank 0] epoch 2\n");
  CHECK(lines.Add(1, "") == "");
  CHECK(lines.Add(1, "ld\r\n\n") == "[rank 1] world\n[rank 1] \n");
  CHECK(lines.Add(0, "no newline at the end") == "");
  CHECK(lines.Add(2, "tail") == "");
  CHECK(lines.Flush() == "[rank 0] no newline at the end\n[rank 2] tail\n");
  CHECK(lines.Flush() == "");

  LogLines plain(false);
  CHECK(plain.Add(0, "a\nb") == "a\n");
  CHECK(plain.Flush() == "b\n");

  // A line that never ends is shown once it passes the cap.
  LogLines bar(false);
  std::string big(LogLines::kMaxPartialLine + 1, 'x');
  CHECK(bar.Add(0, big) == big + "\n");
  CHECK(bar.Flush() == "");
}

TEST_CASE("log lines of one attempt are told apart by the head's banners", "[cli]") {
  CHECK(ParseAttemptBanner("--- attempt 0 on head ---") == 0);
  CHECK(ParseAttemptBanner("--- attempt 12 on w-2.example ---") == 12);
  CHECK(ParseAttemptBanner("--- attempt x on w ---") == -1);
  CHECK(ParseAttemptBanner("--- attempt 1 on w") == -1);
  CHECK(ParseAttemptBanner("epoch 1") == -1);

  LogLines second(true, 1);
  CHECK(second.Add(0, "--- attempt 0 on head ---\nold line\n--- attempt 1 on head ---\nnew") ==
        "[rank 0] --- attempt 1 on head ---\n");
  CHECK(second.Add(1, "--- attempt 0 on w2 ---\nold\n") == "");
  CHECK(second.Add(1, "--- attempt 1 on w2 ---\nnew too\n") == "[rank 1] --- attempt 1 on w2 ---\n[rank 1] new too\n");
  CHECK(second.Flush() == "[rank 0] new\n");
}

TEST_CASE("attempts the head no longer keeps in full are counted and their first and last failures shown", "[cli]") {
  UtcZone utc;
  JobInfo job = LinearJob();
  job.mutable_spec()->set_max_failures(40);
  for (int i = 0; i < 2; ++i) job.mutable_attempts(i)->set_attempt(30 + i);
  AttemptsSummary* older = job.mutable_older_attempts();
  older->set_count(30);
  older->set_failed(30);
  older->set_first_start_unix_ms(kT0 - 600'000);
  older->set_first_failed_attempt(0);
  older->set_first_failure_reason("rank 0 exited with code 2 on node a (attempt 0); last log lines:\nno such file");
  older->set_last_failed_attempt(29);
  older->set_last_failure_reason("rank 0 exited with code 2 on node a (attempt 29)");
  std::string detail = FormatJobDetail(job, kT0 + 100'000);
  CHECK_THAT(detail, Catch::Contains("  attempts:     32 of 41 (max_failures 40)\n"));
  CHECK_THAT(detail, Catch::Contains("  duration:     11m05s\n"));  // from attempt 0, not the oldest kept
  CHECK_THAT(detail, Catch::Contains(
                         "\nAttempts 0..29: not kept in full (the head keeps the newest 2); 30 of them failed\n"
                         "  first failure (attempt 0): rank 0 exited with code 2 on node a (attempt 0); last log lines:\n"
                         "    no such file\n"
                         "  last failure (attempt 29): rank 0 exited with code 2 on node a (attempt 29)\n"
                         "\nAttempt 30: started"));
  CHECK_THAT(FormatJobsTable({job}, kT0 + 100'000), Catch::Contains(" 32/41 "));
}

TEST_CASE("a job waiting out its restart delay shows when its next attempt starts", "[cli][backoff]") {
  UtcZone utc;
  JobInfo job = LinearJob();
  job.set_state(RESTARTING);
  job.set_end_unix_ms(0);
  job.set_reason("retrying in 4s after attempt 1 failed: rank 0 exited with code 1");
  job.set_retry_at_unix_ms(kT0 + 70'000);
  CHECK_THAT(FormatJobDetail(job, kT0 + 66'000),
             Catch::Contains("  reason:       retrying in 4s after attempt 1 failed: rank 0 exited with code 1\n"
                             "  attempts:     2 of 2 (max_failures 1)\n"
                             "  next attempt: 2024-05-01 12:01:10\n"));
}

TEST_CASE("one job's details show each preemption: when, by which job, and the checkpoint it resumed from",
          "[cli][preemption]") {
  UtcZone utc;
  JobInfo job = LinearJob();
  job.mutable_spec()->set_max_preemptions(3);
  job.set_preemptions(1);
  AttemptInfo& first = *job.mutable_attempts(0);
  first.clear_failure_reason();
  first.set_preempted_by("job-0009");
  first.set_preempt_notice_unix_ms(kT0 + 29'000);
  first.set_preempt_deadline_unix_ms(kT0 + 29'500);
  const std::string text = FormatJobDetail(job, kT0 + 100'000);
  CHECK_THAT(text, Catch::Contains("  attempts:     2 of 3 (max_failures 1; 1 preempted, not counted)\n"));
  CHECK_THAT(text, Catch::Contains("  preemption:   max_preemptions 3\n"));
  CHECK_THAT(text, Catch::Contains("  preempted: by job-0009 at 2024-05-01 12:00:29 (SIGTERM at 2024-05-01 12:00:29); "
                                   "resumed from epoch-9 in attempt 1\n"));
  // Under notice now: when its ranks get SIGTERM, and the grace after it.
  PreemptionNotice* notice = job.mutable_preempting();
  notice->set_by_job("job-0010");
  notice->set_deadline_unix_ms(kT0 + 90'000);
  notice->set_grace_ms(30'000);
  CHECK_THAT(FormatJobDetail(job, kT0 + 100'000),
             Catch::Contains("  preemption:   being preempted by job-0010: SIGTERM at 2024-05-01 12:01:30, SIGKILL 30 s "
                             "later; max_preemptions 3\n"));
}
