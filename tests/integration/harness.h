// Starts real clusterd/clusterctl processes on free loopback ports in a
// private temp dir, and always cleans up (clusterd stop --force, then
// SIGKILL of anything left). The test process is a child subreaper, so
// daemons that detach still end up as its children and are reaped here.
#pragma once

#include <signal.h>

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cluster.pb.h"

namespace clusterd::testing {

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs argv to completion (killed after timeout), capturing both streams.
RunResult Run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {},
              std::chrono::milliseconds timeout = std::chrono::seconds(60));

int FreePort();
bool ProcessAlive(pid_t pid);  // false for zombies
// Polls fn every `every` until it is true or `limit` passes; returns whether it held.
// Poll slowly where fn execs clusterctl during a long run: each poll costs CPU.
bool WaitFor(const std::function<bool()>& fn, std::chrono::milliseconds limit,
             std::chrono::milliseconds every = std::chrono::milliseconds(5));
int64_t MillisSince(std::chrono::steady_clock::time_point start);
// This machine's wall clock, as unix ms (what daemons' log lines are stamped with).
int64_t NowUnixMs();
// The whole file, or "" when it cannot be read (yet).
std::string Slurp(const std::string& path);
// The UTC time of the first line of `log` that contains `what`, as unix
// ms; 0 when there is none. Daemon log lines start "2026-11-29T15:12:59.123Z ".
int64_t FirstLogLineUnixMs(const std::string& log, const std::string& what);
// `n` bytes that do not compress or repeat, the same for the same `seed`.
std::string RandomBytes(size_t n, unsigned seed);

class Cluster {
 public:
  Cluster();
  ~Cluster();  // stops everything it started

  const std::string& temp_dir() const { return temp_dir_; }
  // The head's token, as its session folder holds it.
  std::string Token() const;
  int port() const { return port_; }
  std::string address() const;

  // clusterd start --head on the cluster's port; extra flags appended.
  RunResult StartHead(const std::vector<std::string>& flags = {});
  RunResult StartWorker(const std::string& name, const std::vector<std::string>& flags = {});
  // clusterctl <args> with --temp-dir of this cluster.
  RunResult Ctl(const std::vector<std::string>& args, std::chrono::milliseconds timeout = std::chrono::seconds(30),
                const std::map<std::string, std::string>& env = {});
  RunResult Stop(const std::vector<std::string>& flags = {});

  // Parsed `clusterctl status --json`; REQUIREs success.
  ClusterStatus Status();
  // A node's state by name, NODE_STATE_UNSPECIFIED when it is not listed.
  NodeState StateOf(const std::string& name);
  // The daemons' logs of every session in the temp dir, one after another.
  std::string DaemonLogs() const;
  // The daemon pids of the latest session (from its pid files).
  std::vector<pid_t> DaemonPids() const;
  // The pid of the worker named `name`, found by its log line.
  pid_t WorkerPid(const std::string& name) const;
  // The head's daemon: the one started with --head (0 when there is none).
  pid_t HeadPid() const;
  // Sends `signal_number` to the head's daemon and waits for it to be gone
  // (REQUIREs both).
  void KillHead(int signal_number = SIGKILL);

 private:
  std::string temp_dir_;
  int port_;
  std::map<std::string, pid_t> workers_;
};

}  // namespace clusterd::testing
