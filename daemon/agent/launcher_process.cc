#include "daemon/agent/launcher_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "daemon/agent/attempt_cgroup.h"
#include "daemon/agent/descendants.h"
#include "daemon/agent/run_as_user.h"
#include "daemon/agent/spawn.h"
#include "launcher.pb.h"

namespace clusterd {

namespace {

bool SendEvent(int fd, const LauncherEvent& event) {
  std::string bytes = event.SerializeAsString();
  ssize_t n;
  do {
    n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(bytes.size());
}

// One packet, whatever its size, and the descriptor it carries (else -1,
// close-on-exec: a rank gets it only as its stdout and stderr); false when
// the agent is gone.
bool ReceivePacket(int fd, std::string* packet, int* attached_fd) {
  *attached_fd = -1;
  ssize_t size;
  do {
    size = recv(fd, nullptr, 0, MSG_PEEK | MSG_TRUNC);  // no control buffer: the descriptor stays queued
  } while (size < 0 && errno == EINTR);
  if (size <= 0) return false;
  packet->resize(static_cast<size_t>(size));
  iovec data{packet->data(), packet->size()};
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = recvmsg(fd, &message, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  for (cmsghdr* c = CMSG_FIRSTHDR(&message); c; c = CMSG_NXTHDR(&message, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int))) {
      std::memcpy(attached_fd, CMSG_DATA(c), sizeof(int));
    }
  }
  return n == size;
}

// Tells the agent of every child that ended: keepers, and the ranks of a
// keeper that died (they come back to this subreaper, the parent-death
// signal of their keeper killing them); the agent ignores pids it does
// not know.
bool ReportEnded(int fd) {
  for (;;) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return true;
    LauncherEvent event;
    ChildEnded* ended = event.mutable_ended();
    ended->set_pid(pid);
    ended->set_exit_code(WIFEXITED(status) ? WEXITSTATUS(status) : 0);
    ended->set_signal(WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    if (!SendEvent(fd, event)) return false;
  }
}

bool SendWithFd(int socket, const std::string& bytes, int fd) {
  return SendPacketWithFd(socket, bytes, fd) == static_cast<ssize_t>(bytes.size());
}

// Closes every descriptor above stderr but `keep`.
void CloseAllBut(int keep) {
  if (keep > STDERR_FILENO + 1) close_range(STDERR_FILENO + 1, static_cast<unsigned>(keep - 1), 0);
  close_range(static_cast<unsigned>(keep + 1), ~0u, 0);
}

// Kills every process below this one, and reaps them. Orphans keep coming
// back to this subreaper while their parents die, so kill and reap until a
// scan finds nobody (bounded, in case something cannot die).
void KillEverythingBelow() {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    std::vector<pid_t> left = Descendants(getpid());
    for (pid_t pid : left) kill(pid, SIGKILL);
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    if (left.empty() || std::chrono::steady_clock::now() > give_up) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// A signalfd for SIGCHLD (blocked by the caller), or -1.
int ChildSignalFd() {
  sigset_t child;
  sigemptyset(&child);
  sigaddset(&child, SIGCHLD);
  return signalfd(-1, &child, SFD_CLOEXEC | SFD_NONBLOCK);
}

void Drain(int signal_fd) {
  signalfd_siginfo info;
  while (read(signal_fd, &info, sizeof info) > 0) {
  }
}

bool Readable(int fd) {
  pollfd readable{fd, POLLIN, 0};
  return poll(&readable, 1, 0) > 0;
}

// ---- The keeper: between the launcher and an attempt's ranks. It is
// their parent and their child subreaper, so all that they start (setsid,
// double forks, a cleared environment) stays below it whatever its parents
// do; ending the attempt closes its socket, and it kills everything below
// it and exits. With nothing left below it (its ranks ended and left
// nothing) it says so (KeeperIdle) and waits: the launcher hands it the
// next attempt, which its cgroup (made with the keeper, named for it, not
// for an attempt) then holds, so that a burst of short jobs costs no fork
// and exit of a keeper, and no cgroup made and removed, each.

// Starts one rank as the request says, as its run_as user when it names one.
LaunchAnswer KeeperLaunch(LaunchRequest& request, int output_fd, const std::string& allowed_run_as,
                          std::optional<AttemptCgroup>& cgroup, std::set<std::string>* given) {
  LaunchAnswer answer;
  answer.set_id(request.id());
  answer.set_keeper_pid(getpid());
  if (request.output_attached() && output_fd < 0) {
    answer.set_error("the rank's output pipe did not reach the launcher");
    return answer;
  }
  SpawnRequest spawn;
  spawn.argv.assign(request.argv().begin(), request.argv().end());
  spawn.working_dir = request.working_dir();
  // Moved, not copied: the request is done with once the rank is started.
  for (std::string& entry : *request.mutable_env()) spawn.env.push_back(std::move(entry));
  spawn.log_path = request.log_path();
  spawn.output_fd = output_fd;
  if (!request.run_as().empty()) {
    Result<RunAsUser> user = ResolveRunAs(request.run_as(), request.run_as_asked_by_job(), allowed_run_as);
    Status ready = user.status();
    for (const std::string& dir : request.writable_dirs()) {
      if (!ready.ok() || !given->insert(dir).second) continue;
      ready = GiveTree(dir, *user);
      LetPassTo(dir);
    }
    if (!ready.ok()) {
      answer.set_error(ready.message());
      answer.set_exec_failed(true);  // the rank cannot run so here, whatever the node's resources
      return answer;
    }
    // The rank's report() reaches the agent through its socket: open to
    // the user (a peer that is no rank's process is refused by pid).
    for (const std::string& entry : spawn.env) {
      static const std::string kSocket = "CLUSTER_AGENT_SOCKET=";
      if (entry.compare(0, kSocket.size(), kSocket) != 0) continue;
      const std::string socket_path = entry.substr(kSocket.size());
      chmod(socket_path.c_str(), 0666);
      LetPassTo(socket_path);
    }
    if (user->uid != geteuid()) {
      spawn.switch_user = true;
      spawn.uid = user->uid;
      spawn.gid = user->gid;
      spawn.groups = user->groups;
    }
    SetUserEnvironment(*user, &spawn.env);
  }
  if (cgroup) {
    Result<std::vector<int>> fds = cgroup->PrepareRank(request.rank(), {request.memory_limit_bytes(), request.cpus()});
    if (!fds.ok()) {
      answer.set_error(fds.status().message());
      return answer;
    }
    spawn.cgroup_procs_fds = std::move(*fds);
  }
  Result<pid_t> pid = SpawnProcess(spawn);
  for (int fd : spawn.cgroup_procs_fds) close(fd);
  if (pid.ok()) {
    answer.set_pid(pid.value());
  } else {
    answer.set_error(pid.status().message());
    answer.set_exec_failed(pid.status().code() == Status::Code::kFailedPrecondition);
  }
  return answer;
}

[[noreturn]] void RunKeeper(int socket_fd, std::string attempt, std::optional<AttemptCgroup> cgroup,
                            const std::string& allowed_run_as) {
  CloseAllBut(socket_fd);  // the agent's socket and the other keepers' are the launcher's alone
  prctl(PR_SET_NAME, "clusterd-keep");
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  if (cgroup) {
    if (Status added = cgroup->Add(getpid()); !added.ok()) {
      std::fprintf(stderr, "clusterd launcher: %s; the attempt's keeper holds its processes alone\n",
                   added.message().c_str());
      cgroup.reset();
    }
  }
  const int child_fd = ChildSignalFd();
  struct RankProcess {
    int rank = 0;
    int64_t memory_limit_bytes = 0;
  };
  std::map<pid_t, RankProcess> ranks;
  std::set<std::string> given;  // folders already made the run_as user's
  bool served = false;          // a rank of the attempt was asked for
  std::string packet;
  for (;;) {
    pollfd fds[2] = {{socket_fd, POLLIN, 0}, {child_fd, POLLIN, 0}};
    if (poll(fds, child_fd >= 0 ? 2 : 1, 1000) < 0 && errno != EINTR) break;
    if (child_fd >= 0) Drain(child_fd);
    bool children_left = true;
    for (;;) {
      int status = 0;
      pid_t pid = waitpid(-1, &status, WNOHANG);
      if (pid < 0 && errno == ECHILD) children_left = false;
      if (pid <= 0) break;
      auto rank = ranks.find(pid);
      if (rank == ranks.end()) continue;  // an orphan of a rank: not the agent's to hear of
      LauncherEvent event;
      ChildEnded* ended = event.mutable_ended();
      ended->set_pid(pid);
      ended->set_exit_code(WIFEXITED(status) ? WEXITSTATUS(status) : 0);
      ended->set_signal(WIFSIGNALED(status) ? WTERMSIG(status) : 0);
      // The kernel counted its kill before the rank died, so it is there by now.
      if (cgroup && cgroup->OutOfMemory(rank->second.rank)) {
        ended->set_out_of_memory(true);
        ended->set_memory_limit_bytes(rank->second.memory_limit_bytes);
      }
      ranks.erase(rank);
      if (!SendWithFd(socket_fd, event.SerializeAsString(), -1)) break;
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      int output_fd = -1;
      if (!ReceivePacket(socket_fd, &packet, &output_fd)) break;  // the attempt ends, or the launcher is gone
      LaunchRequest request;
      LauncherEvent event;
      if (!request.ParseFromString(packet)) {
        event.mutable_answer()->set_error("the attempt's keeper could not read the launcher's request");
      } else if (request.attempt() != attempt && !ranks.empty()) {
        // The launcher hands a keeper on only once it said it was idle.
        event.mutable_answer()->set_id(request.id());
        event.mutable_answer()->set_error("the keeper was handed another attempt while its ranks ran");
      } else {
        if (request.attempt() != attempt) {
          // Handed on from the idle pool: nothing of the last attempt is
          // below it, or in its cgroup, which holds this attempt now.
          attempt = request.attempt();
          given.clear();
          if (cgroup) cgroup->ClearForNextAttempt();
        }
        *event.mutable_answer() = KeeperLaunch(request, output_fd, allowed_run_as, cgroup, &given);
        if (event.answer().pid() > 0) ranks[event.answer().pid()] = {request.rank(), request.memory_limit_bytes()};
      }
      if (output_fd >= 0) close(output_fd);
      served = true;
      if (!SendWithFd(socket_fd, event.SerializeAsString(), -1)) break;
      continue;
    }
    // Nothing of the attempt is left here: the launcher may hand it on.
    if (served && !children_left && !Readable(socket_fd)) {
      served = false;
      LauncherEvent event;
      event.mutable_idle()->set_keeper_pid(getpid());
      event.mutable_idle()->set_attempt(attempt);
      if (!SendWithFd(socket_fd, event.SerializeAsString(), -1)) break;
    }
  }
  KillEverythingBelow();
  _exit(0);
}

LimitControllers LimitsOf(const CgroupLimits& given) {
  LimitControllers out;
  out.memory = {given.memory_root(), given.memory_v2()};
  out.pids = {given.pids_root(), given.pids_v2()};
  out.cpu = {given.cpu_root(), given.cpu_v2()};
  out.settings.cpu_limit = given.cpu_limit();
  out.settings.attempt_pids_max = given.attempt_pids_max();
  return out;
}

// ---- The launcher: serves the agent, and keeps one keeper per attempt,
// and idle keepers for the attempts to come. It never waits for a keeper:
// a launch is handed to its attempt's keeper and answered when the keeper
// answers, so that a burst of attempts' keepers exec and answer side by
// side instead of one after another.
class LauncherProcess {
 public:
  LauncherProcess(int agent_fd, int child_fd) : agent_fd_(agent_fd), child_fd_(child_fd) {}

  // Until the agent is gone.
  void Serve();
  // The agent is gone: every attempt's cgroup is killed and removed.
  void EndAll();

 private:
  // A launch handed to a keeper and not answered yet.
  struct PendingLaunch {
    LaunchRequest request;
    int output_fd = -1;  // the launcher's copy of the rank's output pipe, until answered
    bool resent = false;
  };
  struct Keeper {
    pid_t pid = -1;
    int fd = -1;          // the launcher's end of its socket
    std::string attempt;  // the attempt it holds, or (idle) held last
    std::optional<AttemptCgroup> cgroup;
    std::deque<PendingLaunch> pending;  // in the order sent: a keeper answers in order
  };
  enum class Relayed { kEvent, kIdle, kGone };
  // Idle keepers kept at most; each is a small process asleep.
  static constexpr size_t kMaxIdleKeepers = 16;

  // False when the agent is gone. Takes *output_fd (sets it to -1).
  bool HandleCommand(const std::string& packet, int* output_fd);
  // Hands the launch to its attempt's keeper (one from the idle pool, or a
  // new one, when it has none); false when the agent is gone.
  bool Launch(PendingLaunch launch);
  Keeper* KeeperFor(const std::string& attempt);
  // A new keeper's cgroup, named for the keeper ("keeper-<n>"), or none.
  std::optional<AttemptCgroup> MakeCgroup();
  // Its cgroup killed (where it has one), its socket closed: the keeper
  // kills what is left below it and exits. What it had not answered goes
  // to a new keeper once when `died` (it ended by itself, just as the
  // launch reached it), else is answered failed.
  void EndKeeper(const std::string& attempt, bool died);
  // The attempt's keeper found nothing of it left and was asked nothing
  // more: it goes to the idle pool, and the agent hears that it holds the
  // attempt no longer. False when the agent is gone.
  bool Retire(const std::string& attempt);
  // Closes an idle keeper's socket (it exits) and removes its last cgroup.
  void EndIdle(size_t index);
  // Hands the keeper's event to the agent. kIdle: it said it is idle, and
  // no launch is under way to it.
  Relayed RelayFrom(Keeper& keeper);
  bool Answer(int64_t id, const std::string& error);
  void RemoveCgroups();

  int agent_fd_;
  int child_fd_;
  LauncherSettings settings_;
  std::map<std::string, Keeper> keepers_;
  std::vector<Keeper> idle_;              // oldest first
  int64_t keepers_made_ = 0;
  std::vector<AttemptCgroup> to_remove_;  // not removed yet: their last members were not reaped, or not gone
};

std::optional<AttemptCgroup> LauncherProcess::MakeCgroup() {
  const LimitControllers limits = LimitsOf(settings_.limits());
  if (settings_.cgroup_root().empty() && !limits.any()) return std::nullopt;
  AttemptCgroup cgroup(static_cast<ContainmentKind>(settings_.containment()), settings_.cgroup_root(),
                       "keeper-" + std::to_string(++keepers_made_), limits);
  if (Status made = cgroup.Create(); !made.ok()) {
    std::fprintf(stderr, "clusterd launcher: %s; the attempt's keeper holds its processes alone\n",
                 made.message().c_str());
    return std::nullopt;
  }
  return cgroup;
}

LauncherProcess::Keeper* LauncherProcess::KeeperFor(const std::string& attempt) {
  auto found = keepers_.find(attempt);
  if (found != keepers_.end()) return &found->second;
  // The most recently idle keeper (its pages the likeliest still cached),
  // with its cgroup: it tells the attempt apart by the first request of it.
  if (!idle_.empty()) {
    Keeper keeper = std::move(idle_.back());
    idle_.pop_back();
    keeper.attempt = attempt;
    return &keepers_.emplace(attempt, std::move(keeper)).first->second;
  }
  std::optional<AttemptCgroup> cgroup = MakeCgroup();
  int ends[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends) != 0) {
    if (cgroup) cgroup->Remove();
    return nullptr;
  }
  int buffer = 4 << 20;  // room for a rank's whole environment in one packet
  for (int fd : ends) {
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buffer, sizeof buffer);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer, sizeof buffer);
  }
  pid_t pid = fork();  // this process is single-threaded: the child may do anything
  if (pid == 0) {
    close(ends[0]);
    RunKeeper(ends[1], attempt, cgroup, settings_.allowed_run_as());
  }
  close(ends[1]);
  if (pid < 0) {
    close(ends[0]);
    if (cgroup) cgroup->Remove();
    return nullptr;
  }
  Keeper keeper;
  keeper.pid = pid;
  keeper.fd = ends[0];
  keeper.attempt = attempt;
  keeper.cgroup = std::move(cgroup);
  return &keepers_.emplace(attempt, std::move(keeper)).first->second;
}

