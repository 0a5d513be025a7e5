#include "daemon/rpc/rpc_latency.h"

#include <chrono>
#include <string>

#include "common/latency_histogram.h"

namespace clusterd {

namespace {

namespace gx = grpc::experimental;

class LatencyInterceptor : public gx::Interceptor {
 public:
  explicit LatencyInterceptor(gx::ServerRpcInfo* info)
      : method_(info->method()), start_(std::chrono::steady_clock::now()) {}

  void Intercept(gx::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(gx::InterceptionHookPoints::PRE_SEND_STATUS)) {
      std::chrono::duration<double> took = std::chrono::steady_clock::now() - start_;
      RpcLatency().Observe(method_, took.count());
    }
    methods->Proceed();
  }

 private:
  std::string method_;
  std::chrono::steady_clock::time_point start_;
};

class LatencyInterceptorFactory : public gx::ServerInterceptorFactoryInterface {
 public:
  gx::Interceptor* CreateServerInterceptor(gx::ServerRpcInfo* info) override {
    if (info->type() != gx::ServerRpcInfo::Type::UNARY) return nullptr;
    return new LatencyInterceptor(info);
  }
};

}  // namespace

std::vector<std::unique_ptr<gx::ServerInterceptorFactoryInterface>> RpcLatencyInterceptors() {
  std::vector<std::unique_ptr<gx::ServerInterceptorFactoryInterface>> creators;
  creators.push_back(std::make_unique<LatencyInterceptorFactory>());
  return creators;
}

}  // namespace clusterd
