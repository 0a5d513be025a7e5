#include "etcd_members.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "harness.h"

extern char** environ;

namespace clusterd::testing {
namespace {

std::string Tail(const std::string& text, size_t lines) {
  size_t pos = text.size();
  while (lines-- > 0 && pos > 0) {
    pos = text.rfind('\n', pos - 1);
    if (pos == std::string::npos) return text;
  }
  return text.substr(pos);
}

}  // namespace

bool EtcdMembers::Installed(std::string* why) {
  for (const char* binary : {kEtcdBinary, kEtcdctlBinary}) {
    if (access(binary, X_OK) != 0) {
      *why = std::string(binary) + " is not installed (Debian's etcd-server and etcd-client; scripts/lib.sh's test list)";
      return false;
    }
  }
  return true;
}

EtcdMembers::EtcdMembers(int count, const EtcdMemberTls& tls) : tls_(tls) {
  // On loopback each member needs ports of its own; the places' wraps stay empty.
  Init(std::vector<EtcdMemberPlace>(count, EtcdMemberPlace{{}, "127.0.0.1"}), "/tmp");
}

EtcdMembers::EtcdMembers(const std::vector<EtcdMemberPlace>& places, const std::string& parent_dir,
                         const EtcdMemberTls& tls)
    : tls_(tls) {
  Init(places, parent_dir);
}

void EtcdMembers::Init(const std::vector<EtcdMemberPlace>& places, const std::string& parent_dir) {
  std::string pattern = parent_dir + "/clusterd-etcd-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp " + pattern + " failed");
  dir_ = pattern;
  for (size_t i = 0; i < places.size(); ++i) {
    Member m;
    m.name = "m" + std::to_string(i);
    m.place = places[i];
    if (m.place.wrap.empty()) {
      m.client_port = FreePort();
      m.peer_port = FreePort();
      while (m.peer_port == m.client_port) m.peer_port = FreePort();
    } else {
      // A machine of its own: etcd's usual ports are free there.
      m.client_port = 2379;
      m.peer_port = 2380;
    }
    initial_cluster_ += (i == 0 ? "" : ",") + m.name + "=http://" + m.place.host + ":" + std::to_string(m.peer_port);
    members_.push_back(m);
  }
  for (size_t i = 0; i < members_.size(); ++i) Spawn(static_cast<int>(i));
  if (error_.empty() && !WaitHealthy(std::chrono::seconds(20))) {
    error_ = "etcd members did not become healthy within 20 s:\n" + LogTails();
  }
}

EtcdMembers::~EtcdMembers() {
  for (size_t i = 0; i < members_.size(); ++i) Kill(static_cast<int>(i));
  Run({"/bin/rm", "-rf", dir_});
}

std::string EtcdMembers::ClientUrl(const Member& m) const {
  return std::string(tls_.cert_file.empty() ? "http" : "https") + "://" + m.place.host + ":" +
         std::to_string(m.client_port);
}

std::vector<std::string> EtcdMembers::client_addresses() const {
  std::vector<std::string> out;
  for (const auto& m : members_) out.push_back(m.place.host + ":" + std::to_string(m.client_port));
  return out;
}

std::string EtcdMembers::url(const std::string& prefix) const {
  std::string out = "etcd://";
  for (const auto& address : client_addresses()) out += (out.size() > 7 ? "," : "") + address;
  return out + prefix;
}

