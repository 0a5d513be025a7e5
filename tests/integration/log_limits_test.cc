// A rank that prints without end on a real cluster: its node keeps the
// first and last part within the job's log limit, the head's state folder
// grows by no more than that (and a log's first bytes, left in the shared
// packs), and `clusterctl logs` shows what was dropped.
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <string>

#include "common/logs/log_store.h"
#include "jobs_harness.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

// Bytes of every file under `folder` (the head's log store: files and packs).
int64_t FolderBytes(const std::string& folder) {
  int64_t bytes = 0;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(folder, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec)) bytes += static_cast<int64_t>(it->file_size(ec));
  }
  return bytes;
}

// A log's first bytes go to the head's shared packs until it passes
// LogStore::kDefaultPackedLimit, then it moves to a file of its own; what
// it left in the pack stays there, dead, until the pack's other logs go
// (common/logs/log_packs.h). How much depends on how its node's chunks
// came: up to that much a rank.
constexpr int64_t kPackedDeadBytes = LogStore::kDefaultPackedLimit;

}  // namespace

TEST_CASE("a rank printing 50 MB under log_limit 1Mi costs the head's state folder 1 MiB, and logs show the cut",
          "[logs][log_limit][integration]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "2", "--num-gpus", "0", "--log-job-limit-mb", "2"}).exit_code == 0);
  const std::string jobs_folder = cluster.temp_dir() + "/state/jobs";
  const int64_t before = FolderBytes(jobs_folder);
  // 50,000,000 bytes of numbered lines, the last one known.
  const std::string flood =
      "entrypoint: |\n"
      "  echo first line; seq 1 7000000 | head -c 50000000; echo; echo last line\n"
      "log_limit: 1Mi\n";
  JobInfo job = WaitEnd(cluster, Submit(cluster, WriteJobFile(cluster, "flood", flood)), std::chrono::seconds(120));
  REQUIRE(job.state() == SUCCEEDED);
  const int64_t grown = FolderBytes(jobs_folder) - before;
  INFO("the log store grew by " << grown << " bytes");
  // The limit, the banner and the lines that say what was dropped, and the pack's dead bytes.
  CHECK(grown <= (1 << 20) + (16 << 10) + kPackedDeadBytes);
  CHECK(grown >= (1 << 20) - (16 << 10));

  RunResult logs = cluster.Ctl({"logs", job.job_id()});
  REQUIRE(logs.exit_code == 0);
  CHECK(logs.out.find("first line\n1\n2\n3\n") != std::string::npos);
  CHECK(logs.out.find("[clusterd: this rank's output passed its log limit (1.0 MiB); what follows is dropped but for "
                      "the last 512.0 KiB, kept when the rank ends]") != std::string::npos);
  CHECK(logs.out.find("MiB of this rank's output dropped here (its log limit is 1.0 MiB); the last 512.0 KiB follow]") !=
        std::string::npos);
  CHECK(logs.out.size() < (1 << 20) + (16 << 10));
  const size_t dropped_at = logs.out.find("of this rank's output dropped here");
  CHECK(logs.out.find("\nlast line\n", dropped_at) != std::string::npos);
  // Said once more at the very end, where the dashboard's view of a log and a reader of its last lines look.
  const std::string cut_end = "of its output were dropped before the last 512.0 KiB above (its log limit is 1.0 MiB)]\n";
  CHECK(logs.out.size() >= cut_end.size());
  CHECK(logs.out.compare(logs.out.size() - cut_end.size(), cut_end.size(), cut_end) == 0);

  SECTION("a job's ranks share log_job_limit_mb") {
    const int64_t before_job = FolderBytes(jobs_folder);
    const std::string two =
        "entrypoint: seq 1 2000000\n"  // about 14.9 MB a rank
        "num_workers: 2\n";
    JobInfo shared = WaitEnd(cluster, Submit(cluster, WriteJobFile(cluster, "two", two)), std::chrono::seconds(120));
    REQUIRE(shared.state() == SUCCEEDED);
    const int64_t job_grown = FolderBytes(jobs_folder) - before_job;
    INFO("the log store grew by " << job_grown << " bytes");
    CHECK(job_grown <= (2 << 20) + (32 << 10) + 2 * kPackedDeadBytes);
    for (const char* rank : {"0", "1"}) {
      RunResult rank_logs = cluster.Ctl({"logs", shared.job_id(), "--rank", rank});
      REQUIRE(rank_logs.exit_code == 0);
      CHECK(rank_logs.out.find("(its log limit is 1.0 MiB); the last 512.0 KiB follow]\n") != std::string::npos);
      CHECK(rank_logs.out.find("\n2000000\n") != std::string::npos);
    }
  }
}

TEST_CASE("past log_store_limit_mb the oldest finished job's logs go, and clusterctl logs and job say why",
          "[logs][log_limit][integration]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "2", "--num-gpus", "0", "--log-store-limit-mb", "1"}).exit_code == 0);
  // 600 KB, then 400 KB: past 90% of 1 MiB, so the first job's logs go.
  JobInfo old_job =
      WaitEnd(cluster, Submit(cluster, WriteJobFile(cluster, "old", "entrypoint: yes oooooooooooooooo | head -c 600000\n")));
  REQUIRE(old_job.state() == SUCCEEDED);
  JobInfo new_job =
      WaitEnd(cluster, Submit(cluster, WriteJobFile(cluster, "new", "entrypoint: yes nnnnnnnnnnnnnnnn | head -c 400000\n")));
  REQUIRE(new_job.state() == SUCCEEDED);
  const std::string why = "logs removed to keep the log store under 1.0 MiB (log_store_limit_mb)";
  CHECK(GetJob(cluster, old_job.job_id()).logs_released() == why);
  CHECK(GetJob(cluster, new_job.job_id()).logs_released().empty());

  RunResult gone = cluster.Ctl({"logs", old_job.job_id()});
  CHECK(gone.exit_code == 0);
  CHECK(gone.out.empty());
  CHECK(gone.err.find("has no logs any more: " + why) != std::string::npos);
  RunResult shown = cluster.Ctl({"job", old_job.job_id()});
  INFO(shown.out);
  CHECK(shown.out.find(why) != std::string::npos);
  CHECK(cluster.Ctl({"logs", new_job.job_id()}).out.find("nnnnnnnn") != std::string::npos);
}
