// Rank logs in S3 through a failover (docs/HA.md, rank logs): two heads in
// HA on three real etcd members and a real S3 (radosgw), a worker, and a
// rank that prints numbered, timestamped lines 50 times a second through
// the leader's SIGKILL. The new leader reads the logs back from S3:
// `clusterctl logs` shows lines 1..N with at most one gap, no longer than
// the documented window (ha_log_flush_ms plus what was in flight), and the
// lines printed after the failover follow; a `clusterctl logs -f` started
// before the kill follows through it to the job's end. The measured gap is
// printed. Deleting the job deletes its chunks in S3.
#include <grpcpp/grpcpp.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "ceph_fixture.h"
#include "cluster.grpc.pb.h"
#include "common/logs/log_chunks.h"
#include "common/logs/log_store.h"
#include "common/net/auth.h"
#include "common/storage/s3_client.h"
#include "daemon/event_loop.h"
#include "daemon/ha/log_mirror.h"
#include "etcd_members.h"
#include "harness.h"
#include "job_json.h"
#include "test_skip.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

namespace {

constexpr int kLineEveryMs = 20;
// ha_log_flush_ms's default, which the heads run with.
constexpr int kFlushMs = 1000;

bool Leads(const std::string& address, const std::string& token) {
  auto stub = HeadService::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  AttachToken(&context, token);
  context.set_deadline(std::chrono::system_clock::now() + 2s);
  ClusterStatus reply;
  return stub->GetStatus(&context, StatusRequest(), &reply).ok();
}

struct NumberedLine {
  int number = 0;
  int64_t unix_ms = 0;
};

// The rank's "line <n> <unix ms>" lines, in the order shown; other lines
// (banners, the head's notes) left out.
std::vector<NumberedLine> NumberedLines(const std::string& text) {
  std::vector<NumberedLine> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    NumberedLine parsed;
    char tail = 0;
    if (std::sscanf(line.c_str(), "line %d %ld%c", &parsed.number, &parsed.unix_ms, &tail) == 2) {
      lines.push_back(parsed);
    }
  }
  return lines;
}

struct Gap {
  int gaps = 0;           // places where numbers are missing
  int lines = 0;          // missing in all
  int64_t ms = 0;         // printed between the lines either side of the widest gap, less one line's interval
  int out_of_order = 0;   // a number not above the one before (repeated or going back)
  int last_before_gap = 0;
};

Gap GapOf(const std::vector<NumberedLine>& lines) {
  Gap gap;
  for (size_t i = 1; i < lines.size(); ++i) {
    const int step = lines[i].number - lines[i - 1].number;
    if (step <= 0) {
      ++gap.out_of_order;
    } else if (step > 1) {
      ++gap.gaps;
      gap.lines += step - 1;
      const int64_t ms = lines[i].unix_ms - lines[i - 1].unix_ms - kLineEveryMs;
      if (ms > gap.ms) {
        gap.ms = ms;
        gap.last_before_gap = lines[i - 1].number;
      }
    }
  }
  return gap;
}

int64_t UnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

