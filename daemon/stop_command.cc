#include "daemon/stop_command.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <limits>
#include <thread>

#include <fmt/format.h>

#include "common/config.h"
#include "common/process_record.h"
#include "common/session.h"
#include "daemon/running_daemons.h"
#include "daemon/stop_signals.h"

namespace po = boost::program_options;

namespace clusterd {

namespace {

// Kills the process group a rank file records, if it is still the rank's:
// its leader alive as the same process, or gone (then no other process can
// have that pid while the group lives, so only the rank's own are in it).
// A record that does not parse, or names a pgid of 0 or 1, kills nothing;
// an empty file is a free slot (the agent reuses them).
bool KillRankGroup(const std::string& path) {
  auto text = ReadFileTrimmed(path);
  if (text.ok() && text->empty()) return false;
  auto record = text.ok() ? ProcessRecord::Parse(*text) : Result<ProcessRecord>(text.status());
  if (!record.ok()) {
    std::cerr << "clusterd stop: ignoring " << path << ": " << record.status().message() << std::endl;
    return false;
  }
  ProcessRecord now = ProcessRecord::Of(record->pid);
  if (now.pid != 0 && !record->StillRunning()) return false;  // the pid is another process's now
  return kill(-record->pid, SIGKILL) == 0;
}

// Ranks whose daemon died without stopping them (SIGKILL, --force): their
// process groups are recorded in <session>/ranks/, one file a rank slot. Returns how many
// groups were still there.
int KillLeftoverRanks(const std::string& temp_dir) {
  int killed = 0;
  for (const Session& session : AllSessions(temp_dir)) {
    std::string dir_path = session.dir + "/ranks";
    DIR* dir = opendir(dir_path.c_str());
    if (!dir) continue;
    while (dirent* entry = readdir(dir)) {
      std::string name = entry->d_name;
      if (name == "." || name == "..") continue;
      std::string path = dir_path + "/" + name;
      if (KillRankGroup(path)) ++killed;
      unlink(path.c_str());
    }
    closedir(dir);
  }
  return killed;
}

bool WaitGone(const std::vector<RunningDaemon>& daemons, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (true) {
    bool any = false;
    for (const auto& d : daemons) any = any || Alive(d.pid);
    if (!any) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

int StopCommand(const std::vector<std::string>& args) {
  bool force = false;
  double grace_s = Config().stop_grace_ms / 1000.0;
  std::string temp_dir;
  po::options_description flags("clusterd stop [--force] [--grace-period S]");
  flags.add_options()
    ("help,h", "print this help")
    ("force", po::bool_switch(&force), "SIGKILL at once instead of SIGTERM first")
    ("grace-period", po::value(&grace_s)->default_value(grace_s), "seconds from SIGTERM to SIGKILL")
    ("temp-dir", po::value(&temp_dir)->default_value(DefaultTempDir()), "where the session folders are");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(flags).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "clusterd stop: " << e.what() << " (see clusterd stop --help)" << std::endl;
    return 2;
  }
  if (vm.count("help")) {
    std::cout << flags;
    return 0;
  }
  if (grace_s < 0) {
    std::cerr << "clusterd stop: --grace-period must be >= 0" << std::endl;
    return 2;
  }

  std::vector<RunningDaemon> daemons = FindRunningDaemons(temp_dir);
  if (daemons.empty()) {
    int leftovers = KillLeftoverRanks(temp_dir);
    std::cout << "No clusterd process is running (looked in " << temp_dir << ")"
              << (leftovers ? fmt::format("; killed {} leftover rank process group(s)", leftovers) : "") << "."
              << std::endl;
    return 0;
  }
  // The grace period rides on the SIGTERM (sigqueue's value): the daemons
  // give their ranks this one, not the stop_grace_ms they started with.
  const int grace_ms = static_cast<int>(std::min(grace_s * 1000, double{std::numeric_limits<int>::max()}));
  for (const auto& d : daemons) {
    if (force) {
      kill(d.pid, SIGKILL);
    } else {
      SendStopSignal(d.pid, grace_ms);
    }
  }
  // Each daemon gives its ranks the same grace, SIGKILLs them, then kills
  // what they left outside their groups and tells the head: give it time
  // for that before killing the daemon itself, which would leave those.
  // Fixed: that work takes well under a second; --grace-period is the
  // operator's part of the wait.
  constexpr int64_t kDaemonCleanupMs = 5000;
  int64_t wait_ms = static_cast<int64_t>(grace_s * 1000) + (force ? 0 : kDaemonCleanupMs);
  bool gone = WaitGone(daemons, std::chrono::milliseconds(wait_ms));
  int killed = 0;
  if (!gone) {
    for (const auto& d : daemons) {
      if (Alive(d.pid)) {
        kill(d.pid, SIGKILL);
        ++killed;
      }
    }
    WaitGone(daemons, std::chrono::seconds(10));
  }
  for (const auto& d : daemons) unlink(d.pid_file.c_str());
  KillLeftoverRanks(temp_dir);
  std::cout << fmt::format("Stopped {} clusterd process{}{}.", daemons.size(), daemons.size() == 1 ? "" : "es",
                           killed ? fmt::format(" ({} after the grace period with SIGKILL)", killed) : "")
            << std::endl;
  return 0;
}

}  // namespace clusterd
