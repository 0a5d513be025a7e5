// retained_jobs_bench: what a head's own periodic and read work costs as
// the jobs it has run pile up (a head at 1,000 jobs/s has run 3.6 million
// in an hour). In-process (bench/jobs/fake_cluster.h): a head on 3 fake
// nodes runs H single-rank jobs to the end as one array (its agents' part
// played by the driver), then a few jobs wait; timed, per call:
//   - Tick(), which the event loop runs at least every heartbeat (500 ms);
//   - GetStatus(), what `clusterctl status` asks for (pending demands included);
//   - ListJobs grouped (`clusterctl jobs`: an array as one row), all pages;
//   - ListJobs of one page from a token near the end (paging on).
// H = 1,000 is the baseline in the same run; the columns "x" are the ratio.
// Then retention (--max-finished-jobs): R jobs run as arrays of 1,000 with
// a tick after each (as the loop ticks while they run), once keeping every
// job (the baseline) and once keeping K; per job run, and what is kept:
// jobs, and the heap in use (mallinfo2; the fake agents' record of every
// message sent and the in-memory journal grow alike in both).
//   retained_jobs_bench [--history 1000,100000] [--retention 200000] [--keep 10000]
#include <malloc.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/logging.h"
#include "fake_cluster.h"
#include "flags.h"

using namespace clusterd;
using clusterd::bench::FakeCluster;
using clusterd::bench::OneRank;

namespace {

using Clock = std::chrono::steady_clock;

double MicrosSince(Clock::time_point since) {
  return std::chrono::duration<double, std::micro>(Clock::now() - since).count();
}

// Runs fn `times` times; microseconds per call.
template <typename Fn>
double PerCall(int times, Fn fn) {
  auto start = Clock::now();
  for (int i = 0; i < times; ++i) fn();
  return MicrosSince(start) / times;
}

// Submits an array of `count` 1-CPU jobs, 6 at once (as many as 3 nodes
// hold), and plays the agents until every one has run; their ids are
// appended to *placed. Exits the bench if the head refuses or stalls.
void RunArray(FakeCluster& cluster, int count, std::vector<std::string>* placed) {
  SubmitJobRequest array;
  *array.mutable_spec() = OneRank(1, 0);
  array.mutable_spec()->mutable_array()->set_count(count);
  array.mutable_spec()->mutable_array()->set_max_concurrent(6);
  if (!cluster.head.jobs().Submit(array).ok()) {
    std::fprintf(stderr, "an array of %d was refused\n", count);
    std::exit(1);
  }
  const size_t goal = placed->size() + static_cast<size_t>(count);
  while (placed->size() < goal) {
    const size_t before = placed->size();
    cluster.AnswerAgents(placed);
    if (placed->size() == before) {
      std::fprintf(stderr, "the array stalled after %zu of its %d jobs\n", before + count - goal, count);
      std::exit(1);
    }
  }
}

struct Row {
  int history = 0;
  double tick_us = 0, status_us = 0, grouped_us = 0, last_page_us = 0;
  int grouped_rows = 0;
};

Row Measure(int history) {
  Row row;
  row.history = history;
  FakeCluster cluster;
  cluster.Register(3);
  std::vector<std::string> placed;
  RunArray(cluster, history, &placed);
  for (int i = 0; i < 10; ++i) {  // a few that wait: a GPU no node has
    SubmitJobRequest waiting;
    *waiting.mutable_spec() = OneRank(1, 1);
    (void)cluster.head.jobs().Submit(waiting);
  }

  row.tick_us = PerCall(200, [&] { cluster.head.Tick(); });
  row.status_us = PerCall(200, [&] { (void)cluster.head.GetStatus(10); });
  row.grouped_us = PerCall(5, [&] {
    ListJobsRequest request;
    request.set_page_size(1000);
    request.set_group_arrays(true);
    row.grouped_rows = 0;
    do {
      auto page = cluster.head.jobs().ListPage(request);
      row.grouped_rows += page->jobs_size();
      request.set_page_token(page->next_page_token());
    } while (!request.page_token().empty());
  });
  const std::string token = placed[placed.size() - 2];  // the next-to-last job run: its page is the last
  row.last_page_us = PerCall(200, [&] {
    ListJobsRequest request;
    request.set_page_size(100);
    request.set_page_token(token);
    (void)cluster.head.jobs().ListPage(request);
  });
  return row;
}

struct Kept {
  int keep = 0;
  double us_per_job = 0;
  size_t jobs = 0;
  double heap_mib = 0;
};

// Runs `total` jobs as arrays of 1,000 on a head that keeps `keep` finished jobs.
Kept RunKeeping(int total, int keep) {
  Kept kept;
  kept.keep = keep;
  Config config;
  config.max_finished_jobs = keep;
  config.min_finished_job_age_s = 0;  // the fake clock moves 500 ms an array: no job would be old enough
  FakeCluster cluster(config);
  cluster.Register(3);
  constexpr int kArray = 1000;
  auto start = Clock::now();
  std::vector<std::string> placed;
  for (int submitted = 0; submitted < total; submitted += kArray) {
    RunArray(cluster, kArray, &placed);
    cluster.clock.AdvanceMillis(500);
    cluster.head.Tick();
  }
  kept.us_per_job = MicrosSince(start) / total;
  kept.jobs = cluster.head.jobs().List().size();
  kept.heap_mib = static_cast<double>(mallinfo2().uordblks) / (1 << 20);
  return kept;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> histories = {1000, 100000};
  int retention = 200000, keep = 10000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--history")) histories = clusterd::bench::ParseNumberList(argv[i + 1]);
    if (!std::strcmp(argv[i], "--retention")) retention = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--keep")) keep = std::atoi(argv[i + 1]);
  }
  SetLogLevel(LogLevel::kError);
  std::vector<Row> rows;
  for (int history : histories) rows.push_back(Measure(history));
  const Row& base = rows.front();
  auto ratio = [](double value, double baseline) { return baseline > 0 ? value / baseline : 0.0; };
  std::printf("| jobs run | Tick (us) | x | GetStatus (us) | x | "
              "ListJobs grouped, all pages (us) | rows | x | a page from a late token (us) | x |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (const Row& row : rows) {
    std::printf("| %d | %.1f | %.1fx | %.1f | %.1fx | %.0f | %d | %.1fx | %.1f | %.1fx |\n", row.history,
                row.tick_us, ratio(row.tick_us, base.tick_us), row.status_us,
                ratio(row.status_us, base.status_us), row.grouped_us, row.grouped_rows,
                ratio(row.grouped_us, base.grouped_us), row.last_page_us, ratio(row.last_page_us, base.last_page_us));
  }
  if (retention <= 0) return 0;
  // Each in a fresh heap state as far as one process allows: the baseline
  // first, its memory given back before the second.
  const Kept all = RunKeeping(retention, 0);
  malloc_trim(0);
  const Kept capped = RunKeeping(retention, keep);
  std::printf("\n| %d jobs run, kept | per job run (us) | x | jobs kept | heap in use after (MiB) | x |\n",
              retention);
  std::printf("| --- | --- | --- | --- | --- | --- |\n");
  for (const Kept& row : {all, capped}) {
    std::printf("| %s | %.1f | %.2fx | %zu | %.1f | %.2fx |\n",
                row.keep == 0 ? "all (0, baseline)" : std::to_string(row.keep).c_str(), row.us_per_job,
                ratio(row.us_per_job, all.us_per_job), row.jobs, row.heap_mib, ratio(row.heap_mib, all.heap_mib));
  }
  return 0;
}