TEST_CASE("HA heads: a rank's log stays whole through the leader's SIGKILL but for the documented window, and "
          "a deleted job's chunks leave S3",
          "[ha_logs][ha][etcd][ceph]") {
  std::string why;
  if (!EtcdMembers::Installed(&why)) {
    SkipTest(why);
    return;
  }
  REQUIRE_CEPH(ceph);
  REQUIRE(ceph->CreateBucket("ha-logs"));
  UseCeph(*ceph);
  EtcdMembers etcd(3);
  REQUIRE(etcd.error() == "");  // it holds the members' last log lines when they failed to start

  Cluster a, b, worker;
  const std::string token = "ha-logs-token-0123456789abcdef";
  const std::string token_file = worker.temp_dir() + "/cluster.token";
  {
    std::ofstream(token_file) << token << "\n";
    REQUIRE(chmod(token_file.c_str(), 0600) == 0);
  }
  auto head_flags = [&](const std::string& name) {
    return std::vector<std::string>{"--dashboard-port", std::to_string(FreePort()), "--ha", etcd.url("/ha-logs"),
                                    "--store", "s3://ha-logs/cluster", "--s3-endpoint", ceph->endpoint(),
                                    "--token-file", token_file, "--num-cpus", "0", "--num-gpus", "0",
                                    "--node-name", name, "--heartbeat-ms", "200", "--node-timeout-ms", "1500"};
  };
  RunResult started_a = a.StartHead(head_flags("head-a"));
  INFO(started_a.out << started_a.err);
  REQUIRE(started_a.exit_code == 0);
  REQUIRE(WaitFor([&] { return Leads(a.address(), token); }, 5s, 50ms));
  RunResult started_b = b.StartHead(head_flags("head-b"));
  INFO(started_b.out << started_b.err);
  REQUIRE(started_b.exit_code == 0);

  const std::string both = a.address() + "," + b.address();
  RunResult joined = Run({CLUSTERD_BIN, "start", "--address", both, "--temp-dir", worker.temp_dir(), "--node-name",
                          "w1", "--token-file", token_file, "--num-cpus", "1", "--num-gpus", "0", "--heartbeat-ms",
                          "200"});
  INFO(joined.out << joined.err);
  REQUIRE(joined.exit_code == 0);

  // Numbered lines, each with when it was printed, until released.
  const std::string flag = worker.temp_dir() + "/release";
  const std::string script = worker.temp_dir() + "/numbered.py";
  std::ofstream(script) << "import os, sys, time\n"
                           "i = 0\n"
                           "while True:\n"
                           "    i += 1\n"
                           "    print(f'line {i} {int(time.time() * 1000)}', flush=True)\n"
                           "    if os.path.exists(sys.argv[1]):\n"
                           "        break\n"
                           "    time.sleep("
                        << kLineEveryMs / 1000.0 << ")\nprint('released', flush=True)\n";
  const std::string job_file = worker.temp_dir() + "/numbered.yaml";
  std::ofstream(job_file) << "name: numbered\nentrypoint: /usr/bin/python3 -u " << script << " " << flag << "\n";
  RunResult submitted = a.Ctl({"--address", both, "--token", token, "submit", job_file, "--json"}, 30s);
  INFO(submitted.out << submitted.err);
  REQUIRE(submitted.exit_code == 0);
  const std::string job_id = SubmittedJobId(submitted);
  auto lines_from = [&](const std::string& heads) {
    RunResult logs = a.Ctl({"--address", heads, "--token", token, "logs", job_id});
    return logs.exit_code == 0 ? NumberedLines(logs.out) : std::vector<NumberedLine>{};
  };
  // Five seconds of output before the kill: more than the window by far,
  // so that a new leader without the old one's logs is told apart.
  REQUIRE(WaitFor([&] { return lines_from(a.address()).size() >= 250; }, 60s, 200ms));

  // A follower from before the kill, given both heads.
  RunResult followed;
  std::thread follower(
      [&] { followed = a.Ctl({"--address", both, "--token", token, "logs", "-f", job_id}, 120s); });
  std::this_thread::sleep_for(500ms);

  const int64_t killed_unix_ms = UnixMs();
  a.KillHead(SIGKILL);
  REQUIRE(WaitFor([&] { return Leads(b.address(), token); }, 15s, 20ms));
  // Lines printed well after the failover reach the new leader: the worker
  // registered with it and its output is appended after what S3 held.
  REQUIRE(WaitFor(
      [&] {
        auto lines = lines_from(b.address());
        return !lines.empty() && lines.back().unix_ms > killed_unix_ms + 3000;
      },
      60s, 200ms));
  std::ofstream(flag) << "go\n";
  auto state_on_b = [&] {
    RunResult job = a.Ctl({"--address", b.address(), "--token", token, "job", job_id, "--json"});
    return job.exit_code == 0 ? ParseJson<JobInfo>(job) : JobInfo();
  };
  REQUIRE(WaitFor([&] { return state_on_b().state() == SUCCEEDED; }, 30s, 200ms));
  CHECK(state_on_b().attempts_size() == 1);
  follower.join();

  RunResult logs = a.Ctl({"--address", both, "--token", token, "logs", job_id});
  INFO(logs.out.substr(0, 4000) << logs.err);
  REQUIRE(logs.exit_code == 0);
  CHECK_THAT(logs.out, Catch::EndsWith("released\n"));
  // One banner for the one attempt: the new leader reads the log back after
  // restoring the job and still sees that the log opens the attempt.
  size_t banners = 0;
  for (size_t at = logs.out.find("--- attempt "); at != std::string::npos; at = logs.out.find("--- attempt ", at + 1)) {
    ++banners;
  }
  CHECK(banners == 1);
  const std::vector<NumberedLine> lines = NumberedLines(logs.out);
  REQUIRE(lines.size() >= 250);
  CHECK(lines.front().number == 1);
  const Gap gap = GapOf(lines);
  std::cout << fmt::format(
                   "ha_logs: rank log through the leader's SIGKILL: {} lines shown of {}, {} missing in {} gap(s), "
                   "the widest {} ms (after line {}); ha_log_flush_ms {}, a line every {} ms\n",
                   lines.size(), lines.back().number, gap.lines, gap.gaps, gap.ms, gap.last_before_gap, kFlushMs,
                   kLineEveryMs)
            << std::flush;
  CHECK(gap.out_of_order == 0);
  CHECK(gap.gaps <= 1);
  // The window: what the dead leader received in its last flush interval,
  // and the write under way, plus what was in flight to it; a loaded
  // 2-core machine gets slack on top.
  CHECK(gap.ms <= kFlushMs + 1500);

  // The follower saw the whole job through: its lines, in order, to the end.
  INFO(followed.out.substr(0, 2000) << followed.err);
  CHECK(followed.exit_code == 0);
  CHECK_THAT(followed.out, Catch::Contains("released\n"));
  const std::vector<NumberedLine> seen = NumberedLines(followed.out);
  REQUIRE(!seen.empty());
  CHECK(seen.front().number == 1);
  CHECK(seen.back().number == lines.back().number);

  // The job's chunks are in S3, and go with the job.
  S3Client s3(ceph->ClientOptions());
  auto chunks = s3.List("ha-logs", JobChunksPrefix("cluster", job_id));
  REQUIRE(chunks.ok());
  CHECK(!chunks->empty());
  // One object per log and flush (about one a second here), not one per line.
  std::cout << fmt::format("ha_logs: {} lines in {} chunk objects\n", lines.back().number, chunks->size());
  CHECK(chunks->size() <= lines.size() / 10);
  RunResult deleted = a.Ctl({"--address", both, "--token", token, "delete", job_id});
  INFO(deleted.out << deleted.err);
  REQUIRE(deleted.exit_code == 0);
  CHECK(WaitFor(
      [&] {
        auto left = s3.List("ha-logs", JobChunksPrefix("cluster", job_id));
        return left.ok() && left->empty();
      },
      15s, 200ms));

  Run({CLUSTERD_BIN, "stop", "--force", "--temp-dir", worker.temp_dir()});
  b.Stop({"--force"});
}

