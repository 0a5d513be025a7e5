#include "daemon/agent/launcher_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <chrono>
#include <string>
#include <thread>

#include "daemon/agent/descendants.h"
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

LaunchAnswer Launch(LaunchRequest& request, int output_fd) {
  SpawnRequest spawn;
  spawn.argv.assign(request.argv().begin(), request.argv().end());
  spawn.working_dir = request.working_dir();
  // Moved, not copied: the request is done with once the rank is started.
  for (std::string& entry : *request.mutable_env()) spawn.env.push_back(std::move(entry));
  spawn.log_path = request.log_path();
  spawn.output_fd = output_fd;
  LaunchAnswer answer;
  answer.set_id(request.id());
  if (request.output_attached() && output_fd < 0) {
    answer.set_error("the rank's output pipe did not reach the launcher");
    return answer;
  }
  Result<pid_t> pid = SpawnProcess(spawn);
  if (pid.ok()) {
    answer.set_pid(pid.value());
  } else {
    answer.set_error(pid.status().message());
    answer.set_exec_failed(pid.status().code() == Status::Code::kFailedPrecondition);
  }
  return answer;
}

// Tells the agent of every child that ended (ranks, and orphans handed to
// this process as their subreaper: the agent ignores pids it does not know).
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

// The agent is gone: nothing it started may outlive it. Orphans keep
// coming back to this subreaper while their parents die, so kill and reap
// until a scan finds nobody (bounded, in case something cannot die).
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

// Closes every descriptor above stderr but `keep`.
void CloseAllBut(int keep) {
  if (keep > STDERR_FILENO + 1) close_range(STDERR_FILENO + 1, static_cast<unsigned>(keep - 1), 0);
  close_range(static_cast<unsigned>(keep + 1), ~0u, 0);
}

}  // namespace

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
  sigset_t child;
  sigemptyset(&child);
  sigaddset(&child, SIGCHLD);
  int child_fd = signalfd(-1, &child, SFD_CLOEXEC | SFD_NONBLOCK);
  const pid_t agent = getppid();
  bool agent_here = child_fd >= 0;
  std::string packet;
  while (agent_here) {
    pollfd fds[2] = {{socket_fd, POLLIN, 0}, {child_fd, POLLIN, 0}};
    // The timeout is a safety net for a lost SIGCHLD and a re-parented agent.
    int ready = poll(fds, 2, 1000);
    if (ready < 0 && errno != EINTR) break;
    if (fds[1].revents & POLLIN) {
      signalfd_siginfo info;
      while (read(child_fd, &info, sizeof info) > 0) {
      }
    }
    if (!ReportEnded(socket_fd)) break;
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      int output_fd = -1;
      const bool received = ReceivePacket(socket_fd, &packet, &output_fd);
      LaunchRequest request;
      LauncherEvent event;
      if (received && request.ParseFromString(packet)) {
        *event.mutable_answer() = Launch(request, output_fd);
      } else if (received) {
        event.mutable_answer()->set_error("the launcher could not read the agent's request");
      }
      // The rank has its own copy now; this one would keep the pipe open.
      if (output_fd >= 0) close(output_fd);
      if (!received) break;
      if (!SendEvent(socket_fd, event)) break;
    }
    if (getppid() != agent) break;
  }
  KillEverythingBelow();
  return 0;
}

}  // namespace clusterd
