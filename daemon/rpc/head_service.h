// gRPC face of the head for clusterctl: each unary call's token resolved to
// a principal (call_principal.h), then posted onto the head's event loop
// with it, where the handler applies the access rules and answers. An
// exception thrown by the core fails that call alone (INTERNAL, logged),
// never the loop.
#pragma once

#include <functional>
#include <string>

#include "cluster.grpc.pb.h"
#include "common/net/head_metadata.h"
#include "daemon/event_loop.h"
#include "daemon/head/head_core.h"

namespace clusterd {

class HeadServiceImpl final : public HeadService::CallbackService {
 public:
  // Tokens are resolved by core->users(), which holds the admin's.
  // REQUIRES: core and loop outlive the server.
  HeadServiceImpl(HeadCore* core, EventLoop* loop) : core_(core), loop_(loop) {}
  // Waits, off the loop, until a job's logs are in the head's store (a new
  // leader in HA reads final jobs' logs back from S3 after it serves:
  // daemon/ha/log_mirror.h); an error fails the read. Unset: no wait.
  using LogsReady = std::function<Status(const std::string& job_id)>;
  void set_logs_ready(LogsReady ready) { logs_ready_ = std::move(ready); }

  grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* context, const StatusRequest* request,
                                      ClusterStatus* reply) override;
  grpc::ServerUnaryReactor* ListNodes(grpc::CallbackServerContext* context, const ListNodesRequest* request,
                                      ListNodesReply* reply) override;
  grpc::ServerUnaryReactor* DrainNode(grpc::CallbackServerContext* context, const NodeRequest* request,
                                      NodeReply* reply) override;
  grpc::ServerUnaryReactor* StopNode(grpc::CallbackServerContext* context, const NodeRequest* request,
                                     NodeReply* reply) override;
  grpc::ServerUnaryReactor* NodeResetGpu(grpc::CallbackServerContext* context, const ResetGpuRequest* request,
                                         ResetGpuReply* reply) override;
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
  grpc::ServerUnaryReactor* ListRunningJobs(grpc::CallbackServerContext* context, const RunningJobsRequest* request,
                                            RunningJobsReply* reply) override;
  grpc::ServerUnaryReactor* DeleteJob(grpc::CallbackServerContext* context, const JobRequest* request,
                                      JobInfo* reply) override;
  grpc::ServerUnaryReactor* GetSweep(grpc::CallbackServerContext* context, const SweepRequest* request,
                                     SweepInfo* reply) override;
  grpc::ServerUnaryReactor* ListSweeps(grpc::CallbackServerContext* context, const ListSweepsRequest* request,
                                       ListSweepsReply* reply) override;
  grpc::ServerUnaryReactor* IdentityWhoAmI(grpc::CallbackServerContext* context, const WhoAmIRequest* request,
                                           WhoAmIReply* reply) override;
  grpc::ServerUnaryReactor* IdentityAddUser(grpc::CallbackServerContext* context, const AddUserRequest* request,
                                            AddUserReply* reply) override;
  grpc::ServerUnaryReactor* IdentityListUsers(grpc::CallbackServerContext* context, const ListUsersRequest* request,
                                              ListUsersReply* reply) override;
  grpc::ServerUnaryReactor* IdentityRemoveUser(grpc::CallbackServerContext* context,
                                               const RemoveUserRequest* request, UserInfo* reply) override;
  grpc::ServerUnaryReactor* IdentitySetUser(grpc::CallbackServerContext* context, const SetUserRequest* request,
                                            UserInfo* reply) override;
  grpc::ServerUnaryReactor* IdentityCreateNodeToken(grpc::CallbackServerContext* context,
                                                    const CreateNodeTokenRequest* request,
                                                    CreateNodeTokenReply* reply) override;
  grpc::ServerUnaryReactor* IdentityListNodeTokens(grpc::CallbackServerContext* context,
                                                   const ListNodeTokensRequest* request,
                                                   ListNodeTokensReply* reply) override;
  grpc::ServerUnaryReactor* IdentityRevokeNodeToken(grpc::CallbackServerContext* context,
                                                    const RevokeNodeTokenRequest* request,
                                                    NodeTokenInfo* reply) override;
  // The queue policy's (docs/SHARING.md): `clusterctl queue` and `quota`.
  grpc::ServerUnaryReactor* QueueList(grpc::CallbackServerContext* context, const QueueListRequest* request,
                                      QueueListReply* reply) override;
  grpc::ServerUnaryReactor* QueueSetQuota(grpc::CallbackServerContext* context, const SetQuotaRequest* request,
                                          QuotaInfo* reply) override;
  grpc::ServerUnaryReactor* QueueListQuotas(grpc::CallbackServerContext* context, const ListQuotasRequest* request,
                                            ListQuotasReply* reply) override;

 private:
  // Resolves the caller, then runs fn(caller) on the loop and finishes with
  // its Status (INTERNAL, naming `method`, when fn throws).
  template <typename Fn>
  grpc::ServerUnaryReactor* OnLoop(grpc::CallbackServerContext* context, const char* method, Fn fn);
  // One submit, a job, an array or a sweep, on the loop, owned by `owner`.
  Status SubmitOne(const SubmitJobRequest& request, const std::string& owner, SubmitJobReply* reply);

  HeadCore* core_;
  EventLoop* loop_;
  LogsReady logs_ready_;
};

}  // namespace clusterd