namespace {

std::string WholeLog(const LogStore& store, const std::string& job_id, int rank) {
  int64_t end = 0;
  return store.Read(job_id, rank, 0, std::numeric_limits<int64_t>::max(), &end).value_or("<unreadable>");
}

}  // namespace

TEST_CASE("log mirror: output reaches S3 in one chunk per log and flush, a failed write goes again, past the "
          "buffer a gap is marked, and a new leader reads each log back and goes on after it",
          "[ha_logs][ceph]") {
  REQUIRE_CEPH(ceph);
  REQUIRE(ceph->CreateBucket("mirror"));
  S3ClientOptions client = ceph->ClientOptions();
  client.max_attempts = 1;  // a dead gateway fails a write at once
  const S3Location location{"mirror", "c1"};
  S3Client s3(ceph->ClientOptions());
  auto listed = [&](const std::string& job_id) {
    auto keys = s3.List("mirror", JobChunksPrefix("c1", job_id));
    return keys.ok() ? *keys : std::vector<std::string>{};
  };
  Cluster scratch;  // for its temporary folder
  const std::string dir = scratch.temp_dir();

  LogMirror::Options options;
  options.flush_ms = 60000;  // flushed by the test
  options.buffer_bytes = 1 << 10;
  options.term = 5;
  {
    LogStore store(dir + "/first");
    LogMirror first(client, location, options);
    REQUIRE(first.Seed(&store).ok());  // nothing in S3 yet
    store.set_observer(&first);
    store.Append("job-1", 0, "one\n");
    store.Append("job-1", 0, "two\n");
    store.Append("job-1", 1, "rank one\n");
    first.FlushNow();
    // One object per log and flush, named by its range and the term.
    CHECK(listed("job-1") == std::vector<std::string>{LogChunkKey("c1", "job-1", 0, 0, 8, 5),
                                                       LogChunkKey("c1", "job-1", 1, 0, 9, 5)});
    CHECK(first.counts().chunks_written == 2);

    // S3 away: the write fails and stays buffered; back, it goes with what came since.
    ceph->KillGateway();
    store.Append("job-1", 0, "three\n");
    first.FlushNow();
    CHECK(first.counts().failed_writes == 1);
    CHECK(first.counts().buffered_bytes == 6);
    REQUIRE(ceph->RestartGateway());
    store.Append("job-1", 0, "four\n");
    first.FlushNow();
    CHECK(first.counts().buffered_bytes == 0);
    CHECK(listed("job-1").size() == 3);

    // Past the buffer (1 KiB): that output is not written, and counted.
    store.Append("job-1", 0, std::string(2000, 'x') + "\n");
    CHECK(first.counts().bytes_lost == 2001);
    store.Append("job-1", 0, "after the loss\n");
    store.Append("job-2", 0, "a job that goes\n");
    first.Stop();  // writes what waits
    CHECK(first.counts().buffered_bytes == 0);
    CHECK(listed("job-2").size() == 1);
  }
  {
    // The next leader reads both logs back, the gap marked, and goes on after them.
    LogStore store(dir + "/second");
    options.term = 9;
    LogMirror second(client, location, options);
    REQUIRE(second.Seed(&store).ok());
    store.set_observer(&second);
    CHECK(WholeLog(store, "job-1", 0) ==
          "one\ntwo\nthree\nfour\n" + LogGapLine(2001) + "after the loss\n");
    CHECK(WholeLog(store, "job-1", 1) == "rank one\n");
    store.Append("job-1", 0, "new leader\n");
    second.FlushNow();
    // Its chunk starts where S3's ended (past the gap), in its own term.
    const int64_t s3_end = 8 + 6 + 5 + 2001 + 15;
    CHECK(listed("job-1").back() == LogChunkKey("c1", "job-1", 1, 0, 9, 5));
    auto rank0 = s3.List("mirror", JobChunksPrefix("c1", "job-1") + "rank-0/");
    REQUIRE(rank0.ok());
    CHECK(rank0->back() == LogChunkKey("c1", "job-1", 0, s3_end, s3_end + 11, 9));
    // A deleted job's chunks go.
    store.Delete("job-2", 1);
    second.FlushNow();
    CHECK(listed("job-2").empty());
    second.Stop();
  }
  {
    LogStore store(dir + "/third");
    LogMirror third(client, location, options);
    REQUIRE(third.Seed(&store).ok());
    CHECK(WholeLog(store, "job-1", 0) ==
          "one\ntwo\nthree\nfour\n" + LogGapLine(2001) + "after the loss\nnew leader\n");
    CHECK(WholeLog(store, "job-2", 0).empty());
  }
}

