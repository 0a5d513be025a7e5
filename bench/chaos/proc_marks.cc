#include "proc_marks.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace clusterd::bench {

namespace fs = std::filesystem;

namespace {

std::string ReadProc(pid_t pid, const char* file) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/" + file, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

std::optional<pid_t> ClusterdPid(testing::Machine& machine) {
  for (pid_t pid : machine.Pids()) {
    std::string comm = ReadProc(pid, "comm");
    if (comm == "clusterd\n" && testing::ProcessAlive(pid)) return pid;
  }
  return std::nullopt;
}

bool HasVariable(pid_t pid, const std::string& variable) {
  std::string env = ReadProc(pid, "environ");
  for (size_t start = 0; start < env.size();) {
    size_t end = env.find('\0', start);
    if (end == std::string::npos) end = env.size();
    if (env.compare(start, end - start, variable) == 0) return true;
    start = end + 1;
  }
  return false;
}

std::vector<pid_t> PidsWithVariable(const std::string& variable) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    pid_t pid = std::stoi(name);
    if (HasVariable(pid, variable) && testing::ProcessAlive(pid)) out.push_back(pid);
  }
  return out;
}

std::string DescribePid(pid_t pid) {
  std::string comm = ReadProc(pid, "comm"), argv = ReadProc(pid, "cmdline"), env = ReadProc(pid, "environ");
  if (!comm.empty() && comm.back() == '\n') comm.pop_back();
  for (char& c : argv) c = c == '\0' ? ' ' : c;
  std::string job;
  size_t at = env.find("CLUSTER_JOB_ID=");
  if (at != std::string::npos) job = " of " + env.substr(at + 15, env.find('\0', at) - at - 15);
  std::string stat = ReadProc(pid, "stat");
  std::string ppid;
  size_t paren = stat.rfind(')');
  if (paren != std::string::npos) {
    std::istringstream fields(stat.substr(paren + 2));
    std::string state;
    fields >> state >> ppid;
  }
  return std::to_string(pid) + " " + comm + job + " (parent " + ppid + "): " + argv;
}

int64_t FolderBytes(const std::string& path, int64_t* journal) {
  int64_t total = 0;
  const fs::path journal_dir = fs::path(path) / "journal";
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    std::error_code size_ec;
    if (!it->is_regular_file(size_ec)) continue;
    auto size = static_cast<int64_t>(it->file_size(size_ec));
    if (size_ec) continue;
    total += size;
    if (it->path().string().rfind(journal_dir.string(), 0) == 0) *journal += size;
  }
  return total;
}

}  // namespace clusterd::bench
