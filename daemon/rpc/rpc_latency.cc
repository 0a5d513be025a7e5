#include "daemon/rpc/rpc_latency.h"

#include "common/latency_histogram.h"

namespace clusterd {

void TimedUnaryReactor::OnDone() {
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start_;
  RpcLatency().Observe(method_, took.count());
  delete this;
}

}  // namespace clusterd
