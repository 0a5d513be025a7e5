#include "daemon/agent/gpu_probe.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <sstream>

#include <fmt/format.h>

#include "common/logging.h"
#include "common/threads.h"

namespace clusterd {

namespace {
// nvidia-smi's output for a few GPUs is a few KiB; more is not its.
constexpr size_t kMaxOutputBytes = 256 * 1024;
}  // namespace

NvidiaSmiRun RunWithTimeout(const std::string& program, const std::vector<std::string>& args, Micros timeout,
                            const std::atomic<bool>* stop, bool* timed_out) {
  *timed_out = false;
  NvidiaSmiRun run;
  run.exit_code = -1;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    run.output = "cannot make a pipe for nvidia-smi";
    return run;
  }
  std::vector<std::string> argv_text = {program};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& arg : argv_text) argv.push_back(arg.data());
  argv.push_back(nullptr);
  // posix_spawn, not fork: the agent has threads and may be large, and the
  // child gets its own process group, so a timeout kills all it started.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, program.c_str(), &actions, &attributes, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (spawned != 0) {
    close(fds[0]);
    close(fds[1]);
    run.output = fmt::format("cannot start {}: {}", program, std::strerror(spawned));
    return run;
  }
  close(fds[1]);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(timeout);
  bool open_end = true;
  char buffer[4096];
  while (open_end) {
    if (stop && stop->load()) break;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      *timed_out = true;
      break;
    }
    pollfd pfd{fds[0], POLLIN, 0};
    // Short waits, so that a stop is seen soon.
    int ready = poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left.count(), 100)));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    ssize_t got = read(fds[0], buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      open_end = false;
      break;
    }
    if (run.output.size() < kMaxOutputBytes) run.output.append(buffer, static_cast<size_t>(got));
  }
  close(fds[0]);
  // The group id stays the child's while any of the group lives, so this
  // reaches only its processes.
  if (open_end) kill(-pid, SIGKILL);
  int status = 0;
  // The agent reaps its children elsewhere too (its launcher's orphans):
  // one reaped there leaves the exit code unknown, which the parser allows.
  if (waitpid(pid, &status, 0) == pid) {
    if (WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
  }
  return run;
}

GpuProbe::GpuProbe(Options options)
    : options_(std::move(options)), ever_listed_(options_.expected.begin(), options_.expected.end()) {}

GpuProbe::~GpuProbe() {
  stop_ = true;
  {
    std::lock_guard<std::mutex> lock(wake_mutex_);
    wake_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

void GpuProbe::Start() {
  if (!enabled() || thread_.joinable()) return;
  thread_ = StartNamedThread("gpu-probe", [this] { Loop(); });
}

void GpuProbe::Loop() {
  while (!stop_) {
    ProbeNow();
    std::unique_lock<std::mutex> lock(wake_mutex_);
    wake_.wait_for(lock, std::chrono::microseconds(options_.interval), [this] { return stop_.load(); });
  }
}

NvidiaSmiRun GpuProbe::Run(const std::vector<std::string>& args, bool* timed_out) {
  return RunWithTimeout(options_.nvidia_smi, args, options_.timeout, &stop_, timed_out);
}

void GpuProbe::ProbeNow() {
  const auto& sets = GpuQueryFieldSets();
  bool timed_out = false;
  NvidiaSmiRun run;
  for (;;) {
    run = Run({"--query-gpu=" + sets[field_set_], "--format=csv,noheader,nounits"}, &timed_out);
    if (timed_out || stop_ || !RefusedFields(run) || field_set_ + 1 >= sets.size()) break;
    LOG_INFO("nvidia-smi takes no --query-gpu={}; asking for fewer fields", sets[field_set_]);
    ++field_set_;
  }
  if (stop_) return;
  if (timed_out) {
    // A hung nvidia-smi says something is wrong, but not which GPU: the
    // last reading stands, and the log says so.
    LOG_WARN("GPU probe: nvidia-smi took more than {} ms and was killed", options_.timeout / 1000);
    return;
  }
  std::vector<std::string> fields;
  {
    std::istringstream in(sets[field_set_]);
    for (std::string field; std::getline(in, field, ',');) fields.push_back(field);
  }
  GpuProbeReading reading = ParseGpuQuery(run, fields, bus_ids_);
  if (remapped_rows_ && field_set_ == 0 && !reading.bus_ids.empty()) {
    bool remap_timed_out = false;
    NvidiaSmiRun remapped =
        Run({std::string("--query-remapped-rows=") + RemappedRowsQuery(), "--format=csv,noheader"}, &remap_timed_out);
    if (!remap_timed_out && (RefusedFields(remapped) || remapped.exit_code > 0)) {
      remapped_rows_ = false;  // a driver or GPU without row remapping
    } else if (!remap_timed_out) {
      AddRemappedRows(remapped, &reading);
    }
  }
  for (const auto& [bus_id, index] : reading.bus_ids) bus_ids_[bus_id] = index;
  for (const auto& [index, gpu] : reading.gpus) ever_listed_.insert(index);
  if (options_.watch_missing) MarkMissing(std::vector<int>(ever_listed_.begin(), ever_listed_.end()), &reading);
  if (reading.failure != logged_failure_) {
    if (!reading.failure.empty()) LOG_WARN("GPU probe: {}", reading.failure);
    logged_failure_ = reading.failure;
  }
  std::vector<GpuStatus> latest;
  for (auto& [index, gpu] : reading.gpus) {
    if (logged_faults_[index] != gpu.fault()) {
      if (!gpu.fault().empty()) LOG_WARN("GPU {} is unfit for work: {}", index, gpu.fault());
      logged_faults_[index] = gpu.fault();
    }
    latest.push_back(std::move(gpu));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  latest_ = std::move(latest);
}

std::vector<GpuStatus> GpuProbe::Latest() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return latest_;
}

void GpuProbe::AddTo(NodeUsage* usage, size_t max_bytes) const {
  for (GpuStatus& gpu : Latest()) *usage->add_gpus() = std::move(gpu);
  // The longest fault is halved until it fits; a few words still say what
  // it is, and the head keeps the first words it heard.
  constexpr size_t kShortest = 24;
  while (usage->ByteSizeLong() > max_bytes) {
    GpuStatus* longest = nullptr;
    for (GpuStatus& gpu : *usage->mutable_gpus()) {
      if (!longest || gpu.fault().size() > longest->fault().size()) longest = &gpu;
    }
    if (!longest || longest->fault().size() <= kShortest) break;
    longest->set_fault(longest->fault().substr(0, std::max(kShortest, longest->fault().size() / 2)));
  }
}

}  // namespace clusterd
