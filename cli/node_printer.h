// What `clusterctl node NODE` prints of one node, and the short note on
// its GPUs out for a fault that `clusterctl status` adds to its line.
#pragma once

#include <cstdint>
#include <string>

#include "cluster.pb.h"

namespace clusterd::cli {

// "GPU 1 out: 2 uncorrectable ECC errors since the driver loaded; GPU 3
// out: ..."; "" when every GPU is offered.
std::string FormatBadGpus(const NodeInfo& node);
// The node's state and why, address, resources, and one line per GPU: its
// use as last read, and whether it is offered or out (since when, why).
std::string FormatNodeDetail(const NodeInfo& node, int64_t now_unix_ms);

}  // namespace clusterd::cli