TEST_CASE("log mirror: a new leader reads 200 logs of 5 chunks each back, each whole and in order, and says how "
          "long it took",
          "[ha_logs][ceph]") {
  REQUIRE_CEPH(ceph);
  REQUIRE(ceph->CreateBucket("many"));
  const S3Location location{"many", "c"};
  S3Client s3(ceph->ClientOptions());
  constexpr int kLogs = 200, kChunks = 5;
  auto text_of = [](int log, int chunk) { return fmt::format("log {} chunk {} {}\n", log, chunk, std::string(100, 'x')); };
  for (int log = 0; log < kLogs; ++log) {
    int64_t offset = 0;
    for (int chunk = 0; chunk < kChunks; ++chunk) {
      const std::string text = text_of(log, chunk);
      const int64_t end = offset + static_cast<int64_t>(text.size());
      REQUIRE(s3.PutData("many", LogChunkKey("c", fmt::format("job-{}", log / 4), log % 4, offset, end, 3), text).ok());
      offset = end;
    }
  }
  Cluster scratch;
  LogStore store(scratch.temp_dir() + "/logs");
  LogMirror::Options options;
  options.term = 4;
  LogMirror mirror(ceph->ClientOptions(), location, options);
  const auto began = Steady::now();
  REQUIRE(mirror.Seed(&store).ok());
  const int64_t took_ms = MillisSince(began);
  std::cout << fmt::format("ha_logs: {} logs of {} chunks ({} objects) read back in {} ms, {} at once\n", kLogs,
                           kChunks, kLogs * kChunks, took_ms, options.parallel)
            << std::flush;
  for (int log = 0; log < kLogs; ++log) {
    std::string expected;
    for (int chunk = 0; chunk < kChunks; ++chunk) expected += text_of(log, chunk);
    INFO("log " << log);
    REQUIRE(WholeLog(store, fmt::format("job-{}", log / 4), log % 4) == expected);
  }
  CHECK(took_ms < 60000);  // an outer bound for a loaded machine
  mirror.Stop();
}

