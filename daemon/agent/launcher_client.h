// The node agent's side of its launcher process (launcher_process.h): the
// real Launcher. Starts the launcher at first use, asks it to start ranks,
// and turns its reports into ChildExits. If the launcher dies, its ranks
// died with it (their parent-death signal): they are reported as killed,
// and the next Spawn starts a new launcher.
#pragma once

#include <sys/types.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "daemon/agent/attempt_cgroup.h"
#include "daemon/agent/launcher.h"

namespace clusterd {

class LauncherEvent;

// How the launcher holds attempts (Containment::Detect made its root) and
// whom a job file may ask to run as (the config's allowed_run_as).
struct LauncherOptions {
  Containment containment;
  std::string allowed_run_as = "*";
};

// Where clusterd-launcher is: beside this binary (a build's daemon/), else
// in ../lib/clusterd/ (the package's /usr/lib/clusterd/).
std::string LauncherProgram();

class LauncherClient : public Launcher {
 public:
  // `program` is the launcher binary (clusterd-launcher).
  explicit LauncherClient(std::string program = LauncherProgram(), LauncherOptions options = {});
  ~LauncherClient() override;  // closes the socket: the launcher kills what is left and exits
  LauncherClient(const LauncherClient&) = delete;
  LauncherClient& operator=(const LauncherClient&) = delete;

  // Starts the launcher now, so that the first rank does not wait for it;
  // otherwise the first Spawn does. A no-op while one runs.
  Status Start();

  Result<pid_t> Spawn(const SpawnRequest& request) override;
  std::vector<Result<pid_t>> SpawnAll(const std::vector<SpawnRequest>& requests) override;
  void SignalGroup(pid_t pid, int signal_number) override;
  int ReadyFd() const override { return socket_; }  // its reports of ended ranks arrive here
  std::vector<ChildExit> Reap() override;
  pid_t GroupOf(pid_t pid) override;
  pid_t ParentOf(pid_t pid) override;
  int KillDescendants() override;
  int KillLeftovers(const std::string& job_id, int attempt) override;
  bool MayHaveLeftovers() override;

  pid_t launcher_pid() const { return launcher_pid_; }

 private:
  // Handles one event; false when the launcher is gone.
  bool Receive(bool wait, LauncherEvent* event);
  void Take(const LauncherEvent& event);
  void LauncherGone(const std::string& why);
  // Sends one launch request; false when the launcher is gone (it was
  // closed), with *refused set instead when the request itself is at fault.
  bool SendRequest(const SpawnRequest& request, int64_t id, Status* refused);
  // One command with no answer; false when the launcher is gone.
  bool SendCommand(const std::string& bytes);
  std::vector<pid_t> BelowAgent() const;  // every descendant but the launcher itself

  std::string program_;
  LauncherOptions options_;
  // The keeper of each attempt that started ranks (LaunchAnswer.keeper_pid),
  // until it ends or the attempt is ended.
  std::map<std::string, pid_t> keepers_;
  // Keepers the launcher holds for later attempts (KeeperIdle): nothing is
  // below them, and they stand for no attempt.
  std::set<pid_t> idle_keepers_;
  pid_t launcher_pid_ = -1;
  int socket_ = -1;
  int64_t next_id_ = 1;
  std::set<pid_t> running_;  // started and not yet reported ended
  std::vector<ChildExit> ended_;
};

}  // namespace clusterd
