// Bounds on what the head's gRPC port gives callers that may not even hold
// the token (the token is checked in the handlers, after gRPC has taken the
// connection and the call). Without them a flood of HTTP/2 streams opened
// and reset at once, with no token, makes the head unreachable for minutes
// while its memory grows to gigabytes; idle connections, each held 2 minutes,
// run the head out of descriptors, and gRPC 1.51 never accepts on a port
// again after one failed accept.
#pragma once

#include <grpcpp/server_builder.h>

#include "common/config.h"
#include "daemon/rpc/grpc_port_listener.h"

namespace clusterd {

// Memory for gRPC's buffers and calls, past which it refuses new ones.
inline constexpr int64_t kHeadRpcMemoryBytes = 512LL << 20;
// Calls at once on one connection: a client's threads, an agent's uploads.
inline constexpr int kMaxStreamsPerConnection = 128;
// A connection with no call for this long is closed (a client reconnects).
inline constexpr int kMaxConnectionIdleMs = 30'000;
// A connection that has not begun HTTP/2 by then is closed (gRPC: 120 s).
inline constexpr int kHandshakeTimeoutMs = 10'000;

void LimitHeadServer(grpc::ServerBuilder* builder);

// The bounds on the head's ports for connections that have not proven the
// token, from the config table.
PortGuard HeadPortGuard(const Config& config);

// Raises this process's soft limit on open files to its hard limit, as
// servers do: a head holds a stream per node plus its clients. Returns the
// limit now in force.
int64_t RaiseOpenFileLimit();

}  // namespace clusterd
