// Times every unary call to the head, from its handler's start to its
// status handed to gRPC, into RpcLatency() by full method name, as
// /metrics' clusterd_rpc_duration_seconds. Streams (the agents'
// long-lived ones, blob transfers) are left out: their length is not a
// latency.
// The handlers time themselves rather than through a gRPC server
// interceptor: with an interceptor registered, every step of every call
// goes through gRPC's interception path and an extra empty batch (perf,
// 10,000 separate submits: gRPC's callback threads 0.087 -> 0.056 ms of
// CPU per submit). Nor through a reactor of our own: its OnDone costs each
// call a hop to gRPC's executor thread.
#pragma once

#include <grpcpp/support/server_callback.h>
#include <grpcpp/support/status.h>

#include <chrono>
#include <string>

namespace clusterd {

class RpcTimer {
 public:
  // `service`: its generated full name (e.g. HeadService::service_full_name()).
  RpcTimer(const char* service, const char* method)
      : method_(std::string("/") + service + "/" + method), start_(std::chrono::steady_clock::now()) {}

  // Observes the time since construction, then finishes the call.
  void Finish(grpc::ServerUnaryReactor* reactor, const grpc::Status& status) const;

 private:
  std::string method_;  // "/<package>.<Service>/<Method>"
  std::chrono::steady_clock::time_point start_;
};

}  // namespace clusterd
