// What this node tells the head when it registers and whenever it
// registers again: its name, address and resources, fixed at start (an
// option given wins over what was probed), and the ranks it still runs.
#pragma once

#include <string>

#include "agent.pb.h"
#include "daemon/agent/node_agent_options.h"
#include "daemon/agent/resource_probe.h"

namespace clusterd {

// The registration's fixed part. The instance id is new for each call, so
// the head tells this agent from an earlier one of the same name.
RegisterNode DescribeNode(const NodeAgentOptions& options, const ProbedResources& probed);

// This machine's host name, or "node" when it has none.
std::string HostName();

}  // namespace clusterd
