// A gRPC server interceptor that times every unary call, from its arrival
// to its status, into RpcLatency() by full method name. Streams (the
// agents' long-lived ones, log follows) are left out: their length is not
// a latency.
#pragma once

#include <grpcpp/support/server_interceptor.h>

#include <memory>
#include <vector>

namespace clusterd {

// For grpc::ServerBuilder::experimental().SetInterceptorCreators.
std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> RpcLatencyInterceptors();

}  // namespace clusterd
