// clusterctl queue | quota set NAME RES=N... | quota remove NAME | quota list
// (docs/SHARING.md, "Priorities, fair share and quotas").
#pragma once

#include <string>
#include <vector>

#include "cluster.pb.h"
#include "common/status.h"

namespace clusterd::cli {

int QueueCommand(const std::vector<std::string>& args);
int QuotaCommand(const std::vector<std::string>& args);

// `clusterctl queue`'s table: JOB NAME OWNER PRIORITY WORKERS GPUS CPUS
// STARTS REASON, in the order the jobs will start.
std::string FormatQueueTable(const QueueListReply& queue, int64_t now_unix_ms);
// "GPU=8 CPU=64" into a ResourceSet; an error naming the bad word.
Result<ResourceSet> ParseQuotaLimits(const std::vector<std::string>& words);
// `clusterctl quota list`'s table: NAME GPUS CPUS OTHER, each "used of limit".
std::string FormatQuotaTable(const ListQuotasReply& quotas);

}  // namespace clusterd::cli