void LauncherProcess::EndKeeper(const std::string& attempt, bool died) {
  auto found = keepers_.find(attempt);
  if (found == keepers_.end()) return;  // it went idle: nothing of the attempt was left
  Keeper& keeper = found->second;
  // What it sent before it went still reaches the agent: closing its
  // socket unread would lose ranks' exits, and their job would wait for
  // them forever.
  while (Readable(keeper.fd) && RelayFrom(keeper) != Relayed::kGone) {
  }
  if (keeper.cgroup) {
    keeper.cgroup->KillAll();
    if (!keeper.cgroup->Remove()) to_remove_.push_back(*keeper.cgroup);
  }
  close(keeper.fd);
  std::deque<PendingLaunch> unanswered = std::move(keeper.pending);
  keepers_.erase(found);
  for (PendingLaunch& launch : unanswered) {
    if (died && !launch.resent) {
      launch.resent = true;
      if (!Launch(std::move(launch))) return;
      continue;
    }
    if (launch.output_fd >= 0) close(launch.output_fd);
    const char* why = died ? "the attempt's keeper process ended while it started the rank"
                           : "the attempt was ended while its rank started";
    if (!Answer(launch.request.id(), why)) return;
  }
}

bool LauncherProcess::Retire(const std::string& attempt) {
  auto found = keepers_.find(attempt);
  if (found == keepers_.end()) return true;
  LauncherEvent event;
  event.mutable_idle()->set_keeper_pid(found->second.pid);
  event.mutable_idle()->set_attempt(attempt);
  idle_.push_back(std::move(found->second));
  keepers_.erase(found);
  if (idle_.size() > kMaxIdleKeepers) EndIdle(0);
  return SendEvent(agent_fd_, event);
}

