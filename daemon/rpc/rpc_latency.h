// Times every unary call to the head, from its handler's start to the
// call's end (its status sent), into RpcLatency() by full method name, as
// /metrics' clusterd_rpc_duration_seconds. Streams (the agents'
// long-lived ones, blob transfers) are left out: their length is not a
// latency.
// A reactor per call rather than a gRPC server interceptor: with an
// interceptor registered, every step of every call went through gRPC's
// interception path and an extra empty batch (perf, 10,000 separate
// submits: gRPC's callback threads 0.087 -> 0.056 ms of CPU per submit).
#pragma once

#include <grpcpp/support/server_callback.h>

#include <chrono>
#include <string>

namespace clusterd {

class TimedUnaryReactor : public grpc::ServerUnaryReactor {
 public:
  // `method`: the full name, "/<package>.<Service>/<Method>".
  explicit TimedUnaryReactor(std::string method)
      : method_(std::move(method)), start_(std::chrono::steady_clock::now()) {}
  void OnDone() override;  // observes, then deletes this reactor (gRPC's last word on the call)

 private:
  std::string method_;
  std::chrono::steady_clock::time_point start_;
};

// A reactor for one call of `service` (its generated full name, e.g.
// HeadService::service_full_name()) and `method`, timed as above.
inline grpc::ServerUnaryReactor* TimedReactor(const char* service, const char* method) {
  return new TimedUnaryReactor(std::string("/") + service + "/" + method);
}

}  // namespace clusterd
