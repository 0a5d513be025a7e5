#include "upload_cost.h"

#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <regex>
#include <thread>

#include <fmt/format.h>

#include "ckpt_jobs.h"
#include "daemon_logs.h"
#include "proc_usage.h"

namespace clusterd::bench {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// Steps are left out of the baseline this long after an upload ends, and
// from the first second of the job (page faults, the first report).
constexpr int64_t kSettleNs = 200'000'000;
constexpr int64_t kWarmupNs = 1'000'000'000;

// CPU seconds of a process's threads by nice value (field 19 of each
// /proc/PID/task/TID/stat), for the threads alive now.
std::map<pid_t, std::pair<long, double>> ThreadCpu(pid_t pid) {
  std::map<pid_t, std::pair<long, double>> out;
  std::error_code ec;
  for (const auto& task : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream in(task.path() / "stat");
    std::string line;
    if (!std::getline(in, line)) continue;
    auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    std::string field;
    double ticks = 0;
    long nice = 0;
    for (int index = 3; rest >> field; ++index) {
      if (index == 14 || index == 15) ticks += std::stod(field);
      if (index == 19) {
        nice = std::stol(field);
        break;
      }
    }
    out[static_cast<pid_t>(std::stol(task.path().filename().string()))] = {nice, ticks / sysconf(_SC_CLK_TCK)};
  }
  return out;
}

// CPU seconds between two samples of threads that ran at nice 0 throughout.
double NiceZeroCpu(const std::map<pid_t, std::pair<long, double>>& before,
                   const std::map<pid_t, std::pair<long, double>>& after) {
  double used = 0;
  for (const auto& [tid, b] : before) {
    auto it = after.find(tid);
    if (it != after.end() && b.first == 0 && it->second.first == 0) used += it->second.second - b.second;
  }
  return used;
}

// Every thread under /proc/PID (or /proc/self) on `cpus`; their children
// to come inherit it.
void PinThreads(const std::string& proc_dir, const cpu_set_t& cpus) {
  std::error_code ec;
  for (const auto& task : fs::directory_iterator(proc_dir + "/task", ec)) {
    sched_setaffinity(static_cast<pid_t>(std::stol(task.path().filename().string())), sizeof cpus, &cpus);
  }
}

void Pin(const std::vector<testing::Machine*>& machines, const cpu_set_t& cpus) {
  for (testing::Machine* machine : machines) {
    for (pid_t pid : machine->Pids()) PinThreads("/proc/" + std::to_string(pid), cpus);
  }
}

// For the part's length: the rank's machine alone on CPU 0, the other
// machines and this process on CPU 1; all CPUs again on destruction.
class CorePerMachine {
 public:
  CorePerMachine(SimCluster& cluster, testing::Machine* alone) : cluster_(cluster) {
    CPU_ZERO(&own_);
    CPU_SET(0, &own_);
    CPU_ZERO(&rest_);
    CPU_SET(1, &rest_);
    Pin({alone}, own_);
    Pin(Others(alone), rest_);
    PinThreads("/proc/self", rest_);
  }
  ~CorePerMachine() {
    cpu_set_t all;
    CPU_ZERO(&all);
    for (long cpu = 0; cpu < sysconf(_SC_NPROCESSORS_ONLN); ++cpu) CPU_SET(static_cast<int>(cpu), &all);
    Pin(Others(nullptr), all);
    PinThreads("/proc/self", all);
  }

 private:
  std::vector<testing::Machine*> Others(testing::Machine* except) {
    std::vector<testing::Machine*> out = {&cluster_.head, &cluster_.client};
    for (testing::Machine* w : cluster_.workers) out.push_back(w);
    out.erase(std::remove(out.begin(), out.end(), except), out.end());
    return out;
  }
  SimCluster& cluster_;
  cpu_set_t own_, rest_;
};

struct Window {
  int64_t save_start = 0, reported = 0, stored = 0;
};

}  // namespace