void LauncherProcess::EndIdle(size_t index) {
  Keeper& keeper = idle_[index];
  close(keeper.fd);
  if (keeper.cgroup && !keeper.cgroup->Remove()) to_remove_.push_back(*keeper.cgroup);
  idle_.erase(idle_.begin() + static_cast<std::ptrdiff_t>(index));
}

void LauncherProcess::RemoveCgroups() {
  to_remove_.erase(std::remove_if(to_remove_.begin(), to_remove_.end(),
                                  [](const AttemptCgroup& cgroup) { return cgroup.Remove(); }),
                   to_remove_.end());
}

bool LauncherProcess::Answer(int64_t id, const std::string& error) {
  LauncherEvent event;
  event.mutable_answer()->set_id(id);
  event.mutable_answer()->set_error(error);
  return SendEvent(agent_fd_, event);
}

LauncherProcess::Relayed LauncherProcess::RelayFrom(Keeper& keeper) {
  std::string packet;
  int unused = -1;
  if (!ReceivePacket(keeper.fd, &packet, &unused)) return Relayed::kGone;
  if (unused >= 0) close(unused);
  LauncherEvent event;
  if (!event.ParseFromString(packet)) return Relayed::kGone;
  // Said before a launch sent meanwhile reached it: it has that rank now.
  if (event.has_idle()) return keeper.pending.empty() ? Relayed::kIdle : Relayed::kEvent;
  if (event.has_answer() && !keeper.pending.empty() && keeper.pending.front().request.id() == event.answer().id()) {
    // The rank has its own copy of its output pipe now, or never will.
    if (keeper.pending.front().output_fd >= 0) close(keeper.pending.front().output_fd);
    keeper.pending.pop_front();
  }
  SendEvent(agent_fd_, event);
  return Relayed::kEvent;
}

