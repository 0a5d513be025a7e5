#include "harness.h"

#include "common/file_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>
#include <random>
#include <set>
#include <thread>

namespace clusterd::testing {

namespace {

// Detached daemons re-parent to us, so we can reap them and see them die.
struct Subreaper {
  Subreaper() { prctl(PR_SET_CHILD_SUBREAPER, 1); }
} subreaper;

void ReapZombies() {
  while (waitpid(-1, nullptr, WNOHANG) > 0) {
  }
}

// SIGKILLs every process started with `--temp-dir dir`: this cluster's
// daemons, should `clusterd stop` not have ended them (a failed test's
// daemon, or a clusterd binary being relinked just then), so that none
// outlives the test and its removed folder. Their launchers take their
// ranks down with them.
void KillDaemonsOf(const std::string& dir) {
  const std::string marker = std::string("--temp-dir") + '\0' + dir + '\0';
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return;
  while (dirent* entry = readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0' || pid == getpid()) continue;
    std::ifstream in(std::string("/proc/") + entry->d_name + "/cmdline", std::ios::binary);
    const std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmdline.find(marker) != std::string::npos) kill(static_cast<pid_t>(pid), SIGKILL);
  }
  closedir(proc);
}

std::string ReadAll(int fd) {
  std::string out;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof buffer)) > 0) out.append(buffer, static_cast<size_t>(n));
  return out;
}

// This process's environment with `overrides` set on top, as posix_spawn takes it.
std::vector<std::string> EnvironmentWith(const std::map<std::string, std::string>& overrides) {
  std::vector<std::string> entries;
  for (char** e = environ; *e; ++e) {
    const char* equals = std::strchr(*e, '=');
    if (equals && overrides.count(std::string(*e, static_cast<size_t>(equals - *e)))) continue;
    entries.emplace_back(*e);
  }
  for (const auto& [key, value] : overrides) entries.push_back(key + "=" + value);
  return entries;
}

}  // namespace

RunResult Run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
              std::chrono::milliseconds timeout) {
  // Output goes to temp files, not pipes: a daemonized grandchild may keep
  // a pipe open long after the command itself has returned.
  char out_path[] = "/tmp/clusterd-test-out-XXXXXX";
  char err_path[] = "/tmp/clusterd-test-err-XXXXXX";
  int out_fd = mkstemp(out_path);
  int err_fd = mkstemp(err_path);
  // posix_spawn, not fork: a bench that runs this from a process holding
  // 10,000 connections would otherwise time the copy of its own page
  // tables into every command it measures.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_fd, STDERR_FILENO);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> environment = EnvironmentWith(env);
  std::vector<char*> envp;
  for (auto& e : environment) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    close(out_fd);
    close(err_fd);
    unlink(out_path);
    unlink(err_path);
    RunResult failed;
    failed.exit_code = 127;  // as a shell reports a command it could not run
    failed.err = std::string("cannot run ") + argv[0] + ": " + std::strerror(spawned);
    return failed;
  }
  RunResult result;
  auto start = std::chrono::steady_clock::now();
  int status = 0;
  while (true) {
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (std::chrono::steady_clock::now() - start > timeout) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  lseek(out_fd, 0, SEEK_SET);
  lseek(err_fd, 0, SEEK_SET);
  result.out = ReadAll(out_fd);
  result.err = ReadAll(err_fd);
  close(out_fd);
  close(err_fd);
  unlink(out_path);
  unlink(err_path);
  return result;
}

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  int port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

bool ProcessAlive(pid_t pid) {
  ReapZombies();
  if (kill(pid, 0) != 0) return false;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string skip, state;
  in >> skip >> skip >> state;
  return state != "Z";
}

bool WaitFor(const std::function<bool()>& fn, std::chrono::milliseconds limit, std::chrono::milliseconds every) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (true) {
    if (fn()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(every);
  }
}

int64_t MillisSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
}

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string Slurp(const std::string& path) { return ReadWholeFile(path).value_or(""); }

int64_t FirstLogLineUnixMs(const std::string& log, const std::string& what) {
  std::istringstream lines(log);
  static const std::regex stamp(R"(^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{3})Z )");
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (line.find(what) == std::string::npos || !std::regex_search(line, m, stamp)) continue;
    std::tm tm{};
    tm.tm_year = std::stoi(m[1]) - 1900;
    tm.tm_mon = std::stoi(m[2]) - 1;
    tm.tm_mday = std::stoi(m[3]);
    tm.tm_hour = std::stoi(m[4]);
    tm.tm_min = std::stoi(m[5]);
    tm.tm_sec = std::stoi(m[6]);
    return static_cast<int64_t>(timegm(&tm)) * 1000 + std::stoi(m[7]);
  }
  return 0;
}

std::string RandomBytes(size_t n, unsigned seed) {
  std::mt19937_64 random(seed);
  std::string bytes(n, '\0');
  for (size_t i = 0; i + 8 <= n; i += 8) {
    uint64_t v = random();
    std::memcpy(&bytes[i], &v, 8);
  }
  return bytes;
}

Cluster::Cluster() : port_(FreePort()) {
  char dir[] = "/tmp/clusterd-it-XXXXXX";
  temp_dir_ = mkdtemp(dir);
}

Cluster::~Cluster() {
  Stop({"--force"});
  for (const auto& [name, pid] : workers_) {
    if (ProcessAlive(pid)) kill(pid, SIGKILL);
  }
  KillDaemonsOf(temp_dir_);
  ReapZombies();
  // CLUSTERD_KEEP_TEST_DIRS=1 keeps the daemons' logs and state for a look.
  if (const char* keep = getenv("CLUSTERD_KEEP_TEST_DIRS"); keep && std::string(keep) == "1") {
    fprintf(stderr, "kept %s\n", temp_dir_.c_str());
    return;
  }
  Run({"/bin/rm", "-rf", temp_dir_});
}