bool RunUploadCost(SimCluster& cluster, const UploadCostRun& run, UploadCost* r, std::string* error) {
  const int rounds = run.rounds, baseline_ms = run.baseline_ms;
  r->tag = run.tag;
  JobShape shape{"steps", run.mib, 1, 0, run.upload_rate};
  if (!SubmitJob(cluster, shape, r->tag, &r->job_id, error)) return false;
  std::optional<RankStart> start;
  if (!testing::WaitFor([&] { return (start = FindStart(cluster, r->tag, 0, 0)).has_value(); }, 60s, 10ms)) {
    *error = "the stepping rank never started (job " + r->job_id + " " + cluster.JobState(r->job_id) + ")";
    return false;
  }
  r->machine = start->machine;
  r->checkpoint_dir = start->checkpoint_dir;
  testing::Machine& m = *start->machine;
  std::optional<pid_t> agent = DaemonPid(m), head = DaemonPid(cluster.head);
  if (!agent || !head) {
    *error = "cannot find the pids of " + m.name() + "'s clusterd or the head's";
    return false;
  }
  std::string out = kOutRoot + "/" + r->tag;
  std::string job = "job " + RegexQuote(r->job_id) + " attempt 0: stored ";

  std::optional<CorePerMachine> pinned;
  if (run.core_per_machine) {
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
      *error = "--core-per-machine needs 2 CPUs";
      return false;
    }
    pinned.emplace(cluster, &m);
  }
  std::vector<Window> windows;
  std::this_thread::sleep_for(std::chrono::milliseconds(baseline_ms) + 1s);
  for (int epoch = 1; epoch <= rounds; ++epoch) {
    std::string name = fmt::format("checkpoint_{:06d}", epoch);
    std::ofstream(m.HostPath(out + "/save-" + std::to_string(epoch))) << "\n";
    Window w;
    std::string saved = m.HostPath(out + "/saved-" + std::to_string(epoch));
    bool done = testing::WaitFor(
        [&] {
          int64_t save_end = 0;
          std::ifstream in(saved);
          return static_cast<bool>(in >> w.save_start >> save_end >> w.reported);
        },
        120s, 1ms);
    if (!done) {
      *error = fmt::format("the rank never saved checkpoint {} (job {} {})", epoch, r->job_id,
                           cluster.JobState(r->job_id));
      return false;
    }
    auto agent_cpu = CpuSeconds(*agent), head_cpu = CpuSeconds(*head);
    auto agent_threads = ThreadCpu(*agent), head_threads = ThreadCpu(*head);
    // The window ends at the agent's own stamp, so polling slowly loses
    // nothing, and the poll (a walk of the machine's /tmp/clusterd and a
    // regex over its log) stays off the CPUs the rank wants.
    std::optional<int64_t> stored;
    const std::regex stored_line(job + name + " ");
    done = testing::WaitFor(
        [&] {
          stored = FirstLogged(ReadDaemonLogs(m, "worker"), stored_line, w.reported);
          return stored.has_value();
        },
        300s, 100ms);
    auto agent_cpu2 = CpuSeconds(*agent), head_cpu2 = CpuSeconds(*head);
    r->agent_nice0_cpu_ms.push_back(NiceZeroCpu(agent_threads, ThreadCpu(*agent)) * 1e3);
    r->head_nice0_cpu_ms.push_back(NiceZeroCpu(head_threads, ThreadCpu(*head)) * 1e3);
    if (!done) {
      *error = fmt::format("{} was never stored (see {}'s worker log)", name, m.name());
      return false;
    }
    w.stored = *stored;
    windows.push_back(w);
    r->upload_ms.push_back(static_cast<double>(w.stored - w.reported) / 1e6);
    std::ifstream saved_in(saved);
    int64_t a = 0, b = 0;
    saved_in >> a >> b;
    r->save_ms.push_back(static_cast<double>(b - a) / 1e6);
    if (agent_cpu && agent_cpu2) r->agent_cpu_ms.push_back((*agent_cpu2 - *agent_cpu) * 1e3);
    if (head_cpu && head_cpu2) r->head_cpu_ms.push_back((*head_cpu2 - *head_cpu) * 1e3);
    r->last_checkpoint = name;
    std::cerr << fmt::format("checkpoints_bench: upload {}: saved in {:.1f} ms, reported at {:.3f}, stored at {:.3f} "
                             "({:.1f} ms)\n",
                             epoch, r->save_ms.back(), static_cast<double>(w.reported) / 1e9,
                             static_cast<double>(w.stored) / 1e9, r->upload_ms.back());
    std::this_thread::sleep_for(std::chrono::milliseconds(baseline_ms));
  }

  std::ofstream(m.HostPath(out + "/stop")) << "\n";
  std::vector<int64_t> ends, cpus;
  bool stopped = testing::WaitFor(
      [&] {
        std::ifstream in(m.HostPath(out + "/steps"));
        ends.clear();
        cpus.clear();
        for (int64_t t, c; in >> t >> c;) {
          ends.push_back(t);
          cpus.push_back(c);
        }
        return ends.size() > 1;
      },
      30s, 10ms);
  if (!stopped) {
    *error = "the rank never wrote its steps";
    return false;
  }
  std::optional<JobInfo> info;
  testing::WaitFor([&] { return (info = cluster.Job(r->job_id)) && info->state() == SUCCEEDED; }, 30s, 100ms);
  if (info && info->stored_checkpoints_size() > 0) r->bytes = info->stored_checkpoints().rbegin()->bytes();

  double base_sum = 0, during_sum = 0, base_cpu = 0, during_cpu = 0;
  for (size_t i = 1; i < ends.size(); ++i) {
    int64_t from = ends[i - 1], to = ends[i];
    double ms = static_cast<double>(to - from) / 1e6, cpu_ms = static_cast<double>(cpus[i] - cpus[i - 1]) / 1e6;
    if (from < ends[0] + kWarmupNs) continue;
    bool during = false, near = false;
    for (const Window& w : windows) {
      during = during || (from >= w.reported && to <= w.stored);
      near = near || (to > w.save_start && from < w.stored + kSettleNs);
    }
    if (during) {
      r->during_steps.Add(ms);
      during_sum += ms;
      during_cpu += cpu_ms;
    } else if (!near) {
      r->base_steps.Add(ms);
      base_sum += ms;
      base_cpu += cpu_ms;
    }
  }
  if (r->base_steps.empty() || r->during_steps.empty()) {
    *error = fmt::format("too few steps: {} in the baseline, {} during uploads", r->base_steps.size(),
                         r->during_steps.size());
    return false;
  }
  r->base_mean_ms = base_sum / static_cast<double>(r->base_steps.size());
  r->during_mean_ms = during_sum / static_cast<double>(r->during_steps.size());
  r->base_cpu_ms = base_cpu / static_cast<double>(r->base_steps.size());
  r->during_cpu_ms = during_cpu / static_cast<double>(r->during_steps.size());
  return true;
}

}  // namespace clusterd::bench
