// gRPC face of the head for clusterctl: unary calls checked for the token,
// then posted onto the head's event loop, answered from there. An exception
// thrown by the core fails that call alone (INTERNAL, logged), never the loop.
#pragma once

#include <string>

#include "cluster.grpc.pb.h"
#include "common/net/head_metadata.h"
#include "daemon/event_loop.h"
#include "daemon/head/head_core.h"

namespace clusterd {

class HeadServiceImpl final : public HeadService::CallbackService {
 public:
  // REQUIRES: core and loop outlive the server.
  HeadServiceImpl(HeadCore* core, EventLoop* loop, std::string token)
      : core_(core), loop_(loop), token_(std::move(token)) {}

  grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* context, const StatusRequest* request,
                                      ClusterStatus* reply) override;
  grpc::ServerUnaryReactor* ListNodes(grpc::CallbackServerContext* context, const ListNodesRequest* request,
                                      ListNodesReply* reply) override;
  grpc::ServerUnaryReactor* DrainNode(grpc::CallbackServerContext* context, const NodeRequest* request,
                                      NodeReply* reply) override;
  grpc::ServerUnaryReactor* StopNode(grpc::CallbackServerContext* context, const NodeRequest* request,
                                     NodeReply* reply) override;
  grpc::ServerUnaryReactor* SubmitJob(grpc::CallbackServerContext* context, const SubmitJobRequest* request,
                                      SubmitJobReply* reply) override;
  grpc::ServerUnaryReactor* SubmitJobs(grpc::CallbackServerContext* context, const SubmitJobsRequest* request,
                                       SubmitJobsReply* reply) override;
  grpc::ServerUnaryReactor* ListJobs(grpc::CallbackServerContext* context, const ListJobsRequest* request,
                                     ListJobsReply* reply) override;
  grpc::ServerUnaryReactor* GetJob(grpc::CallbackServerContext* context, const JobRequest* request,
                                   JobInfo* reply) override;
  grpc::ServerUnaryReactor* StopJob(grpc::CallbackServerContext* context, const JobRequest* request,
                                    JobInfo* reply) override;
  grpc::ServerUnaryReactor* GetLogs(grpc::CallbackServerContext* context, const LogsRequest* request,
                                    LogsReply* reply) override;
  grpc::ServerUnaryReactor* GetMetrics(grpc::CallbackServerContext* context, const JobRequest* request,
                                       MetricsReply* reply) override;
  grpc::ServerUnaryReactor* DeleteJob(grpc::CallbackServerContext* context, const JobRequest* request,
                                      JobInfo* reply) override;
  grpc::ServerUnaryReactor* GetSweep(grpc::CallbackServerContext* context, const SweepRequest* request,
                                     SweepInfo* reply) override;
  grpc::ServerUnaryReactor* ListSweeps(grpc::CallbackServerContext* context, const ListSweepsRequest* request,
                                       ListSweepsReply* reply) override;

 private:
  // Checks the token, then runs fn on the loop and finishes with its Status
  // (INTERNAL, naming `method`, when fn throws).
  template <typename Fn>
  grpc::ServerUnaryReactor* OnLoop(grpc::CallbackServerContext* context, const char* method, Fn fn);
  // One submit, a job, an array or a sweep, on the loop.
  Status SubmitOne(const SubmitJobRequest& request, SubmitJobReply* reply);

  HeadCore* core_;
  EventLoop* loop_;
  std::string token_;
};

}  // namespace clusterd
