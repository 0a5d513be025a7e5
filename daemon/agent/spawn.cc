#include "daemon/agent/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace clusterd {

namespace {

// Where a child that did not reach exec stopped, written into the
// launcher's memory (the child borrows it until exec or _exit).
enum Stage : int { kStarted = 0, kParentGone, kCgroup, kSwitchUser, kWorkingDir, kExec };

}  // namespace

Result<pid_t> SpawnProcess(const SpawnRequest& request) {
  if (request.argv.empty() || request.argv[0].empty()) return Status::InvalidArgument("empty entrypoint");
  // Everything the child needs is built before vfork: the child may not allocate.
  std::vector<char*> argv;
  for (const auto& arg : request.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& entry : request.env) envp.push_back(const_cast<char*>(entry.c_str()));
  envp.push_back(nullptr);
  const char* working_dir = request.working_dir.empty() ? nullptr : request.working_dir.c_str();

  const bool own_log_fd = request.output_fd < 0;
  int log_fd = own_log_fd ? open(request.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)
                          : request.output_fd;
  if (log_fd < 0) return Status::IOError(fmt::format("cannot open {}: {}", request.log_path, strerror(errno)));
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t parent = getpid();
  volatile int failed_stage = kStarted;
  volatile int failed_errno = 0;
  // vfork, not fork: the child shares the launcher's memory until it execs,
  // so none of the launcher's ~500 mappings is copied for each rank and torn
  // down again at exec (fork's page-table copy was most of a launch's CPU).
  // The launcher sleeps meanwhile. The child may only make system calls and
  // store into the volatiles above: no allocation, no stdio, no return.
  pid_t pid = vfork();
  if (pid == 0) {
    setpgid(0, 0);  // its own group, so a stop reaches its children too
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) {  // the launcher died before prctl
      failed_stage = kParentGone;
      _exit(1);
    }
    // "0" is the writer itself, for cgroup v2 and v1 alike.
    for (int fd : request.cgroup_procs_fds) {
      if (write(fd, "0", 1) != 1) {
        failed_errno = errno;
        failed_stage = kCgroup;
        _exit(127);
      }
    }
    signal(SIGPIPE, SIG_DFL);  // the daemon ignores SIGPIPE, which exec would pass on
    if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    // Raw system calls: glibc's wrappers would set the ids of every thread
    // of the process, through memory this child shares with its parent.
    if (request.switch_user &&
        (syscall(SYS_setgroups, request.groups.size(), request.groups.data()) != 0 ||
         syscall(SYS_setgid, request.gid) != 0 || syscall(SYS_setuid, request.uid) != 0)) {
      failed_errno = errno;
      failed_stage = kSwitchUser;
      _exit(127);
    }
    if (working_dir && chdir(working_dir) != 0) {
      failed_errno = errno;
      failed_stage = kWorkingDir;
      _exit(127);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);  // the launcher blocks stop signals; ranks must not
    execvpe(argv[0], argv.data(), envp.data());
    failed_errno = errno;
    failed_stage = kExec;
    _exit(127);
  }
  const int fork_errno = errno;
  if (own_log_fd) close(log_fd);
  if (null_fd >= 0) close(null_fd);
  if (pid < 0) return Status::IOError(fmt::format("vfork: {}", strerror(fork_errno)));
  // Here the child has exec'd or exited.
  if (failed_stage == kStarted) return pid;
  waitpid(pid, nullptr, 0);
  if (failed_stage == kParentGone) return Status::Unavailable("the launcher was going away");
  if (failed_stage == kCgroup) {
    return Status::IOError(fmt::format("cannot move the rank into its cgroup: {}", strerror(failed_errno)));
  }
  if (failed_stage == kSwitchUser) {
    return Status::FailedPrecondition(
        fmt::format("cannot switch to uid {} gid {}: {}", request.uid, request.gid, strerror(failed_errno)));
  }
  const char* what = failed_stage == kWorkingDir ? "cannot enter working_dir" : "cannot execute the entrypoint";
  return Status::FailedPrecondition(fmt::format("{}: {} ('{}' in '{}')", what, strerror(failed_errno),
                                                request.argv[0], request.working_dir));
}

}  // namespace clusterd
