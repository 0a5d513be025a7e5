#include "daemon/running_daemons.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>

#include <fmt/format.h>

#include "common/file_util.h"
#include "common/process_record.h"
#include "common/session.h"

namespace clusterd {

namespace {

// A pid file may outlive its process and the pid be reused: only a process
// whose command line is a clusterd counts.
bool IsClusterd(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/cmdline", pid));
  std::string argv0;
  std::getline(in, argv0, '\0');
  return argv0.find("clusterd") != std::string::npos;
}

}  // namespace

bool Alive(pid_t pid) {
  if (kill(pid, 0) != 0) return false;
  // A zombie has exited; only its parent's wait is missing.
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string skip, state;
  in >> skip >> skip >> state;
  return state != "Z";
}

std::vector<RunningDaemon> FindRunningDaemons(const std::string& temp_dir) {
  std::vector<RunningDaemon> out;
  for (const Session& session : AllSessions(temp_dir)) {
    DIR* dir = opendir(session.PidsDir().c_str());
    if (!dir) continue;
    while (dirent* entry = readdir(dir)) {
      std::string name = entry->d_name;
      if (name.size() < 5 || name.substr(name.size() - 4) != ".pid") continue;
      std::string path = session.PidsDir() + "/" + name;
      auto text = ReadFileTrimmed(path);
      auto record = text.ok() ? ProcessRecord::Parse(*text) : Result<ProcessRecord>(text.status());
      pid_t pid = record.ok() ? record->pid : 0;
      // The very process that wrote the file, and a clusterd: pids are reused.
      if (pid > 0 && record->StillRunning() && Alive(pid) && IsClusterd(pid)) {
        out.push_back({pid, path, name.substr(0, name.find('-'))});
      } else {
        unlink(path.c_str());  // stale
      }
    }
    closedir(dir);
  }
  return out;
}

}  // namespace clusterd
