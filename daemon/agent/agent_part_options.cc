#include "daemon/agent/agent_part_options.h"

#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

#include "common/logging.h"
#include "daemon/agent/resource_probe.h"

namespace clusterd {

HeadLink::Options HeadLinkOptionsOf(const NodeAgentOptions& options, const WaitableClock* clock) {
  HeadLink::Options link;
  link.head_address = options.head_address;
  link.token = options.token;
  link.tls = options.tls;
  link.heartbeat_ms = options.config.heartbeat_ms;
  link.reconnect_initial_ms = options.config.reconnect_initial_ms;
  link.reconnect_max_ms = options.config.reconnect_max_ms;
  link.connect_timeout_ms = options.config.connect_timeout_ms;
  link.keepalive_ms = options.config.keepalive_ms;
  link.keepalive_timeout_ms = options.config.keepalive_timeout_ms;
  // A worker's list of heads names heads in HA; one address, a single head,
  // unless the agent is told (the own node of a head in HA).
  const bool several_heads = options.head_address.find(',') != std::string::npos;
  if (options.heads_in_ha || several_heads) link.leader_wait_ms = options.config.ha_leader_wait_ms;
  link.on_waiting_for_leader = options.on_waiting_for_leader;
  link.clock = clock;
  return link;
}

RankRunner::Options RankRunnerOptionsOf(const NodeAgentOptions& options) {
  RankRunner::Options runner;
  runner.logs_dir = options.session_dir + "/logs/jobs";
  runner.ranks_dir = options.session_dir + "/ranks";
  runner.socket_path = options.socket_path;
  runner.python_path = options.python_path;
  runner.node_ip = options.node_ip;
  runner.log_tail_lines = options.config.log_tail_lines;
  runner.hang_sample_ms = options.config.hang_sample_ms;
  runner.run_as = options.config.run_as;
  return runner;
}

PackageCache::Options PackageCacheOptionsOf(const NodeAgentOptions& options) {
  PackageCache::Options cache;
  cache.dir = options.package_dir;
  cache.capacity_bytes = options.config.package_cache_mb * (int64_t{1} << 20);
  return cache;
}

ReportLimits ReportLimitsOf(const Config& config) {
  ReportLimits limits;
  limits.slots_per_rank = config.report_slots_per_rank;
  limits.rate_per_s = config.report_rate_per_s;
  limits.burst = config.report_burst;
  return limits;
}

Result<std::unique_ptr<LauncherClient>> StartLauncherClient(const Config& config, std::string* containment_name,
                                                            std::string* limits_name) {
  // How each attempt's processes are held and which limits hold, said
  // once here and in the node's clusterd.containment and clusterd.limits labels.
  LimitSettings limit_settings;
  limit_settings.cpu_limit = config.cpu_limit;
  limit_settings.attempt_pids_max = config.attempt_pids_max;
  auto containment = Containment::Detect(config.containment, fmt::format("clusterd-{}", getpid()), limit_settings);
  if (!containment.ok()) return containment.status();
  if (containment->root.empty()) {
    // A node without cgroups says so in one warning, the limits that hold (if any) with it.
    LOG_WARN("each attempt's processes are held by its keeper process alone, not by a cgroup ({}): a rank's "
             "process that kills its keeper outlives its attempt; limits that hold on this node: {}{}",
             containment->why_not, containment->limits.Describe(),
             containment->limits.why_not.empty() ? "" : fmt::format(" (not: {})", containment->limits.why_not));
  } else {
    LOG_INFO("each attempt's processes are held by {} ({})", ContainmentName(containment->kind), containment->root);
    if (containment->limits.why_not.empty()) {
      LOG_INFO("each rank is held to its job's resources: {}", containment->limits.Describe());
    } else {
      LOG_WARN("limits that hold on this node: {}; not: {}", containment->limits.Describe(),
               containment->limits.why_not);
    }
  }
  *containment_name = ContainmentName(containment->kind);
  *limits_name = containment->limits.Describe();
  LauncherOptions launcher_options;
  launcher_options.containment = *containment;
  launcher_options.allowed_run_as = config.allowed_run_as;
  auto launcher = std::make_unique<LauncherClient>(LauncherProgram(), std::move(launcher_options));
  if (Status started = launcher->Start(); !started.ok()) LOG_WARN("{}; the first rank tries again", started.message());
  return {std::move(launcher)};
}

GpuProbe::Options GpuProbeOptionsOf(const NodeAgentOptions& options, const RegisterNode& registration) {
  GpuProbe::Options probe;
  if (registration.gpu_indexes_size() == 0 || options.config.gpu_probe_interval_ms <= 0) return probe;
  probe.nvidia_smi = FindNvidiaSmi();
  probe.interval = Micros{options.config.gpu_probe_interval_ms} * 1000;
  probe.timeout = Micros{std::max(options.config.gpu_probe_timeout_ms, 1)} * 1000;
  probe.watch_missing = options.num_gpus < 0;
  if (probe.watch_missing) probe.expected.assign(registration.gpu_indexes().begin(), registration.gpu_indexes().end());
  return probe;
}

}  // namespace clusterd
