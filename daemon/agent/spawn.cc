#include "daemon/agent/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace clusterd {

namespace {

// Only async-signal-safe calls from here to exec: the parent has threads.
[[noreturn]] void ChildFail(int report_fd, const char* what, int error) {
  char buffer[256];
  int n = snprintf(buffer, sizeof buffer, "%s: %s", what, strerror(error));
  if (n > 0) {
    ssize_t w = write(report_fd, buffer, static_cast<size_t>(n));
    (void)w;
  }
  _exit(127);
}

}  // namespace

Result<pid_t> SpawnProcess(const SpawnRequest& request) {
  if (request.argv.empty() || request.argv[0].empty()) return Status::InvalidArgument("empty entrypoint");
  // Everything the child needs is built before fork.
  std::vector<char*> argv;
  for (const auto& arg : request.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (const auto& [key, value] : request.env) env_strings.push_back(key + "=" + value);
  std::vector<char*> envp;
  for (auto& entry : env_strings) envp.push_back(entry.data());
  envp.push_back(nullptr);

  int log_fd = open(request.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return Status::IOError(fmt::format("cannot open {}: {}", request.log_path, strerror(errno)));
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) {
    close(log_fd);
    return Status::IOError(fmt::format("pipe: {}", strerror(errno)));
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    close(log_fd);
    close(report[0]);
    close(report[1]);
    return Status::IOError(fmt::format("fork: {}", strerror(errno)));
  }
  if (pid == 0) {
    close(report[0]);
    setpgid(0, 0);  // its own group, so a stop reaches its children too
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);  // the agent died between fork and prctl
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);  // the daemon blocks stop signals; ranks must not
    signal(SIGPIPE, SIG_DFL);                  // and ignores SIGPIPE, which exec would pass on
    int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    if (!request.working_dir.empty() && chdir(request.working_dir.c_str()) != 0) {
      ChildFail(report[1], "cannot enter working_dir", errno);
    }
    execvpe(argv[0], argv.data(), envp.data());
    ChildFail(report[1], "cannot execute the entrypoint", errno);
  }
  close(log_fd);
  close(report[1]);
  // EOF with nothing written means exec succeeded (the pipe closed on exec).
  char buffer[256];
  ssize_t n;
  do {
    n = read(report[0], buffer, sizeof buffer);
  } while (n < 0 && errno == EINTR);
  close(report[0]);
  if (n > 0) {
    waitpid(pid, nullptr, 0);
    return Status::FailedPrecondition(fmt::format("{} ('{}' in '{}')", std::string(buffer, static_cast<size_t>(n)),
                                                  request.argv[0], request.working_dir));
  }
  return pid;
}

}  // namespace clusterd
