#include "drain_jobs.h"

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <set>
#include <thread>

#include "ha_backing.h"
#include "job_client.h"
#include "proc_usage.h"
#include "stats.h"

namespace clusterd::bench {

namespace {

namespace fs = std::filesystem;

constexpr const char* kTrue = NOOP_RANK_BIN;

double SecondsSince(std::chrono::steady_clock::time_point start) { return MsSince(start) / 1000; }

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

}  // namespace

double UsedCpu(int who) {
  rusage usage{};
  getrusage(who, &usage);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

bool DrainJobs(const JobsOptions& options, bool as_array, const HeadChoice& head,
               EtcdUsageWindow* etcd, ThreeNodes& nodes, Report* report, Part* part) {
  const std::string how = as_array ? "one array" : "separate submits";
  std::string error;
  if (!StartThreeNodes(options.cpus_per_node, head, &nodes, &error)) {
    report->Failed("throughput", error);
    return false;
  }
  auto head_cpu0 = CpuSeconds(nodes.head_pid);
  const ProcCpu cluster_cpu0 = ClusterCpu(nodes.daemon_pids);
  const double bench_cpu0 = UsedCpu(RUSAGE_SELF);
  if (etcd && !etcd->Start()) {
    report->Failed("throughput", "cannot read the etcd members' /proc");
    return false;
  }
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
  if (etcd && !etcd->Stop()) {
    report->Failed("throughput", "an etcd member died during the run");
    return false;
  }

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
  if (etcd) {
    part->etcd_cpu_ms = etcd->CpuSeconds() * 1000 / options.jobs;
    part->etcd_disk_bytes = static_cast<double>(etcd->BytesToDisk()) / options.jobs;
  }
  if (succeeded != options.jobs) {
    report->Failed("throughput", std::to_string(options.jobs - succeeded) + " of " + std::to_string(options.jobs) +
                                     " jobs (" + how + ") not SUCCEEDED within " +
                                     std::to_string(options.drain_limit_s) + " s");
    return false;
  }
  return true;
}

}  // namespace clusterd::bench