void EtcdMembers::Spawn(int i) {
  Member& m = members_[i];
  const std::string data = dir_ + "/" + m.name + ".data";
  const std::string log = dir_ + "/" + m.name + ".log";
  const std::string peer_url = "http://" + m.place.host + ":" + std::to_string(m.peer_port);
  std::vector<std::string> argv = m.place.wrap;
  argv.insert(argv.end(), {kEtcdBinary,
                                   "--name", m.name,
                                   "--data-dir", data,
                                   "--listen-client-urls", ClientUrl(m),
                                   "--advertise-client-urls", ClientUrl(m),
                                   "--listen-peer-urls", peer_url,
                                   "--initial-advertise-peer-urls", peer_url,
                                   "--initial-cluster", initial_cluster_,
                                   "--initial-cluster-state", "new",
                                   "--initial-cluster-token", "clusterd-test-" + dir_.substr(dir_.rfind('-') + 1),
                                   // A raft election in half a second, so that a test
                                   // that kills members waits little for a new raft leader.
                                   "--heartbeat-interval", "50",
                                   "--election-timeout", "500",
                                   "--logger", "zap",
                                   "--log-level", "warn"});
  if (!tls_.cert_file.empty()) {
    argv.insert(argv.end(), {"--cert-file", tls_.cert_file, "--key-file", tls_.key_file, "--trusted-ca-file",
                             tls_.ca_file, "--client-cert-auth"});
  }
  const int log_fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  // Variables of a system etcd's environment (ETCD_*) would change these
  // members' configuration: none is passed on.
  std::vector<char*> envp;
  for (char** e = environ; *e; ++e) {
    if (std::strncmp(*e, "ETCD", 4) != 0) envp.push_back(*e);
  }
  envp.push_back(nullptr);
  // fork, not posix_spawn, for the parent-death signal: a test run killed
  // on its timeout, past its destructors, leaves no member behind. Between
  // fork and exec the child makes only async-signal-safe calls.
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    const int null_fd = open("/dev/null", O_RDONLY);
    dup2(null_fd, STDIN_FILENO);
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  close(log_fd);
  if (pid < 0) {
    m.pid = -1;
    error_ = std::string("cannot start ") + kEtcdBinary + ": " + std::strerror(errno);
    return;
  }
  m.pid = pid;
}

void EtcdMembers::Kill(int i) {
  Member& m = members_[i];
  if (m.pid <= 0) return;
  kill(m.pid, SIGKILL);
  // The harness may reap it first (it reaps zombies of the subreaper): then
  // waitpid says ECHILD, and the member is gone all the same.
  while (waitpid(m.pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  m.pid = -1;
}

void EtcdMembers::Freeze(int i) {
  if (members_[i].pid > 0) kill(members_[i].pid, SIGSTOP);
}

void EtcdMembers::Thaw(int i) {
  if (members_[i].pid > 0) kill(members_[i].pid, SIGCONT);
}

void EtcdMembers::Restart(int i) {
  if (members_[i].pid > 0) return;
  Spawn(i);
}

bool EtcdMembers::WaitHealthy(std::chrono::milliseconds limit) {
  std::string endpoints;
  const Member* asker = nullptr;
  for (const auto& m : members_) {
    if (m.pid <= 0) continue;
    endpoints += (endpoints.empty() ? "" : ",") + ClientUrl(m);
    if (asker == nullptr) asker = &m;
  }
  if (asker == nullptr) return false;
  std::vector<std::string> argv = asker->place.wrap;
  argv.insert(argv.end(), {kEtcdctlBinary, "--endpoints", endpoints, "--command-timeout", "1s",
                                   "--dial-timeout", "500ms", "endpoint", "health"});
  if (!tls_.cert_file.empty()) {
    argv.insert(argv.end(), {"--cacert", tls_.ca_file, "--cert", tls_.client_cert_file, "--key", tls_.client_key_file});
  }
  return WaitFor([&] { return Run(argv, {{"ETCDCTL_API", "3"}}, std::chrono::seconds(5)).exit_code == 0; }, limit,
                 std::chrono::milliseconds(100));
}

std::string EtcdMembers::LogTails() const {
  std::string out;
  for (const auto& m : members_) out += "--- " + m.name + ":\n" + Tail(Slurp(dir_ + "/" + m.name + ".log"), 10) + "\n";
  return out;
}

}  // namespace clusterd::testing
