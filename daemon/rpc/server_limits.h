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

// Calls at once on one connection: a client's threads, an agent's uploads.
// Fixed: a client's calls past it wait in its own gRPC for a free stream
// rather than fail, so no cluster needs it larger.
inline constexpr int kMaxStreamsPerConnection = 128;

// rpc_memory_mb, rpc_idle_timeout_ms, and unproven_connection_timeout_ms as
// gRPC's handshake timeout (its own default is 120 s), from `config`.
void LimitHeadServer(grpc::ServerBuilder* builder, const Config& config);

// The bounds on the head's ports for connections that have not proven the
// token, from the config table.
PortGuard HeadPortGuard(const Config& config);

// Raises this process's soft limit on open files to its hard limit, as
// servers do: a head holds a stream per node plus its clients. Returns the
// limit now in force.
int64_t RaiseOpenFileLimit();

}  // namespace clusterd
