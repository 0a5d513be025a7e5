// clusterctl's connection to the head: finds address and token (flag,
// environment, local session), makes calls with a deadline, and turns
// failures into one-line messages.
#pragma once

#include <grpcpp/client_context.h>

#include <memory>
#include <string>

#include "cluster.grpc.pb.h"
#include "common/blob_client.h"
#include "common/status.h"

namespace clusterd::cli {

struct ClientOptions {
  std::string address;
  std::string token;
  std::string temp_dir;
  int timeout_ms = 5000;
};

class HeadClient {
 public:
  static Result<std::unique_ptr<HeadClient>> Connect(const ClientOptions& options);

  // Calls stub method `method` with a deadline and the token; the Status
  // names the head and says plainly what went wrong.
  template <typename Request, typename Reply, typename Method>
  Status Call(Method method, const Request& request, Reply* reply) {
    grpc::ClientContext context;
    Prepare(&context);
    grpc::Status status = ((*stub_).*method)(&context, request, reply);
    return Explain(status, context);
  }

  const std::string& address() const { return address_; }
  // The head's blob store, over the same connection.
  BlobClient Store() const { return BlobClient(channel_, token_, address_); }

 private:
  void Prepare(grpc::ClientContext* context) const;
  // `context` tells an UNAVAILABLE the head answered (its journal cannot be
  // written) from one the transport made up (no head there).
  Status Explain(const grpc::Status& status, const grpc::ClientContext& context) const;

  std::string address_;
  std::string token_;
  int timeout_ms_ = 5000;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<HeadService::Stub> stub_;
};

}  // namespace clusterd::cli
