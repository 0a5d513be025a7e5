// Asks a head for its GetStatus directly over gRPC, with the cluster token:
// far cheaper than exec'ing clusterctl, so death can be seen within ~2 ms.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "cluster.grpc.pb.h"
#include "common/net/tls.h"

namespace clusterd::bench {

class HeadProbe {
 public:
  HeadProbe(const std::string& address, const std::string& token, const TlsConfig& tls = {});

  // One GetStatus call, listing at most `nodes_per_state` nodes of each
  // state (0: all); false (with the reason in *error) when it failed.
  bool GetStatus(ClusterStatus* status, std::string* error = nullptr,
                 std::chrono::milliseconds deadline = std::chrono::seconds(5), int nodes_per_state = 0);

 private:
  std::string token_;
  std::unique_ptr<HeadService::Stub> stub_;
};

// The cluster token of the latest session under temp_dir, once it is written.
std::optional<std::string> SessionToken(const std::string& temp_dir);

// A node's state by name; NODE_STATE_UNSPECIFIED when it is not listed.
NodeState StateOf(const ClusterStatus& status, const std::string& name);
int CountInState(const ClusterStatus& status, NodeState state);

}  // namespace clusterd::bench
