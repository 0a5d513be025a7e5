// What each part of a node agent is told, read from the agent's options
// and the config table in one place: the link to the head, the rank
// runner, the package cache and the report server's limits; and the
// launcher that holds each attempt's processes. NodeAgent::Start wires the
// parts built from these.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "daemon/agent/gpu_probe.h"
#include "daemon/agent/head_link.h"
#include "daemon/agent/launcher_client.h"
#include "daemon/agent/node_agent_options.h"
#include "daemon/agent/package_cache.h"
#include "daemon/agent/rank_runner.h"
#include "daemon/agent/report_server.h"

namespace clusterd {

HeadLink::Options HeadLinkOptionsOf(const NodeAgentOptions& options, const WaitableClock* clock);
RankRunner::Options RankRunnerOptionsOf(const NodeAgentOptions& options);
PackageCache::Options PackageCacheOptionsOf(const NodeAgentOptions& options);
ReportLimits ReportLimitsOf(const Config& config);
// The GPU probe runs where the node offers GPUs and nvidia-smi is found;
// it watches for GPUs gone missing only when nvidia-smi named them (not --num-gpus).
GpuProbe::Options GpuProbeOptionsOf(const NodeAgentOptions& options, const RegisterNode& registration);

// The launcher of real processes, each attempt held as the config's
// containment says (attempt_cgroup.h); fails when that containment cannot
// be had. Sets *containment_name to how they are held and *limits_name to
// the limits that hold (cgroup_limits.h), for the node's
// clusterd.containment and clusterd.limits labels. A launcher that does
// not start yet is returned all the same: the first rank tries again.
Result<std::unique_ptr<LauncherClient>> StartLauncherClient(const Config& config, std::string* containment_name,
                                                            std::string* limits_name);

}  // namespace clusterd
