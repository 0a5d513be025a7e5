#include "daemon/agent/launcher_client.h"

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "common/file_util.h"
#include "common/logging.h"
#include "common/process_record.h"
#include "daemon/agent/descendants.h"
#include "daemon/agent/launcher_process.h"
#include "launcher.pb.h"

extern char** environ;

namespace clusterd {

namespace {

// How long a launch may take to be answered (a fork and an exec, or the
// failure of one): beyond it the launcher is taken for hung.
constexpr int kAnswerTimeoutMs = 30'000;

}  // namespace

std::string LauncherProgram() {
  const std::string dir = ExecutableDir();
  const std::string beside = dir + "/clusterd-launcher";
  if (access(beside.c_str(), X_OK) == 0) return beside;
  return dir + "/../lib/clusterd/clusterd-launcher";
}

LauncherClient::LauncherClient(std::string program, LauncherOptions options)
    : program_(std::move(program)), options_(std::move(options)) {
  // Whatever the launcher leaves behind if it dies comes back here.
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    LOG_WARN("cannot make the node agent a child subreaper ({}): a rank's processes that leave its process "
             "group may outlive `clusterd stop`", std::strerror(errno));
  }
}

LauncherClient::~LauncherClient() {
  if (socket_ >= 0) close(socket_);
  if (launcher_pid_ > 0) {
    // It kills what is below it, then exits; wait for that, within reason.
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (waitpid(launcher_pid_, nullptr, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > give_up) {
        kill(launcher_pid_, SIGKILL);
        waitpid(launcher_pid_, nullptr, 0);
        break;
      }
      usleep(5000);
    }
  }
  // The launcher removed its attempts' cgroups as it exited.
  options_.containment.RemoveRoot();
}

Status LauncherClient::Start() {
  if (socket_ >= 0) return Status::Ok();
  int ends[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends) != 0) {
    return Status::IOError(fmt::format("socketpair for the launcher: {}", std::strerror(errno)));
  }
  // Room for a rank's whole environment in one packet.
  int buffer = 4 << 20;
  for (int fd : ends) {
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buffer, sizeof buffer);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer, sizeof buffer);
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, ends[1], kLauncherSocketFd);  // dup2 clears close-on-exec
  std::string name = "clusterd-launcher";
  char* argv[] = {name.data(), nullptr};
  pid_t pid = -1;
  int failed = posix_spawn(&pid, program_.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  close(ends[1]);
  if (failed != 0) {
    close(ends[0]);
    return Status::IOError(fmt::format("cannot start the launcher process {}: {}", program_, std::strerror(failed)));
  }
  launcher_pid_ = pid;
  socket_ = ends[0];
  LauncherCommand settings_command;
  LauncherSettings* settings = settings_command.mutable_settings();
  settings->set_containment(static_cast<int>(options_.containment.kind));
  settings->set_cgroup_root(options_.containment.root);
  settings->set_allowed_run_as(options_.allowed_run_as);
  const LimitControllers& limits = options_.containment.limits;
  CgroupLimits* cgroup_limits = settings->mutable_limits();
  cgroup_limits->set_memory_root(limits.memory.root);
  cgroup_limits->set_memory_v2(limits.memory.v2);
  cgroup_limits->set_pids_root(limits.pids.root);
  cgroup_limits->set_pids_v2(limits.pids.v2);
  cgroup_limits->set_cpu_root(limits.cpu.root);
  cgroup_limits->set_cpu_v2(limits.cpu.v2);
  cgroup_limits->set_cpu_limit(limits.settings.cpu_limit);
  cgroup_limits->set_attempt_pids_max(limits.settings.attempt_pids_max);
  if (!SendCommand(settings_command.SerializeAsString())) {
    return Status::IOError("the launcher process ended as it started");
  }
  LOG_INFO("launcher process started (pid {})", pid);
  return Status::Ok();
}