TEST_CASE("log mirror: a new leader reads back before it serves only the logs of jobs that are not final, the "
          "others come back after, a read waits for its job's, and none is lost or out of order",
          "[ha_logs][ceph]") {
  REQUIRE_CEPH(ceph);
  REQUIRE(ceph->CreateBucket("lazy"));
  const S3Location location{"lazy", "c"};
  S3Client s3(ceph->ClientOptions());
  // 400 final jobs of 5 chunks each (2,000 objects), and one running job.
  constexpr int kJobs = 400, kChunks = 5;
  auto job_of = [](int job) { return fmt::format("job-{:04d}", job); };
  auto text_of = [](int job, int chunk) { return fmt::format("job {} chunk {} {}\n", job, chunk, std::string(100, 'x')); };
  auto expected_of = [&](int job) {
    std::string text;
    for (int chunk = 0; chunk < kChunks; ++chunk) text += text_of(job, chunk);
    return text;
  };
  for (int job = 0; job <= kJobs; ++job) {
    int64_t offset = 0;
    for (int chunk = 0; chunk < kChunks; ++chunk) {
      const std::string text = text_of(job, chunk);
      const int64_t end = offset + static_cast<int64_t>(text.size());
      REQUIRE(s3.PutData("lazy", LogChunkKey("c", job_of(job), 0, offset, end, 3), text).ok());
      offset = end;
    }
  }
  const std::string running = job_of(kJobs);
  LogMirror::Options options;
  options.term = 4;
  Cluster scratch;

  // The whole read-back, as a leader did it before it served.
  int64_t all_ms = 0;
  {
    LogStore store(scratch.temp_dir() + "/all");
    LogMirror mirror(ceph->ClientOptions(), location, options);
    const auto began = Steady::now();
    REQUIRE(mirror.Seed(&store).ok());
    all_ms = MillisSince(began);
    REQUIRE(WholeLog(store, job_of(7), 0) == expected_of(7));
  }

  LogStore store(scratch.temp_dir() + "/lazy");
  LogMirror mirror(ceph->ClientOptions(), location, options);
  const auto began = Steady::now();
  REQUIRE(mirror.Seed(&store, [&](const std::string& job_id) {
                  return job_id == running ? LogMirror::ReadBack::kNow : LogMirror::ReadBack::kLater;
                }).ok());
  const int64_t seed_ms = MillisSince(began);
  std::cout << fmt::format("ha_logs: {} objects in S3: reading every log back took {} ms; reading back only the "
                           "running job's before serving took {} ms (the listing included)\n",
                           (kJobs + 1) * kChunks, all_ms, seed_ms)
            << std::flush;
  // Only the running job's log is there before the leader serves.
  CHECK(WholeLog(store, running, 0) == expected_of(kJobs));
  CHECK(WholeLog(store, job_of(0), 0).empty());
  CHECK(mirror.jobs_to_read_back() == kJobs);
  // What is left is one LIST of the prefix: well below reading every log.
  CHECK(seed_ms * 2 < all_ms);

  // The store is the loop's: the read-back hands each batch to it. Before
  // it starts: a job deleted (its logs are not read back), and a job whose
  // log gets new output first (an agent's late output: it goes after).
  EventLoop loop("test-loop");
  loop.Start();
  loop.Call<bool>([&] {
    store.set_observer(&mirror);
    store.Delete(job_of(1), 1);
    store.Append(job_of(2), 0, "late output\n");
    return true;
  });
  CHECK(mirror.jobs_to_read_back() == kJobs - 1);
  // Before the read-back runs, a look that does not wait (the dashboard's)
  // is told at once, naming the job.
  const Status not_yet = mirror.WaitForJob(job_of(5), 0ms);
  CHECK(not_yet.code() == Status::Code::kUnavailable);
  CHECK_THAT(not_yet.message(), Catch::Contains(job_of(5)) && Catch::Contains("read back from S3"));
  mirror.ReadBackLater([&loop](std::function<void()> fn) { loop.Post(std::move(fn)); });
  // A read of the last job in the read-back's order waits for it alone.
  const auto asked = Steady::now();
  REQUIRE(mirror.WaitForJob(job_of(kJobs - 1), LogMirror::kReadBackWait).ok());
  const int64_t asked_ms = MillisSince(asked);
  const size_t left_then = mirror.jobs_to_read_back();
  CHECK(loop.Call<std::string>([&] { return WholeLog(store, job_of(kJobs - 1), 0); }) == expected_of(kJobs - 1));
  std::cout << fmt::format("ha_logs: a read of the last job's log waited {} ms for it, with {} jobs' logs still to "
                           "read back\n",
                           asked_ms, left_then)
            << std::flush;
  CHECK(left_then > 0);  // it went before the others

  REQUIRE(WaitFor([&] { return mirror.jobs_to_read_back() == 0; }, 60s, 20ms));
  const int64_t back_ms = MillisSince(began);
  std::cout << fmt::format("ha_logs: every final job's log was back {} ms after the start\n", back_ms) << std::flush;
  loop.Call<bool>([&] {
    for (int job = 0; job < kJobs; ++job) {
      INFO("job " << job);
      if (job == 1) {
        CHECK(WholeLog(store, job_of(job), 0).empty());
      } else if (job == 2) {
        CHECK(WholeLog(store, job_of(job), 0) == expected_of(job) + "late output\n");
      } else {
        CHECK(WholeLog(store, job_of(job), 0) == expected_of(job));
      }
    }
    return true;
  });
  // The deleted job's chunks went; what was read back was not written to
  // S3 again, the late output was (one chunk after the others); a job not
  // waiting any more answers at once.
  mirror.FlushNow();
  for (int job : {0, 3, kJobs - 1}) {
    auto keys = s3.List("lazy", JobChunksPrefix("c", job_of(job)));
    REQUIRE(keys.ok());
    CHECK(keys->size() == kChunks);
  }
  auto late = s3.List("lazy", JobChunksPrefix("c", job_of(2)));
  REQUIRE(late.ok());
  CHECK(late->size() == kChunks + 1);
  auto deleted = s3.List("lazy", JobChunksPrefix("c", job_of(1)));
  REQUIRE(deleted.ok());
  CHECK(deleted->empty());
  CHECK(mirror.WaitForJob(job_of(3), 1ms).ok());
  loop.Stop();
  mirror.Stop();
}

