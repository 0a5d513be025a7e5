#include "daemon/rpc/server_limits.h"

#include <sys/resource.h>

#include <algorithm>

#include <grpcpp/resource_quota.h>

namespace clusterd {

void LimitHeadServer(grpc::ServerBuilder* builder, const Config& config) {
  grpc::ResourceQuota quota("clusterd-head-rpc");
  quota.Resize(static_cast<size_t>(config.rpc_memory_mb) << 20);
  builder->SetResourceQuota(quota);
  builder->AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, kMaxStreamsPerConnection);
  builder->AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, config.rpc_idle_timeout_ms);
  builder->AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, config.unproven_connection_timeout_ms);
}

PortGuard HeadPortGuard(const Config& config) {
  PortGuard guard;
  guard.gate.per_source = config.unproven_connections_per_source;
  guard.gate.per_port = config.unproven_connections_per_port;
  // Unproven connections of both ports take at most half the descriptors
  // the head may open, whatever the table says: the rest are its agents',
  // clients', journal's and store's.
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    guard.gate.per_port = static_cast<int>(std::min<rlim_t>(guard.gate.per_port, std::max<rlim_t>(limit.rlim_cur / 4, 16)));
    guard.gate.per_source = std::min(guard.gate.per_source, guard.gate.per_port);
  }
  guard.unproven_timeout_ms = config.unproven_connection_timeout_ms;
  return guard;
}

int64_t RaiseOpenFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return -1;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  return limit.rlim_cur == RLIM_INFINITY ? -1 : static_cast<int64_t>(limit.rlim_cur);
}

}  // namespace clusterd
