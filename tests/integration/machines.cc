// Simulated machines (machines.h) from iproute2 and util-linux: a network
// namespace per machine and one for the bridge, and per machine a holder
// process (unshare -m -u, then sleep) that keeps its mount and UTS
// namespaces alive. Commands join all three with nsenter.
#include "machines.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace clusterd::testing {

namespace {

using namespace std::chrono_literals;

// A dead test's holders die with it (parent-death signal); this bounds the
// life of one whose death signal was lost, e.g. when run by hand.
constexpr int kHolderSeconds = 3600;

std::string Tool(const std::string& name) {
  for (const char* dir : {"/usr/sbin/", "/usr/bin/", "/sbin/", "/bin/"}) {
    std::string path = dir + name;
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

std::string Join(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) out += (out.empty() ? "" : " ") + a;
  return out;
}

// Setting up machines must work; a failure names the command and its error.
void Must(const std::vector<std::string>& argv) {
  RunResult result = Run(argv, {}, 30s);
  if (result.exit_code != 0) {
    throw std::runtime_error(Join(argv) + " failed (" + std::to_string(result.exit_code) + "): " + result.err);
  }
}

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string Dirname(const std::string& path) { return path.substr(0, path.rfind('/')); }

std::string RealPath(const std::string& path) {
  char buffer[PATH_MAX];
  return realpath(path.c_str(), buffer) ? std::string(buffer) : path;
}

// Folders of this checkout that must stay visible on the machines although
// they live under /tmp (a fresh clone in a temp folder), where each machine
// mounts its own tmpfs.
std::vector<std::string> KeptDirs() {
  std::vector<std::string> out;
  for (const std::string& dir : {RealPath(CLUSTERD_SOURCE_DIR), RealPath(CLUSTERD_BUILD_DIR)}) {
    if (dir.rfind("/tmp/", 0) != 0) continue;
    bool inside = false;
    for (const auto& kept : out) inside = inside || dir == kept || dir.rfind(kept + "/", 0) == 0;
    if (!inside) out.push_back(dir);
  }
  return out;
}

// Runs in the machine's new mount and UTS namespaces (private propagation,
// so nothing of it reaches the test's namespace), then holds them.
std::string HolderScript(const std::string& name) {
  std::ostringstream s;
  s << "set -e\n"
       // Other tests' namespaces are mounted under /run/netns: let go of them
       // (the copies would keep them alive) and show none, as on a real machine.
       "umount -l /run/netns 2>/dev/null || true\n"
       "mount -t tmpfs tmpfs /run/netns 2>/dev/null || true\n";
  std::vector<std::string> kept = KeptDirs();
  if (!kept.empty()) s << "mount -t tmpfs tmpfs /mnt\n";
  for (size_t i = 0; i < kept.size(); ++i) s << "mkdir /mnt/" << i << "\nmount --rbind " << Quote(kept[i]) << " /mnt/" << i << "\n";
  s << "mount -t tmpfs -o mode=1777 tmpfs /tmp\n";
  for (size_t i = 0; i < kept.size(); ++i) {
    s << "mkdir -p " << Quote(kept[i]) << "\nmount --move /mnt/" << i << " " << Quote(kept[i]) << "\n";
  }
  if (!kept.empty()) s << "umount /mnt\n";
  // A head's default --state-dir of its own, on the machine's disk (/tmp
  // here), not the test machine's /var/lib/clusterd: a head there found
  // other runs' journal and token, and two tests' heads one lock.
  s << "mkdir -p /var/lib/clusterd /tmp/.var-lib-clusterd\n"
       "mount --bind /tmp/.var-lib-clusterd /var/lib/clusterd\n";
  // /etc/hosts and /etc/resolv.conf of its own: SimNetwork writes the first
  // (HostsFile); the second names no server, so that a lookup of an unknown
  // name fails at once (nothing answers on 127.0.0.1:53) instead of waiting
  // seconds for the test machine's DNS server, unreachable from here.
  s << "hostname " << name << "\n"
       ": > /tmp/.etc-hosts\n"
       "mount --bind /tmp/.etc-hosts /etc/hosts\n"
       "echo '# a simulated machine: no DNS server, names come from /etc/hosts' > /tmp/.etc-resolv.conf\n"
       "if [ -e /etc/resolv.conf ]; then mount --bind /tmp/.etc-resolv.conf /etc/resolv.conf; fi\n"
       "mkdir -m 0700 /tmp/home\n"
    << "exec sleep " << kHolderSeconds << "\n";
  return s.str();
}

// What a cluster's name service would give: every machine of the network by
// name, but its own name maps to 127.0.1.1, as on a stock Debian install (the
// trap of NOTES.md, "the host name resolves to a loopback address", kept on purpose).
std::string HostsFile(const std::string& own, const std::vector<std::unique_ptr<Machine>>& machines) {
  std::string out = "127.0.0.1\tlocalhost\n127.0.1.1\t" + own + "\n";
  for (const auto& m : machines) {
    if (m->name() != own) out += m->ip() + "\t" + m->name() + "\n";
  }
  return out + "\n::1\tlocalhost ip6-localhost ip6-loopback\nff02::1\tip6-allnodes\nff02::2\tip6-allrouters\n";
}

std::string ReadFileOr(const std::string& path, const std::string& fallback) {
  std::ifstream in(path);
  if (!in) return fallback;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Processes whose network namespace is the one bound at /run/netns/<netns>:
// what `ip netns pids` lists, without a fork per call.
std::vector<pid_t> PidsIn(const std::string& netns) {
  std::vector<pid_t> out;
  struct stat ns {};
  if (stat(("/run/netns/" + netns).c_str(), &ns) != 0) return out;
  DIR* proc = opendir("/proc");
  if (!proc) return out;
  while (dirent* entry = readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    struct stat st {};
    std::string link = std::string("/proc/") + entry->d_name + "/ns/net";
    if (stat(link.c_str(), &st) == 0 && st.st_dev == ns.st_dev && st.st_ino == ns.st_ino) {
      out.push_back(static_cast<pid_t>(pid));
    }
  }
  closedir(proc);
  return out;
}

// Namespaces of networks whose test process is gone (crashed, killed by a
// timeout): their processes and the namespaces themselves.
void RemoveStaleNamespaces() {
  static const std::regex ours("^cds([0-9]+)x[0-9]+-.*");
  DIR* dir = opendir("/run/netns");
  if (!dir) return;
  std::vector<std::string> stale;
  while (dirent* entry = readdir(dir)) {
    std::cmatch match;
    if (!std::regex_match(entry->d_name, match, ours)) continue;
    pid_t owner = static_cast<pid_t>(std::atol(match[1].str().c_str()));
    if (owner != getpid() && kill(owner, 0) != 0 && errno == ESRCH) stale.push_back(entry->d_name);
  }
  closedir(dir);
  for (const auto& netns : stale) {
    for (pid_t pid : PidsIn(netns)) kill(pid, SIGKILL);
    Run({Tool("ip"), "netns", "del", netns});
  }
}

}  // namespace

// ---------------------------------------------------------------- Machine

Machine::Machine(const std::string& name, const std::string& netns, const std::string& ip,
                 const std::string& bridge_netns, const std::string& port)
    : name_(name), netns_(netns), ip_(ip), bridge_netns_(bridge_netns), port_(port) {}

void Machine::Start() {
  std::string ip = Tool("ip");
  Must({ip, "netns", "add", netns_});
  // The peer is made straight inside the machine, so "eth0" never meets the
  // test's own interfaces.
  Must({ip, "-n", bridge_netns_, "link", "add", port_, "type", "veth", "peer", "name", "eth0", "netns", netns_});
  Must({ip, "-n", bridge_netns_, "link", "set", port_, "master", "br0", "up"});
  Must({ip, "-n", netns_, "link", "set", "lo", "up"});
  Must({ip, "-n", netns_, "addr", "add", ip_ + "/24", "dev", "eth0"});
  Must({ip, "-n", netns_, "link", "set", "eth0", "up"});
  // "The address on the default route" is then eth0's, as on a real machine.
  Must({ip, "-n", netns_, "route", "add", "default", "dev", "eth0"});

  char err_path[] = "/tmp/clusterd-holder-err-XXXXXX";
  int err_fd = mkstemp(err_path);
  std::vector<std::string> argv = {ip, "netns", "exec", netns_, Tool("unshare"), "-m", "-u", "--propagation",
                                   "private", "/bin/sh", "-c", HolderScript(name_)};
  pid_t parent = getpid();
  holder_ = fork();
  if (holder_ == 0) {
    // Dies with the test process, even when that one is SIGKILLed.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    int null_fd = open("/dev/null", O_RDWR);
    dup2(null_fd, STDIN_FILENO);
    dup2(null_fd, STDOUT_FILENO);
    dup2(err_fd, STDERR_FILENO);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(err_fd);
  // Ready once the script has exec'd its sleep (ip, unshare and sh exec in
  // turn, so the holder keeps this pid throughout).
  bool exited = false;
  bool ready = WaitFor(
      [&] {
        exited = waitpid(holder_, nullptr, WNOHANG) == holder_;
        return exited || ReadFileOr("/proc/" + std::to_string(holder_) + "/comm", "") == "sleep\n";
      },
      10s, 2ms);
  std::string err = ReadFileOr(err_path, "");
  unlink(err_path);
  if (exited) holder_ = 0;
  if (!ready || exited) throw std::runtime_error("machine " + name_ + ": the namespace holder did not start: " + err);
}

Machine::~Machine() {
  KillAll();
  if (holder_ > 0) {
    kill(holder_, SIGKILL);
    waitpid(holder_, nullptr, 0);
  }
  testing::Run({Tool("ip"), "netns", "del", netns_});  // not Machine::Run
}

std::vector<std::string> Machine::Wrap(const std::vector<std::string>& argv,
                                       const std::map<std::string, std::string>& env) const {
  // nsenter enters the mount namespace last and lands in its root; env then
  // sets the working directory (nsenter 2.38's --wd would open the test's path).
  std::vector<std::string> out = {Tool("nsenter"), "-t", std::to_string(holder_), "-m", "-n", "-u", "--",
                                  Tool("env"), "-i", "-C", "/tmp/home"};
  std::map<std::string, std::string> vars = {
      {"PATH", Dirname(CLUSTERD_BIN) + ":" + Dirname(CLUSTERCTL_BIN) +
                   ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
      {"HOME", "/tmp/home"},
      // Each machine's runtime and durable state in its own /tmp.
      {"CLUSTER_TEMP_DIR", "/tmp/clusterd"},
      {"XDG_STATE_HOME", "/tmp/state"},
      {"USER", "root"},
      {"LOGNAME", "root"}};
  for (const auto& [key, value] : env) vars[key] = value;
  for (const auto& [key, value] : vars) out.push_back(key + "=" + value);
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

std::vector<std::string> Machine::EnterArgv() const {
  return {Tool("nsenter"), "-t", std::to_string(holder_), "-m", "-n", "-u", "--"};
}

RunResult Machine::Run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                       std::chrono::milliseconds timeout) {
  return testing::Run(Wrap(argv, env), {}, timeout);
}

RunResult Machine::Shell(const std::string& script, const std::map<std::string, std::string>& env,
                         std::chrono::milliseconds timeout) {
  return Run({"/bin/sh", "-c", script}, env, timeout);
}

pid_t Machine::Spawn(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                     const std::string& stdout_path, const std::string& stderr_path) {
  std::vector<std::string> wrapped = Wrap(argv, env);
  pid_t pid = fork();
  if (pid == 0) {
    int null_fd = open("/dev/null", O_RDONLY);
    int out_fd = open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err_fd = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (null_fd < 0 || out_fd < 0 || err_fd < 0) _exit(126);
    dup2(null_fd, STDIN_FILENO);
    dup2(out_fd, STDOUT_FILENO);
    dup2(err_fd, STDERR_FILENO);
    std::vector<char*> args;
    for (auto& a : wrapped) args.push_back(a.data());
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

void Machine::CutLink() { Must({Tool("ip"), "-n", bridge_netns_, "link", "set", port_, "down"}); }

void Machine::RestoreLink() { Must({Tool("ip"), "-n", bridge_netns_, "link", "set", port_, "up"}); }

std::vector<pid_t> Machine::Pids() const {
  std::vector<pid_t> out;
  for (pid_t pid : PidsIn(netns_)) {
    if (pid != holder_) out.push_back(pid);
  }
  return out;
}

void Machine::KillAll() {
  // Repeat: a process may fork between the listing and its kill. A killed
  // process leaves the namespace at once (zombies have none), and ends up
  // our child (we are a subreaper), so it is reaped here.
  std::set<pid_t> killed;
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    std::vector<pid_t> pids = Pids();
    if (pids.empty()) break;
    for (pid_t pid : pids) {
      kill(pid, SIGKILL);
      killed.insert(pid);
    }
    std::this_thread::sleep_for(2ms);
  }
  WaitFor(
      [&] {
        for (auto it = killed.begin(); it != killed.end();) {
          pid_t done = waitpid(*it, nullptr, WNOHANG);
          it = done == *it || (done < 0 && errno == ECHILD) ? killed.erase(it) : std::next(it);
        }
        return killed.empty();
      },
      5s, 2ms);
  // It boots with no sockets and an empty ARP cache. The dead processes'
  // TCP sockets would otherwise live on as orphans (FIN-WAIT-1) that
  // retransmit into a pulled cable and keep the head's ARP entry
  // unresolved, stalling the first connection after RestoreLink.
  std::string ip = Tool("ip");
  testing::Run({ip, "netns", "exec", netns_, Tool("ss"), "-K", "-a", "-t", "-u"});
  testing::Run({ip, "-n", netns_, "neigh", "flush", "all"});
}

std::string Machine::HostPath(const std::string& path) const {
  return "/proc/" + std::to_string(holder_) + "/root" + path;
}

// ---------------------------------------------------------------- SimNetwork

bool SimNetwork::Available(std::string* why_not) {
  static std::optional<std::string> reason = []() -> std::string {
    if (geteuid() != 0) return "simulated machines need root (uid " + std::to_string(geteuid()) + ")";
    for (const char* tool : {"ip", "ss", "unshare", "nsenter", "env", "sh"}) {
      if (Tool(tool).empty()) return std::string("simulated machines need ") + tool + " (iproute2, util-linux)";
    }
    // The same kinds of namespaces, bridge and mounts as a real network.
    std::string probe = "cds" + std::to_string(getpid()) + "x0-_probe";
    std::string ip = Tool("ip");
    for (const auto& argv : std::vector<std::vector<std::string>>{
             {ip, "netns", "add", probe},
             {ip, "-n", probe, "link", "add", "br0", "type", "bridge"},
             {ip, "-n", probe, "link", "add", "p0", "type", "veth", "peer", "name", "p1"},
             {ip, "netns", "exec", probe, Tool("unshare"), "-m", "-u", "--propagation", "private", "/bin/sh", "-c",
              "mount -t tmpfs tmpfs /tmp && hostname probe"}}) {
      RunResult result = Run(argv, {}, 30s);
      if (result.exit_code != 0) {
        Run({ip, "netns", "del", probe});
        return "cannot simulate machines: " + Join(argv) + ": " + result.err;
      }
    }
    Run({ip, "netns", "del", probe});
    return "";
  }();
  if (why_not) *why_not = *reason;
  return reason->empty();
}

SimNetwork::SimNetwork() {
  static int instances = 0;
  prefix_ = "cds" + std::to_string(getpid()) + "x" + std::to_string(++instances) + "-";
  // Machine names are [a-z0-9-]: "_bridge" is never one of them.
  bridge_netns_ = prefix_ + "_bridge";
  RemoveStaleNamespaces();
  std::string ip = Tool("ip");
  Must({ip, "netns", "add", bridge_netns_});
  try {
    Must({ip, "-n", bridge_netns_, "link", "add", "br0", "type", "bridge"});
    Must({ip, "-n", bridge_netns_, "link", "set", "br0", "up"});
  } catch (...) {
    Run({ip, "netns", "del", bridge_netns_});
    throw;
  }
}

SimNetwork::~SimNetwork() {
  machines_.clear();
  Run({Tool("ip"), "netns", "del", bridge_netns_});
}

Machine& SimNetwork::AddMachine(const std::string& name) {
  static const std::regex valid("[a-z0-9][a-z0-9-]{0,31}");
  if (!std::regex_match(name, valid)) throw std::invalid_argument("bad machine name: " + name);
  for (const auto& m : machines_) {
    if (m->name() == name) throw std::invalid_argument("machine " + name + " exists already");
  }
  int n = static_cast<int>(machines_.size()) + 1;
  if (n > 200) throw std::invalid_argument("at most 200 machines");
  // In the list before Start, so that a half-made machine is cleaned up too.
  machines_.push_back(std::unique_ptr<Machine>(new Machine(
      name, prefix_ + name, "10.213.0." + std::to_string(10 + n), bridge_netns_, "port" + std::to_string(n))));
  machines_.back()->Start();
  // Rewritten in place: each machine's /etc/hosts is a bind mount of this inode.
  for (const auto& m : machines_) {
    std::ofstream(m->HostPath("/tmp/.etc-hosts"), std::ios::trunc) << HostsFile(m->name(), machines_);
  }
  return *machines_.back();
}

}  // namespace clusterd::testing
