#include "daemon/rpc/rpc_latency.h"

#include "common/latency_histogram.h"

namespace clusterd {

void RpcTimer::Finish(grpc::ServerUnaryReactor* reactor, const grpc::Status& status) const {
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start_;
  RpcLatency().Observe(method_, took.count());
  reactor->Finish(status);
}

}  // namespace clusterd