bool LauncherProcess::Launch(PendingLaunch launch) {
  const std::string attempt = launch.request.attempt();
  Keeper* keeper = KeeperFor(attempt);
  if (keeper != nullptr) {
    if (SendWithFd(keeper->fd, launch.request.SerializeAsString(), launch.output_fd)) {
      keeper->pending.push_back(std::move(launch));
      return true;
    }
    if (!launch.resent) {  // it died just now: a new keeper takes the launch
      launch.resent = true;
      keeper->pending.push_back(std::move(launch));
      EndKeeper(attempt, true);
      return true;
    }
  }
  if (launch.output_fd >= 0) close(launch.output_fd);
  return Answer(launch.request.id(),
                "the attempt's keeper process could not be started or ended while it started the rank");
}

bool LauncherProcess::HandleCommand(const std::string& packet, int* output_fd) {
  LauncherCommand command;
  if (!command.ParseFromString(packet)) return Answer(0, "the launcher could not read the agent's request");
  if (command.has_settings()) {
    settings_ = command.settings();
    return true;
  }
  if (command.has_end()) {
    EndKeeper(command.end().attempt(), false);
    return true;
  }
  PendingLaunch launch;
  launch.request = std::move(*command.mutable_launch());
  launch.output_fd = *output_fd;
  *output_fd = -1;
  return Launch(std::move(launch));
}

