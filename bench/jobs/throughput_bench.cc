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

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "job_client.h"
#include "proc_usage.h"
#include "sections.h"
#include "stats.h"
#include "three_nodes.h"

extern char** environ;

namespace clusterd::bench {

namespace {

namespace fs = std::filesystem;

constexpr const char* kTrue = NOOP_RANK_BIN;

double SecondsSince(std::chrono::steady_clock::time_point start) { return MsSince(start) / 1000; }

// CPU seconds so far of this process's reaped children (RUSAGE_CHILDREN)
// or of this process itself (RUSAGE_SELF).
double UsedCpu(int who) {
  rusage usage{};
  getrusage(who, &usage);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}
double ReapedChildrenCpu() { return UsedCpu(RUSAGE_CHILDREN); }

// What a cluster's processes have used so far: the daemons, their
// launchers and the launchers' live keepers themselves, and the ranks they
// reaped (a keeper that ended counts in its launcher's reaped children,
// its own CPU with its ranks').
ProcCpu ClusterCpu(const std::vector<pid_t>& daemons) {
  ProcCpu total;
  auto add = [&](pid_t pid) {
    if (auto cpu = CpuOf(pid)) {
      total.own += cpu->own;
      total.reaped_children += cpu->reaped_children;
    }
  };
  for (pid_t daemon : daemons) {
    if (auto cpu = CpuOf(daemon)) total.own += cpu->own;
    for (pid_t launcher : ChildrenNamed(daemon, "clusterd-launch")) {
      add(launcher);
      for (pid_t keeper : ChildrenNamed(launcher, "clusterd-keep")) add(keeper);
    }
  }
  return total;
}

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

uint64_t JournalBytes(const std::string& temp_dir, std::string* where) {
  uint64_t bytes = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(temp_dir, ec); it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (ec) break;
    if (it->is_regular_file(ec) && it->path().string().find("journal") != std::string::npos) {
      bytes += it->file_size(ec);
      if (where->empty()) *where = it->path().parent_path().string();
    }
  }
  return bytes;
}


// What one part measured, reported once the floor after it has run.
struct Part {
  bool as_array = false;
  double submit_s = 0, total_s = 0;
  int succeeded = 0;
  uint64_t journal_bytes = 0;
  std::optional<double> head_cpu_percent, head_rss_mib;
  double cpu_ms = 0, ranks_cpu_ms = 0;  // per job: clusterd's own, its ranks'
  double bench_cpu_ms = 0;              // per job: this process's (its submitting threads, mostly gRPC)
};

// The floor runs around a part: what it is held against.
struct Floor {
  double rate = 0;    // jobs/s, the mean of the runs before and after
  double cpu_ms = 0;  // CPU per process, the mean likewise
  std::string runs;   // the two runs' rates
};

// The jobs through a fresh cluster, either as `options.jobs` separate
// submits from `submit_threads` threads or as one array, into *part.
// False when it could not measure (reported).
// `nodes` is the caller's, so that its folders (10,000 jobs' files) are
// removed after every part has run: ext4 skips the inodes freed in the last
// minutes when it makes new ones, and a part run right after the removal
// of the last part's files would pay for that removal in every file it makes.
bool DrainJobs(const JobsOptions& options, bool as_array, ThreeNodes& nodes, Report* report, Part* part) {
  const std::string how = as_array ? "one array" : "separate submits";
  std::string error;
  if (!StartThreeNodes(options.cpus_per_node, &nodes, &error)) {
    report->Failed("throughput", error);
    return false;
  }
  auto head_cpu0 = CpuSeconds(nodes.head_pid);
  const ProcCpu cluster_cpu0 = ClusterCpu(nodes.daemon_pids);
  const double bench_cpu0 = UsedCpu(RUSAGE_SELF);
  JobSpec spec;
  spec.add_entrypoint(kTrue);
  spec.set_num_workers(1);
  (*spec.mutable_resources_per_worker()->mutable_amounts())["CPU"] = 1;
  std::atomic<int> next{0}, failed{0};
  std::vector<std::string> last(as_array ? 1 : options.submit_threads);
  std::mutex error_mutex;
  std::cerr << "jobs_bench:   submitting " << options.jobs << " jobs as " << how << std::endl;
  auto t0 = std::chrono::steady_clock::now();
  const int64_t t0_unix_ms = RealtimeNs() / 1000000;
  if (as_array) {
    JobClient client(nodes.cluster.address(), nodes.token);
    spec.set_name("tput-array");
    spec.mutable_array()->set_count(options.jobs);
    std::string array_id = client.Submit(spec, &error);
    // The queue is FIFO: the array's last job is the last to end.
    std::vector<JobInfo> members;
    if (array_id.empty() || !client.ListArray(array_id, &members, &error) ||
        static_cast<int>(members.size()) != options.jobs) {
      failed = 1;
    } else {
      last[0] = members.back().job_id();
    }
  } else {
    std::vector<std::thread> threads;
    for (int t = 0; t < options.submit_threads; ++t) {
      threads.emplace_back([&, t] {
        JobClient client(nodes.cluster.address(), nodes.token);  // a connection each
        JobSpec mine = spec;
        for (int i; (i = next++) < options.jobs;) {
          mine.set_name("tput-" + std::to_string(i));
          std::string why;
          std::string id = client.Submit(mine, &why);
          if (id.empty()) {
            if (failed++ == 0) {
              std::lock_guard<std::mutex> lock(error_mutex);
              error = why;
            }
          } else {
            last[t] = id;
          }
        }
      });
    }
    for (auto& thread : threads) thread.join();
  }
  double submit_s = SecondsSince(t0);
  if (failed > 0) {
    report->Failed("throughput", std::to_string(failed.load()) + " submits (" + how + ") failed: " + error);
    return false;
  }
  std::cerr << "jobs_bench:   submitted in " << submit_s << " s; waiting for the queue to drain" << std::endl;

  JobClient client(nodes.cluster.address(), nodes.token);
  std::set<std::string> waiting(last.begin(), last.end());
  waiting.erase("");
  auto deadline = t0 + std::chrono::seconds(options.drain_limit_s);
  while (!waiting.empty() && std::chrono::steady_clock::now() < deadline) {
    for (auto it = waiting.begin(); it != waiting.end();) {
      JobInfo info;
      it = client.Get(*it, &info) && IsTerminal(info.state()) ? waiting.erase(it) : std::next(it);
    }
    if (!waiting.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  double total_s = SecondsSince(t0);  // until the last ones were seen ended; made exact below
  const double bench_cpu1 = UsedCpu(RUSAGE_SELF);
  auto head_cpu1 = CpuSeconds(nodes.head_pid);
  const ProcCpu cluster_cpu1 = ClusterCpu(nodes.daemon_pids);
  auto head_rss = RssMiB(nodes.head_pid);

  ListJobsReply all;
  if (!client.List(&all, &error)) {
    report->Failed("throughput", "ListJobs: " + error);
    return false;
  }
  // The last submitted are the last to start, not always the last to end
  // (a rank whose agent reaps it a tick later): any job still going is
  // waited for too, and the part ends when its last job did, by the head's
  // clock (CLOCK_REALTIME, as RealtimeNs).
  int64_t last_end_ms = 0;
  for (JobInfo& job : *all.mutable_jobs()) {
    while (!IsTerminal(job.state()) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      client.Get(job.job_id(), &job);
    }
    last_end_ms = std::max<int64_t>(last_end_ms, job.end_unix_ms());
  }
  if (last_end_ms > t0_unix_ms) total_s = (last_end_ms - t0_unix_ms) / 1000.0;
  int succeeded = 0;
  int told = 0;
  for (const JobInfo& job : all.jobs()) {
    succeeded += job.state() == SUCCEEDED;
    if (job.state() != SUCCEEDED && told++ < 5) {  // what went wrong, for the first few
      std::cerr << "jobs_bench:   " << job.job_id() << " (" << job.spec().name() << ") " << JobState_Name(job.state())
                << ": " << job.reason() << std::endl;
    }
  }
  std::string journal_dir;
  uint64_t journal = JournalBytes(nodes.cluster.temp_dir(), &journal_dir);
  std::cerr << "jobs_bench:   " << succeeded << "/" << all.jobs_size() << " SUCCEEDED after " << total_s
            << " s; journal in " << journal_dir << std::endl;

  part->as_array = as_array;
  part->submit_s = submit_s;
  part->total_s = total_s;
  part->succeeded = succeeded;
  part->journal_bytes = journal;
  if (head_cpu0 && head_cpu1) part->head_cpu_percent = (*head_cpu1 - *head_cpu0) / total_s * 100;
  part->head_rss_mib = head_rss;
  part->cpu_ms = (cluster_cpu1.own - cluster_cpu0.own) * 1000 / options.jobs;
  part->ranks_cpu_ms = (cluster_cpu1.reaped_children - cluster_cpu0.reaped_children) * 1000 / options.jobs;
  part->bench_cpu_ms = (bench_cpu1 - bench_cpu0) * 1000 / options.jobs;
  if (succeeded != options.jobs) {
    report->Failed("throughput", std::to_string(options.jobs - succeeded) + " of " + std::to_string(options.jobs) +
                                     " jobs (" + how + ") not SUCCEEDED within " +
                                     std::to_string(options.drain_limit_s) + " s");
    return false;
  }
  return true;
}

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
  const bool separate_ok = DrainJobs(options, /*as_array=*/false, first, report, &separate);
  first.cluster.Stop({"--force"});  // its daemons go before the floor runs; its files with `first`
  if (!run_floor(1)) return false;
  if (separate_ok) ReportPart(options, separate, around(0), report);
  const bool array_ok = DrainJobs(options, /*as_array=*/true, second, report, &array);
  second.cluster.Stop({"--force"});
  if (!run_floor(2)) return false;
  if (array_ok) ReportPart(options, array, around(1), report);
  return separate_ok && array_ok;
}

}  // namespace clusterd::bench
