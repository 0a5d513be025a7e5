// 2. Scheduler throughput: `jobs` single-rank, single-CPU jobs running
// noop_rank (one line of output, as most programs print something, then
// exit 0), submitted as fast as `submit_threads` concurrent unary calls
// go, then waited for until the last submitted ones are SUCCEEDED (the
// queue is FIFO, so the last of each thread are the last to run); one
// ListJobs at the end checks that every job SUCCEEDED. Baseline: the same
// number of noop_rank processes from a posix_spawn/waitpid loop in this
// process with as many in flight as the cluster has CPUs: the floor cost of
// the processes themselves on this machine. The floor runs before each
// part and after the last, and each part is held against the mean of the
// two runs around it: this machine's speed drifts by a sixth within
// minutes (the ranks' own CPU time with it), and one floor taken before
// both parts moved the second part's ratio as much as a change did.
// Beside the rates, which swing with the machine's other load and with the
// inodes freed in the minutes before (see docs/BENCHMARKS.md), CPU time per
// job: clusterd's own (its three daemons, their launchers and keepers) and the
// ranks' (reaped by the launchers), against the floor's processes'.
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <cmath>
#include <iostream>
#include <set>

#include "drain_jobs.h"
#include "proc_usage.h"
#include "sections.h"
#include "stats.h"
#include "three_nodes.h"

extern char** environ;

namespace clusterd::bench {

namespace {

constexpr const char* kTrue = NOOP_RANK_BIN;

double SecondsSince(std::chrono::steady_clock::time_point start) { return MsSince(start) / 1000; }
double ReapedChildrenCpu() { return UsedCpu(RUSAGE_CHILDREN); }

// jobs processes, at most `parallel` at once; jobs/s, or -1 on failure.
// Their output goes to /dev/null (a rank's goes to its agent's pipe).
// *cpu_ms_per_job: the processes' CPU time each.
double SpawnLoop(int jobs, int parallel, double* cpu_ms_per_job) {
  const double cpu0 = ReapedChildrenCpu();
  char* argv[] = {const_cast<char*>(kTrue), nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  std::set<pid_t> running;
  auto t0 = std::chrono::steady_clock::now();
  int started = 0;
  while (started < jobs || !running.empty()) {
    while (started < jobs && static_cast<int>(running.size()) < parallel) {
      pid_t pid;
      if (posix_spawn(&pid, kTrue, &actions, nullptr, argv, environ) != 0) return -1;
      running.insert(pid);
      ++started;
    }
    int status;
    pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) return -1;
    running.erase(pid);
  }
  posix_spawn_file_actions_destroy(&actions);
  const double rate = jobs / SecondsSince(t0);
  *cpu_ms_per_job = (ReapedChildrenCpu() - cpu0) * 1000 / jobs;
  return rate;
}

// The floor runs around a part: what it is held against.
struct Floor {
  double rate = 0;    // jobs/s, the mean of the runs before and after
  double cpu_ms = 0;  // CPU per process, the mean likewise
  std::string runs;   // the two runs' rates
};

void ReportPart(const JobsOptions& options, const Part& part, const Floor& floor, Report* report) {
  const int parallel = 3 * options.cpus_per_node;
  const std::string how = part.as_array ? "one array" : "separate submits";
  const std::string n = std::to_string(options.jobs);
  const double rate = part.succeeded / part.total_s;
  report->Check(n + " x 1-rank jobs (" + how + "), first submit -> last SUCCEEDED, jobs/s", rate, "", 1000,
                floor.rate, "posix_spawn loop, " + std::to_string(parallel) + " at once; " + floor.runs, true);
  report->Check("  the same, against the posix_spawn floor", rate / floor.rate, "x", 0.5, std::nullopt, "", true);
  report->Info("  submit rate, jobs/s (" +
                   (part.as_array ? std::string("one SubmitJob")
                                  : std::to_string(options.submit_threads) + " threads, unary") + ")",
               options.jobs / part.submit_s, "");
  report->Info("  end to end, s", part.total_s, "s");
  report->Info("  jobs SUCCEEDED (ListJobs)", part.succeeded, "", options.jobs, "submitted");
  report->Info("  journal bytes per job", static_cast<double>(part.journal_bytes) / options.jobs, "");
  if (part.head_cpu_percent) report->Info("  head CPU during the run, % of one core", *part.head_cpu_percent, "%");
  if (part.head_rss_mib) report->Info("  head RSS after the run", *part.head_rss_mib, "MiB");
  report->Info("  clusterd's CPU per job (3 daemons, their launchers and keepers), ms", part.cpu_ms, "ms", floor.cpu_ms,
               "floor's process");
  report->Info("  the ranks' own CPU per job, ms", part.ranks_cpu_ms, "ms", floor.cpu_ms, "floor's process");
  report->Info("  this benchmark's own CPU per job (its submitting threads), ms", part.bench_cpu_ms, "ms");
}

}  // namespace

bool RunThroughput(const JobsOptions& options, Report* report) {
  const int parallel = 3 * options.cpus_per_node;
  // Floor runs 0, 1 and 2: before the separate submits, between the parts, after the array.
  double rates[3] = {}, cpu_ms[3] = {};
  auto run_floor = [&](int i) {
    std::cerr << "jobs_bench:   floor " << i << ": " << options.jobs << " x " << kTrue << ", " << parallel
              << " at once" << std::endl;
    rates[i] = SpawnLoop(options.jobs, parallel, &cpu_ms[i]);
    if (rates[i] < 0) report->Failed("throughput", "the posix_spawn baseline failed");
    return rates[i] >= 0;
  };
  auto around = [&](int part) {
    Floor floor;
    floor.rate = (rates[part] + rates[part + 1]) / 2;
    floor.cpu_ms = (cpu_ms[part] + cpu_ms[part + 1]) / 2;
    floor.runs = "the mean of " + std::to_string(std::lround(rates[part])) + " before and " +
                 std::to_string(std::lround(rates[part + 1])) + " after";
    return floor;
  };
  if (!run_floor(0)) return false;
  ThreeNodes first, second;  // their folders go at the end (DrainJobs)
  Part separate, array;
  const bool separate_ok = DrainJobs(options, /*as_array=*/false, {}, nullptr, first, report, &separate);
  first.cluster.Stop({"--force"});  // its daemons go before the floor runs; its files with `first`
  if (!run_floor(1)) return false;
  if (separate_ok) ReportPart(options, separate, around(0), report);
  const bool array_ok = DrainJobs(options, /*as_array=*/true, {}, nullptr, second, report, &array);
  second.cluster.Stop({"--force"});
  if (!run_floor(2)) return false;
  if (array_ok) ReportPart(options, array, around(1), report);
  return separate_ok && array_ok;
}

}  // namespace clusterd::bench