void LauncherProcess::Serve() {
  const pid_t agent = getppid();
  std::string packet;
  std::vector<pollfd> fds;
  std::vector<std::string> attempts;  // of the keepers' fds, after the agent's, the signals' and the idle ones'
  for (;;) {
    fds.assign({{agent_fd_, POLLIN, 0}, {child_fd_, POLLIN, 0}});
    for (const Keeper& keeper : idle_) fds.push_back({keeper.fd, POLLIN, 0});
    const size_t first_busy = fds.size();
    attempts.clear();
    for (const auto& [attempt, keeper] : keepers_) {
      fds.push_back({keeper.fd, POLLIN, 0});
      attempts.push_back(attempt);
    }
    // The timeout is a safety net for a lost SIGCHLD and a re-parented
    // agent, and when cgroups wait to be removed.
    int ready = poll(fds.data(), fds.size(), to_remove_.empty() ? 1000 : 100);
    if (ready < 0 && errno != EINTR) return;
    if (fds[1].revents & POLLIN) Drain(child_fd_);
    if (!ReportEnded(agent_fd_)) return;
    // An idle keeper has nothing to say: it ended, or says idle again.
    for (size_t i = first_busy; i-- > 2;) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      int unused = -1;
      if (!ReceivePacket(idle_[i - 2].fd, &packet, &unused)) EndIdle(i - 2);
      if (unused >= 0) close(unused);
    }
    for (size_t i = first_busy; i < fds.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const std::string& attempt = attempts[i - first_busy];
      auto keeper = keepers_.find(attempt);
      if (keeper == keepers_.end()) continue;
      switch (RelayFrom(keeper->second)) {
        case Relayed::kEvent: break;
        case Relayed::kGone: EndKeeper(attempt, true); break;
        case Relayed::kIdle:
          if (!Retire(attempt)) return;
          break;
      }
    }
    if (!to_remove_.empty()) RemoveCgroups();
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      int output_fd = -1;
      const bool received = ReceivePacket(agent_fd_, &packet, &output_fd);
      const bool answered = received && HandleCommand(packet, &output_fd);
      if (output_fd >= 0) close(output_fd);  // a command that carried one by mistake
      if (!answered) return;
    }
    if (getppid() != agent) return;
  }
}

