// A gRPC channel to the head that comes back soon after the head does:
// gRPC's own reconnect backoff grows to two minutes, so a channel that saw
// the head refuse during a restart would go on failing calls at once
// ("Connection refused") long after the head is back. Every channel to the
// head needs it: the agent link's Locate call (agents must be back before a
// restarted head's adoption deadline), the agent's store channel (launches
// right after a restart, while checkpoint uploads have kept the channel
// backing off) and clusterctl's (`submit --follow` must reach a head that is
// back within its outage window).
#pragma once

#include <memory>
#include <string>

#include <grpcpp/channel.h>
#include <grpcpp/support/channel_arguments.h>

#include "common/net/tls.h"

namespace clusterd {

// Reconnects after initial_ms, backing off to max_ms at most (an agent's
// reconnect settings); `arguments` may carry more. gRPC takes its minimum
// backoff as the least time one TCP connect may take: that is
// connect_timeout_ms (at 100 ms a SYN that waits on ARP, 1 s on a real
// network, would make the first join fail). Refused connections still
// fail at once.
inline std::shared_ptr<grpc::Channel> DialHeadAgain(const std::string& address, const TlsConfig& tls,
                                                    int initial_ms, int max_ms, int connect_timeout_ms,
                                                    grpc::ChannelArguments arguments = {}) {
  arguments.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, initial_ms);
  arguments.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, max_ms);
  arguments.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, connect_timeout_ms);
  return DialHead(address, tls, std::move(arguments));
}

}  // namespace clusterd
