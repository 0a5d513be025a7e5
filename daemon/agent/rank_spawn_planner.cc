#include "daemon/agent/rank_spawn_planner.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include "common/file_util.h"
#include "common/net/net_address.h"
#include "daemon/agent/launch_prep.h"
#include "daemon/agent/preemption_notice.h"
#include "daemon/agent/python_package.h"
#include "daemon/agent/rank_environment.h"

namespace clusterd {

namespace {

// Linux refuses exec when one environment string passes 128 KiB (E2BIG).
constexpr size_t kConfigInEnvBytes = 32 << 10;

}  // namespace

RankSpawnPlanner::RankSpawnPlanner(Options options)
    : options_(std::move(options)), agent_env_(AgentEnvironment()) {}

std::vector<SpawnRequest> RankSpawnPlanner::Plan(const LaunchRanks& launch, int master_port) {
  // An attempt's config file (when it has one) lies flat in logs_dir: a
  // folder per job and attempt cost each launch two directory allocations,
  // ext4's slowest way to make an inode.
  const std::string prefix = fmt::format("{}/{}.attempt-{}", options_.logs_dir, launch.job_id(), launch.attempt());
  EnvOverrides shared(launch.env().begin(), launch.env().end());
  const std::string& interface = NodeInterface();
  // The config as a file (it may be far larger than one environment string
  // may be), and as CLUSTER_CONFIG too while it is small. Most jobs have
  // none: they share one empty config file, made once.
  const bool no_config = launch.config_json().empty() || launch.config_json() == "{}";
  const std::string config = no_config ? "{}" : launch.config_json();
  std::string config_path = options_.logs_dir + "/empty-config.json";
  if (!no_config) {
    config_path = prefix + ".config.json";
    WriteFileAtomic(config_path, config + "\n", 0644, Durability::kWhileRunning);
  } else if (!empty_config_written_ || access(config_path.c_str(), R_OK) != 0) {
    // Read-only: no job may change what the others read.
    empty_config_written_ = WriteFileAtomic(config_path, "{}\n", 0444, Durability::kWhileRunning).ok();
  }
  shared["CLUSTER_CONFIG_FILE"] = config_path;
  // Where a preemption notice to the attempt would lie (preemption_notice.h).
  shared["CLUSTER_PREEMPTION_FILE"] = PreemptionNoticePath(options_.logs_dir, launch.job_id(), launch.attempt());
  if (config.size() <= kConfigInEnvBytes) shared["CLUSTER_CONFIG"] = config;
  // Gloo and NCCL bind by host name unless told an interface, and the
  // host name resolves to loopback (NOTES.md): name the node's own.
  for (const char* name : {"GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME"}) {
    if (!interface.empty() && !EnvironmentValue(agent_env_, name)) shared.emplace(name, interface);
  }
  std::vector<SpawnRequest> requests;
  for (const RankLaunch& r : launch.ranks()) {
    SpawnRequest& request = requests.emplace_back();
    request.argv.assign(launch.argv().begin(), launch.argv().end());
    request.working_dir = launch.working_dir();
    request.attempt = AttemptKey(launch.job_id(), launch.attempt());
    request.rank = r.rank();
    request.memory_limit_bytes = launch.memory_limit_bytes();
    request.cpus = launch.cpus_per_rank();
    request.run_as = launch.run_as().empty() ? options_.run_as : launch.run_as();
    request.run_as_asked_by_job = !launch.run_as().empty();
    // A shipped package's folder is the agent's, made for this attempt:
    // the rank's user must write there (its checkpoints, its outputs). A
    // shared working_dir is the user's own, left as it is.
    if (!launch.package_id().empty() && !request.run_as.empty()) request.writable_dirs.push_back(launch.working_dir());
    EnvOverrides own = shared;
    for (const auto& [key, value] : r.env()) own[key] = value;
    own["CLUSTER_AGENT_SOCKET"] = options_.socket_path;
    if (!options_.python_path.empty()) {  // the node's own package, whatever the job or the node put there
      auto given = own.find("PYTHONPATH");
      const std::string existing(given != own.end() ? std::string_view(given->second)
                                                    : EnvironmentValue(agent_env_, "PYTHONPATH").value_or(""));
      own["PYTHONPATH"] = RankPythonPath(options_.python_path, existing);
    }
    if (!launch.working_dir().empty()) {
      own["CLUSTER_WORKING_DIR"] = launch.working_dir();
      // A relative checkpoint folder lives in the working folder, which only this node knows.
      auto given = own.find("CLUSTER_CHECKPOINT_DIR");
      std::string checkpoints(given != own.end() ? given->second
                                                 : EnvironmentValue(agent_env_, "CLUSTER_CHECKPOINT_DIR").value_or(""));
      own["CLUSTER_CHECKPOINT_DIR"] = ResolveCheckpointDir(checkpoints, launch.working_dir());
    }
    if (master_port > 0) own["MASTER_PORT"] = std::to_string(master_port);
    request.env = MergeEnvironment(agent_env_, own);
  }
  return requests;
}

const std::string& RankSpawnPlanner::NodeInterface() {
  // The node's address is fixed for the agent's life, and asking the kernel
  // (a netlink dump of every link and address) costs a launch ~0.3 ms.
  if (interface_.empty()) interface_ = InterfaceOf(options_.node_ip);
  return interface_;
}

int RankSpawnPlanner::FreePort() const {
  // Bind port 0 to let the kernel pick a free port, then let it go: the
  // same race torchrun accepts for MASTER_PORT.
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  if (inet_pton(AF_INET, options_.node_ip.c_str(), &addr.sin_addr) != 1) addr.sin_addr.s_addr = htonl(INADDR_ANY);
  int port = 0;
  if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    socklen_t len = sizeof addr;
    getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    port = ntohs(addr.sin_port);
  }
  if (fd >= 0) close(fd);
  return port;
}

}  // namespace clusterd