void LauncherProcess::EndAll() {
  for (auto& [attempt, keeper] : keepers_) {
    if (keeper.cgroup) keeper.cgroup->KillAll();
  }
  while (!idle_.empty()) EndIdle(idle_.size() - 1);
  KillEverythingBelow();
  while (!keepers_.empty()) EndKeeper(keepers_.begin()->first, false);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!to_remove_.empty() && std::chrono::steady_clock::now() < give_up) {
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    RemoveCgroups();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // The roots too: an agent killed by SIGKILL cannot remove them itself.
  if (!settings_.cgroup_root().empty()) rmdir(settings_.cgroup_root().c_str());
  LimitsOf(settings_.limits()).RemoveRoots();
}

}  // namespace

ssize_t SendPacketWithFd(int socket, const std::string& bytes, int fd) {
  iovec data{const_cast<char*>(bytes.data()), bytes.size()};
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    cmsghdr* attached = CMSG_FIRSTHDR(&message);
    attached->cmsg_level = SOL_SOCKET;
    attached->cmsg_type = SCM_RIGHTS;
    attached->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(attached), &fd, sizeof(int));
  }
  ssize_t sent;
  do {
    sent = sendmsg(socket, &message, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  return sent;
}

int RunLauncherProcess(int socket_fd) {
  prctl(PR_SET_NAME, "clusterd-launch");
  // Nor anything else the daemon had open without close-on-exec (Asio opens
  // its sockets so: on the head's node, the dashboard's listening socket):
  // a rank could accept the dashboard's connections and read their token.
  // Ranks get their stdin, stdout and stderr only.
  CloseAllBut(socket_fd);
  // Ranks must not inherit the channel: a rank could tell the agent of exits.
  fcntl(socket_fd, F_SETFD, FD_CLOEXEC);
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  // Stop signals are the agent's to handle (a Ctrl-C at a terminal reaches
  // the whole foreground group); ranks get a clean mask from SpawnProcess.
  sigset_t blocked;
  sigemptyset(&blocked);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD}) sigaddset(&blocked, s);
  sigprocmask(SIG_BLOCK, &blocked, nullptr);
  const int child_fd = ChildSignalFd();
  if (child_fd < 0) return 1;
  LauncherProcess launcher(socket_fd, child_fd);
  launcher.Serve();
  launcher.EndAll();
  return 0;
}

}  // namespace clusterd