bool LauncherClient::Receive(bool wait, LauncherEvent* event) {
  if (wait) {
    pollfd readable{socket_, POLLIN, 0};
    int ready;
    do {
      ready = poll(&readable, 1, kAnswerTimeoutMs);
    } while (ready < 0 && errno == EINTR);
    if (ready == 0) {
      LauncherGone("it did not answer a launch within 30 s");
      return false;
    }
  }
  ssize_t size;
  do {
    size = recv(socket_, nullptr, 0, MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);
  } while (size < 0 && errno == EINTR);
  if (size < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
  if (size <= 0) {
    LauncherGone(size == 0 ? "its socket closed" : std::strerror(errno));
    return false;
  }
  std::string packet(static_cast<size_t>(size), '\0');
  if (recv(socket_, packet.data(), packet.size(), MSG_DONTWAIT) != size || !event->ParseFromString(packet)) {
    LauncherGone("it sent what the agent could not read");
    return false;
  }
  return true;
}

void LauncherClient::Take(const LauncherEvent& event) {
  if (event.has_idle()) {
    // Nothing of that attempt was left below it; the launcher keeps it for a later one.
    auto keeper = keepers_.find(event.idle().attempt());
    if (keeper != keepers_.end() && keeper->second == event.idle().keeper_pid()) keepers_.erase(keeper);
    idle_keepers_.insert(event.idle().keeper_pid());
    return;
  }
  if (!event.has_ended()) return;
  pid_t pid = event.ended().pid();
  if (idle_keepers_.erase(pid) > 0) return;
  for (auto it = keepers_.begin(); it != keepers_.end(); ++it) {
    if (it->second == pid) {  // it ended by itself: nothing of its attempt was left
      keepers_.erase(it);
      return;
    }
  }
  // Orphans that ended below the launcher are not the agent's to report.
  if (running_.erase(pid) == 0) return;
  ChildExit exit;
  exit.pid = pid;
  exit.exit_code = event.ended().exit_code();
  exit.signal = event.ended().signal();
  exit.out_of_memory = event.ended().out_of_memory();
  exit.memory_limit_bytes = event.ended().memory_limit_bytes();
  ended_.push_back(exit);
}

void LauncherClient::LauncherGone(const std::string& why) {
  if (socket_ < 0) return;
  close(socket_);
  socket_ = -1;
  if (launcher_pid_ > 0) kill(launcher_pid_, SIGKILL);  // a hung one (not reaped yet, so still it)
  // Its ranks died with it (parent-death signal); make sure, and report them so.
  if (!running_.empty()) {
    LOG_ERROR("the launcher process is gone ({}): {} rank process(es) ended with it", why, running_.size());
  } else {
    LOG_WARN("the launcher process is gone ({}); a new one starts with the next rank", why);
  }
  for (pid_t pid : running_) {
    kill(pid, SIGKILL);
    ChildExit exit;
    exit.pid = pid;
    exit.signal = SIGKILL;
    ended_.push_back(exit);
  }
  running_.clear();
  keepers_.clear();  // the launcher killed all below it
  idle_keepers_.clear();
}

bool LauncherClient::SendCommand(const std::string& bytes) {
  ssize_t sent;
  do {
    sent = send(socket_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  if (sent != static_cast<ssize_t>(bytes.size())) {
    LauncherGone(std::strerror(errno));
    return false;
  }
  return true;
}

bool LauncherClient::SendRequest(const SpawnRequest& request, int64_t id, Status* refused) {
  if (request.argv.empty() || request.argv[0].empty()) {
    *refused = Status::InvalidArgument("empty entrypoint");
    return true;
  }
  LauncherCommand command;
  LaunchRequest& launch = *command.mutable_launch();
  launch.set_id(id);
  for (const auto& arg : request.argv) launch.add_argv(arg);
  launch.set_working_dir(request.working_dir);
  launch.mutable_env()->Reserve(static_cast<int>(request.env.size()));
  for (const std::string& entry : request.env) launch.add_env(entry);
  launch.set_log_path(request.log_path);
  launch.set_output_attached(request.output_fd >= 0);
  launch.set_attempt(request.attempt);
  launch.set_run_as(request.run_as);
  launch.set_run_as_asked_by_job(request.run_as_asked_by_job);
  for (const std::string& dir : request.writable_dirs) launch.add_writable_dirs(dir);
  launch.set_rank(request.rank);
  launch.set_memory_limit_bytes(request.memory_limit_bytes);
  launch.set_cpus(request.cpus);
  const std::string bytes = command.SerializeAsString();
  // The output pipe travels in the same packet: the kernel holds a
  // reference from here on, so the caller may close its copy at once.
  const ssize_t sent = SendPacketWithFd(socket_, bytes, request.output_fd);
  if (sent < 0 && errno == EMSGSIZE) {
    *refused = Status::InvalidArgument(
        fmt::format("the rank's arguments and environment ({} bytes) are too large to start it", bytes.size()));
    return true;
  }
  if (sent != static_cast<ssize_t>(bytes.size())) {
    LauncherGone(std::strerror(errno));
    return false;
  }
  return true;
}

Result<pid_t> LauncherClient::Spawn(const SpawnRequest& request) { return SpawnAll({request}).front(); }

std::vector<Result<pid_t>> LauncherClient::SpawnAll(const std::vector<SpawnRequest>& requests) {
  // Requests in flight at most: the answers (a few bytes each) then never
  // fill the socket while the agent is still sending, whatever the batch.
  constexpr size_t kWindow = 64;
  const Status not_sent = Status::Unavailable("the launcher process could not be reached");
  const Status lost = Status::Unavailable("the launcher process ended while it started the rank");
  std::vector<Result<pid_t>> out(requests.size(), not_sent);
  // Launch id -> request index. The launcher answers each attempt's
  // launches in order, but attempts as their keepers get to them.
  std::map<int64_t, size_t> in_flight;
  size_t next = 0;
  int restarts = 1;  // a launcher that died since the last launch is replaced once
  while (next < requests.size() || !in_flight.empty()) {
    while (next < requests.size() && in_flight.size() < kWindow) {
      if (Status started = Start(); !started.ok()) {
        for (; next < requests.size(); ++next) out[next] = started;
        break;
      }
      Status refused;
      const int64_t id = next_id_++;
      if (!SendRequest(requests[next], id, &refused)) {
        // What was in flight died with the launcher; the rest goes to a new one.
        for (const auto& [unused, index] : in_flight) out[index] = lost;
        in_flight.clear();
        if (restarts-- == 0) return out;
        continue;
      }
      if (!refused.ok()) {
        out[next++] = refused;
        continue;
      }
      in_flight.emplace(id, next++);
    }
    if (in_flight.empty()) break;
    LauncherEvent event;
    bool answered = false;
    while (!answered && Receive(true, &event)) {
      auto found = event.has_answer() ? in_flight.find(event.answer().id()) : in_flight.end();
      if (found == in_flight.end()) {
        Take(event);  // an exit, of a rank of this batch or an earlier one
        continue;
      }
      const LaunchAnswer& answer = event.answer();
      Result<pid_t>& result = out[found->second];
      if (answer.keeper_pid() > 0) {
        keepers_[requests[found->second].attempt] = answer.keeper_pid();
        idle_keepers_.erase(answer.keeper_pid());
      }
      if (answer.pid() > 0) {
        running_.insert(answer.pid());
        result = static_cast<pid_t>(answer.pid());
      } else if (answer.exec_failed()) {
        result = Status::FailedPrecondition(answer.error());
      } else {
        result = Status::IOError(answer.error());
      }
      in_flight.erase(found);
      answered = true;
    }
    if (!answered) {  // the launcher is gone; its ranks died with it
      for (const auto& [unused, index] : in_flight) out[index] = lost;
      for (; next < requests.size(); ++next) out[next] = lost;
      in_flight.clear();
    }
  }
  return out;
}

// The group only, never the pid alone: after the leader is reaped its pid
// may be another process's, while the group id stays taken until the group is empty.
void LauncherClient::SignalGroup(pid_t pid, int signal_number) {
  if (pid > 1) kill(-pid, signal_number);
}

std::vector<ChildExit> LauncherClient::Reap() {
  LauncherEvent event;
  while (socket_ >= 0 && Receive(false, &event)) Take(event);
  // The agent's own children: the launcher, and orphans of a launcher that
  // died (this process is their subreaper), which are not ranks.
  for (;;) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) break;
    if (pid == launcher_pid_) {
      launcher_pid_ = -1;  // reaped: its pid may be another process's from now on
      LauncherGone(fmt::format("pid {} {}", pid,
                               WIFSIGNALED(status) ? fmt::format("was killed by signal {}", WTERMSIG(status))
                                                   : fmt::format("exited with code {}", WEXITSTATUS(status))));
    }
  }
  std::vector<ChildExit> out;
  out.swap(ended_);
  return out;
}

pid_t LauncherClient::GroupOf(pid_t pid) { return pid > 0 ? getpgid(pid) : -1; }

pid_t LauncherClient::ParentOf(pid_t pid) { return pid > 0 ? ProcessRecord::Of(pid).parent : 0; }

std::vector<pid_t> LauncherClient::BelowAgent() const {
  std::vector<pid_t> out;
  for (pid_t pid : Descendants(getpid())) {
    if (pid != launcher_pid_) out.push_back(pid);
  }
  return out;
}

int LauncherClient::KillDescendants() {
  std::vector<pid_t> all = BelowAgent();
  for (pid_t pid : all) kill(pid, SIGKILL);
  return static_cast<int>(all.size());
}

bool LauncherClient::MayHaveLeftovers() {
  // What a rank leaves behind outside its group is handed to its keeper,
  // their subreaper, when the rank exits (or to the launcher, where a
  // keeper died). While the children of both are all running ranks and
  // keepers, nothing was left, and /proc need not be scanned (that scan, a
  // read of every process's stat, was the agent's largest cost per job in
  // a burst of short jobs).
  if (launcher_pid_ <= 0) return true;
  auto children = MainThreadChildren(launcher_pid_);
  if (!children) return true;
  std::set<pid_t> keepers = idle_keepers_;  // nothing is below them
  for (const auto& [attempt, pid] : keepers_) keepers.insert(pid);
  for (pid_t child : *children) {
    if (!running_.count(child) && !keepers.count(child)) return true;
  }
  for (pid_t keeper : keepers) {
    auto below = MainThreadChildren(keeper);  // none: it has ended meanwhile, and left nothing
    if (below && !std::all_of(below->begin(), below->end(), [&](pid_t pid) { return running_.count(pid); })) {
      return true;
    }
  }
  return false;
}

int LauncherClient::KillLeftovers(const std::string& job_id, int attempt) {
  const std::string key = AttemptKey(job_id, attempt);
  auto keeper = keepers_.find(key);
  if (keeper == keepers_.end()) return 0;  // it ended by itself: nothing was left
  std::vector<pid_t> found = Descendants(keeper->second);
  keepers_.erase(keeper);
  LauncherCommand command;
  command.mutable_end()->set_attempt(key);
  if (socket_ >= 0) SendCommand(command.SerializeAsString());
  return static_cast<int>(found.size());
}

}  // namespace clusterd
