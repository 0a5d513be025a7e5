// What a node's registration may say, checked by the head itself: the
// agent's command line checks its own flags, but a stream may carry
// anything its sender (holding the token) writes. Unchecked, names with
// newlines would forge lines in the head's log and status, 4 MB names
// would make every `clusterctl status` reply too large to receive (and
// stay in the node journal across restarts), and NaN or negative
// resources would poison the cluster's totals.
#pragma once

#include "agent.pb.h"
#include "common/status.h"

namespace clusterd {

inline constexpr size_t kMaxNodeLabels = 64;
inline constexpr size_t kMaxLabelBytes = 256;
inline constexpr size_t kMaxNodeResources = 64;
inline constexpr size_t kMaxNodeGpus = 1024;
inline constexpr size_t kMaxAddressBytes = 255;

// OK, or InvalidArgument naming the field and what is wrong with it.
Status CheckRegistration(const RegisterNode& request);

}  // namespace clusterd