TEST_CASE("HA heads: a new leader serves without reading final jobs' logs first (2,000 chunk objects of them in "
          "S3), and a final job's log read right after the failover is whole",
          "[ha_logs][ha][etcd][ceph]") {
  std::string why;
  if (!EtcdMembers::Installed(&why)) {
    SkipTest(why);
    return;
  }
  REQUIRE_CEPH(ceph);
  REQUIRE(ceph->CreateBucket("ha-lazy"));
  UseCeph(*ceph);
  EtcdMembers etcd(3);
  REQUIRE(etcd.error() == "");  // it holds the members' last log lines when they failed to start

  Cluster a, b, worker;
  const std::string token = "ha-lazy-token-0123456789abcdef";
  const std::string token_file = worker.temp_dir() + "/cluster.token";
  {
    std::ofstream(token_file) << token << "\n";
    REQUIRE(chmod(token_file.c_str(), 0600) == 0);
  }
  auto head_flags = [&](const std::string& name) {
    return std::vector<std::string>{"--dashboard-port", std::to_string(FreePort()), "--ha", etcd.url("/ha-lazy"),
                                    "--store", "s3://ha-lazy/cluster", "--s3-endpoint", ceph->endpoint(),
                                    "--token-file", token_file, "--num-cpus", "0", "--num-gpus", "0",
                                    "--node-name", name, "--heartbeat-ms", "200", "--node-timeout-ms", "1500"};
  };
  RunResult started_a = a.StartHead(head_flags("head-a"));
  INFO(started_a.out << started_a.err);
  REQUIRE(started_a.exit_code == 0);
  REQUIRE(WaitFor([&] { return Leads(a.address(), token); }, 5s, 50ms));
  RunResult started_b = b.StartHead(head_flags("head-b"));
  INFO(started_b.out << started_b.err);
  REQUIRE(started_b.exit_code == 0);
  const std::string both = a.address() + "," + b.address();
  RunResult joined = Run({CLUSTERD_BIN, "start", "--address", both, "--temp-dir", worker.temp_dir(), "--node-name",
                          "w1", "--token-file", token_file, "--num-cpus", "1", "--num-gpus", "0", "--heartbeat-ms",
                          "200"});
  INFO(joined.out << joined.err);
  REQUIRE(joined.exit_code == 0);
  auto ctl = [&](const std::vector<std::string>& args) {
    std::vector<std::string> full{"--address", both, "--token", token};
    full.insert(full.end(), args.begin(), args.end());
    return a.Ctl(full, 60s);
  };

  // A job that prints 3,000 numbered lines and ends.
  constexpr int kLines = 3000;
  const std::string job_file = worker.temp_dir() + "/counted.yaml";
  std::ofstream(job_file) << "name: counted\nentrypoint: /usr/bin/python3 -c \"[print('line', i, 0) for i in range(1, "
                          << kLines + 1 << ")]; print('done')\"\n";
  RunResult submitted = ctl({"submit", job_file, "--json"});
  INFO(submitted.out << submitted.err);
  REQUIRE(submitted.exit_code == 0);
  const std::string counted = SubmittedJobId(submitted);
  REQUIRE(WaitUntilFinal(a, counted, 60s).state() == SUCCEEDED);

  // 400 final jobs (an array, stopped), whose logs in S3 are written here:
  // 5 chunks each, 2,000 objects.
  constexpr int kFinal = 400, kChunks = 5;
  const std::string array_file = worker.temp_dir() + "/filler.yaml";
  std::ofstream(array_file) << "name: filler\nentrypoint: sleep 600\narray: {count: " << kFinal
                            << ", max_concurrent: 1}\n";
  RunResult array = ctl({"submit", array_file, "--json"});
  INFO(array.out << array.err);
  REQUIRE(array.exit_code == 0);
  const std::string array_id = SubmittedJobId(array);
  RunResult stopped = ctl({"stop", array_id, "--array"});
  INFO(stopped.out << stopped.err);
  REQUIRE(stopped.exit_code == 0);
  std::vector<std::string> fillers;
  REQUIRE(WaitFor(
      [&] {
        RunResult listed = ctl({"jobs", "--array", array_id, "--json"});
        if (listed.exit_code != 0) return false;
        const ListJobsReply jobs = ParseJson<ListJobsReply>(listed);
        fillers.clear();
        for (const JobInfo& job : jobs.jobs()) {
          if (!IsFinal(job.state())) return false;
          if (job.attempts_size() == 0) fillers.push_back(job.job_id());  // never ran: no log of its own
        }
        return jobs.jobs_size() == kFinal;
      },
      60s, 500ms));
  REQUIRE(fillers.size() >= kFinal - 1);
  S3Client s3(ceph->ClientOptions());
  auto filler_text = [](const std::string& job_id, int chunk) {
    return fmt::format("{} chunk {} {}\n", job_id, chunk, std::string(100, 'x'));
  };
  for (const std::string& job_id : fillers) {
    int64_t offset = 0;
    for (int chunk = 0; chunk < kChunks; ++chunk) {
      const std::string text = filler_text(job_id, chunk);
      const int64_t end = offset + static_cast<int64_t>(text.size());
      REQUIRE(s3.PutData("ha-lazy", LogChunkKey("cluster", job_id, 0, offset, end, 1), text).ok());
      offset = end;
    }
  }
  // The counted job's log is all in S3 (its chunks reach the log's end).
  RunResult whole = ctl({"logs", counted});
  REQUIRE(whole.exit_code == 0);
  REQUIRE(NumberedLines(whole.out).size() == kLines);
  REQUIRE(WaitFor(
      [&] {
        auto keys = s3.List("ha-lazy", JobChunksPrefix("cluster", counted));
        int64_t end = 0;
        for (const std::string& key : keys.ok() ? *keys : std::vector<std::string>{}) {
          auto chunk = ParseLogChunkKey("cluster", key);
          if (chunk.ok()) end = std::max(end, chunk->end);
        }
        return end >= static_cast<int64_t>(whole.out.size());
      },
      15s, 200ms));

  const auto killed = Steady::now();
  a.KillHead(SIGKILL);
  REQUIRE(WaitFor([&] { return Leads(b.address(), token); }, 15s, 20ms));
  const int64_t lead_ms = MillisSince(killed);
  // Right away: the final job's log, whole, though the read-back of the
  // others may still be under way.
  RunResult read = a.Ctl({"--address", b.address(), "--token", token, "logs", counted});
  const int64_t read_ms = MillisSince(killed);
  INFO(read.out.substr(0, 2000) << read.err);
  REQUIRE(read.exit_code == 0);
  const std::vector<NumberedLine> lines = NumberedLines(read.out);
  CHECK(lines.size() == kLines);
  CHECK(GapOf(lines).gaps == 0);
  CHECK(GapOf(lines).out_of_order == 0);
  CHECK(!lines.empty());
  CHECK(lines.front().number == 1);
  CHECK_THAT(read.out, Catch::EndsWith("done\n"));
  CHECK(read.out == whole.out);

  // What the new leader read before it served, from its own log line.
  auto head_log = [&] {
    return Run({"/bin/sh", "-c", "cat " + b.temp_dir() + "/session_latest/logs/*.log"}).out;
  };
  int64_t list_ms = -1, before_ms = -1, listed = 0;
  {
    const std::string text = head_log();
    const size_t at = text.rfind("rank logs: listed ");
    REQUIRE(at != std::string::npos);
    const std::string line = text.substr(at, text.find('\n', at) - at);
    INFO(line);
    const size_t in_at = line.find(" in ");
    REQUIRE(std::sscanf(line.c_str(), "rank logs: listed %ld chunk", &listed) == 1);
    REQUIRE(std::sscanf(line.c_str() + in_at, " in %ld ms", &list_ms) == 1);
    const size_t serving = line.find("before serving, in ");
    REQUIRE(serving != std::string::npos);
    REQUIRE(std::sscanf(line.c_str() + serving, "before serving, in %ld ms", &before_ms) == 1);
  }
  // The whole read-back, as a leader did it before it served.
  int64_t all_ms = 0;
  {
    Cluster scratch;
    LogStore store(scratch.temp_dir() + "/all");
    LogMirror::Options options;
    options.term = std::numeric_limits<int32_t>::max();
    LogMirror mirror(ceph->ClientOptions(), S3Location{"ha-lazy", "cluster"}, options);
    const auto began = Steady::now();
    REQUIRE(mirror.Seed(&store).ok());
    all_ms = MillisSince(began);
  }
  std::cout << fmt::format("ha_logs: the new leader, with {} chunk objects in S3, listed them in {} ms and spent "
                           "{} ms reading logs back before it served (every log: {} ms); it led {} ms after the kill, "
                           "and a final job's {} lines were read from it {} ms after the kill\n",
                           listed, list_ms, before_ms, all_ms, lead_ms, kLines, read_ms)
            << std::flush;
  CHECK(listed >= static_cast<int64_t>(fillers.size()) * kChunks);
  CHECK((list_ms + before_ms) * 2 < all_ms);
  CHECK(lead_ms < 15000);  // an outer bound for a loaded machine

  // The others come back after: a filler's log, whole.
  REQUIRE(WaitFor([&] { return head_log().find("final jobs were read back in") != std::string::npos; }, 60s, 200ms));
  RunResult filler = a.Ctl({"--address", b.address(), "--token", token, "logs", fillers.back()});
  INFO(filler.out << filler.err);
  REQUIRE(filler.exit_code == 0);
  std::string expected;
  for (int chunk = 0; chunk < kChunks; ++chunk) expected += filler_text(fillers.back(), chunk);
  CHECK(filler.out == expected);

  Run({CLUSTERD_BIN, "stop", "--force", "--temp-dir", worker.temp_dir()});
  b.Stop({"--force"});
}
