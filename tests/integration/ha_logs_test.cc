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
  INFO(etcd.LogTails());
  REQUIRE(etcd.error().empty());

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