std::string Cluster::address() const { return "127.0.0.1:" + std::to_string(port_); }

RunResult Cluster::StartHead(const std::vector<std::string>& flags) {
  std::vector<std::string> argv = {CLUSTERD_BIN, "start", "--head", "--port", std::to_string(port_),
                                   "--temp-dir", temp_dir_};
  argv.insert(argv.end(), flags.begin(), flags.end());
  if (std::find(flags.begin(), flags.end(), "--node-name") == flags.end()) {
    argv.insert(argv.end(), {"--node-name", "head"});
  }
  // Its durable state in this cluster's folder: not in the user's real one.
  if (std::find(flags.begin(), flags.end(), "--state-dir") == flags.end()) {
    argv.insert(argv.end(), {"--state-dir", temp_dir_ + "/state"});
  }
  // On loopback, as the tests of one machine are (the multi-machine harness
  // tests the default address).
  if (std::find(flags.begin(), flags.end(), "--node-ip-address") == flags.end()) {
    argv.insert(argv.end(), {"--node-ip-address", "127.0.0.1"});
  }
  // A free dashboard port of its own, so that tests running side by side do
  // not contend for 8265.
  if (std::find(flags.begin(), flags.end(), "--dashboard-port") == flags.end()) {
    argv.insert(argv.end(), {"--dashboard-port", std::to_string(FreePort())});
  }
  return Run(argv);
}

RunResult Cluster::StartWorker(const std::string& name, const std::vector<std::string>& flags) {
  std::vector<std::string> argv = {CLUSTERD_BIN, "start", "--address", address(), "--temp-dir", temp_dir_,
                                   "--node-name", name};
  argv.insert(argv.end(), flags.begin(), flags.end());
  std::set<pid_t> before;
  for (pid_t pid : DaemonPids()) before.insert(pid);
  RunResult result = Run(argv);
  if (result.exit_code == 0) {
    for (pid_t pid : DaemonPids()) {
      if (!before.count(pid)) workers_[name] = pid;
    }
  }
  return result;
}

RunResult Cluster::Ctl(const std::vector<std::string>& args, std::chrono::milliseconds timeout,
                       const std::map<std::string, std::string>& env) {
  std::vector<std::string> argv = {CLUSTERCTL_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--temp-dir", temp_dir_});
  return Run(argv, env, timeout);
}

RunResult Cluster::Stop(const std::vector<std::string>& flags) {
  std::vector<std::string> argv = {CLUSTERD_BIN, "stop", "--temp-dir", temp_dir_};
  argv.insert(argv.end(), flags.begin(), flags.end());
  RunResult result = Run(argv);
  ReapZombies();
  return result;
}

std::string Cluster::Token() const {
  const std::string token = Slurp(temp_dir_ + "/session_latest/token");
  return token.substr(0, token.find('\n'));
}

ClusterStatus Cluster::Status() {
  RunResult result = Ctl({"status", "--json"});
  INFO("clusterctl status --json: " << result.err);
  REQUIRE(result.exit_code == 0);
  ClusterStatus status;
  REQUIRE(google::protobuf::util::JsonStringToMessage(result.out, &status).ok());
  return status;
}

NodeState Cluster::StateOf(const std::string& name) {
  ClusterStatus status = Status();
  for (const auto& node : status.nodes()) {
    if (node.name() == name) return node.state();
  }
  return NODE_STATE_UNSPECIFIED;
}

std::string Cluster::DaemonLogs() const {
  namespace fs = std::filesystem;
  std::vector<std::string> paths;
  std::error_code error;
  for (const auto& session : fs::directory_iterator(temp_dir_, error)) {
    const std::string name = session.path().filename().string();
    // session_latest is a link to one of the others.
    if (name.rfind("session_", 0) != 0 || name == "session_latest") continue;
    for (const auto& log : fs::directory_iterator(session.path() / "logs", error)) {
      if (log.path().extension() == ".log") paths.push_back(log.path().string());
    }
  }
  std::sort(paths.begin(), paths.end());
  std::string logs;
  for (const std::string& path : paths) logs += Slurp(path);
  return logs;
}

std::vector<pid_t> Cluster::DaemonPids() const {
  std::vector<pid_t> pids;
  std::string dir = temp_dir_ + "/session_latest/pids";
  DIR* d = opendir(dir.c_str());
  if (!d) return pids;
  while (dirent* entry = readdir(d)) {
    std::string name = entry->d_name;
    auto dash = name.find('-');
    auto dot = name.rfind(".pid");
    if (dash == std::string::npos || dot == std::string::npos) continue;
    pids.push_back(static_cast<pid_t>(std::atoi(name.substr(dash + 1, dot - dash - 1).c_str())));
  }
  closedir(d);
  return pids;
}

pid_t Cluster::WorkerPid(const std::string& name) const {
  auto it = workers_.find(name);
  return it == workers_.end() ? 0 : it->second;
}

pid_t Cluster::HeadPid() const {
  for (pid_t pid : DaemonPids()) {
    std::ifstream cmd("/proc/" + std::to_string(pid) + "/cmdline");
    std::string argv((std::istreambuf_iterator<char>(cmd)), std::istreambuf_iterator<char>());
    if (argv.find("--head") != std::string::npos) return pid;
  }
  return 0;
}

void Cluster::KillHead(int signal_number) {
  const pid_t head = HeadPid();
  REQUIRE(head > 0);
  REQUIRE(kill(head, signal_number) == 0);
  REQUIRE(WaitFor([&] { return !ProcessAlive(head); }, std::chrono::seconds(10)));
}

}  // namespace clusterd::testing
