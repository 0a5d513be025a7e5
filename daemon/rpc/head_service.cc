#include "daemon/rpc/head_service.h"

#include <exception>
#include <type_traits>

#include <fmt/format.h>

#include "common/net/auth.h"
#include "common/net/grpc_status.h"
#include "common/jobspec/job_spec.h"
#include "common/logging.h"
#include "daemon/head/identity/access_rules.h"
#include "daemon/head/identity/ownership_check.h"
#include "daemon/head/identity/shown_to.h"
#include "daemon/head/shown_records.h"
#include "daemon/rpc/call_principal.h"
#include "daemon/rpc/rpc_latency.h"

namespace clusterd {

namespace {

// An exception that escaped the core would end the loop's thread and with
// it the head: it fails this one call instead, and is logged.
template <typename Fn>
Status RunGuarded(const char* method, Fn& fn) {
  try {
    return fn();
  } catch (const std::exception& e) {
    LOG_ERROR("{} failed on the head's loop: {}", method, e.what());
    return Status::Internal(std::string(method) + " failed on the head: " + e.what());
  } catch (...) {
    LOG_ERROR("{} failed on the head's loop: an exception of unknown type", method);
    return Status::Internal(std::string(method) + " failed on the head: an exception of unknown type");
  }
}

// StopJob and DeleteJob of a sweep's id answer as for a job: its id, the
// sweep's state as a job's, and why. A sweep that had ended before a stop
// says how it ended, so clusterctl does not claim to have stopped it.
Status AnswerAsJob(const SweepInfo& sweep, const std::string& reason, JobInfo* reply) {
  reply->set_job_id(sweep.sweep_id());
  reply->set_state(sweep.state() == SWEEP_SUCCEEDED ? SUCCEEDED
                   : sweep.state() == SWEEP_FAILED  ? FAILED
                   : sweep.state() == SWEEP_RUNNING ? RUNNING
                                                    : STOPPED);
  reply->set_reason(reason);
  return Status::Ok();
}

}  // namespace

template <typename Fn>
grpc::ServerUnaryReactor* HeadServiceImpl::OnLoop(grpc::CallbackServerContext* context, const char* method, Fn fn) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  RpcTimer timer(HeadService::service_full_name(), method);
  Principal caller;
  grpc::Status auth = ResolveCaller(*context, core_->users(), &caller);
  if (!auth.ok()) {
    timer.Finish(reactor, auth);
    return reactor;
  }
  loop_->Post([this, context, reactor, method, timer = std::move(timer), caller = std::move(caller),
               fn = std::move(fn)]() mutable {
    auto finish = [this, context, reactor, timer = std::move(timer)](const Status& status) {
      // UNAVAILABLE from the head itself (its journal cannot be written) is
      // not "no head there": say it was answered, so clusterctl tells them apart.
      if (status.code() == Status::Code::kUnavailable) context->AddTrailingMetadata(kAnsweredByHead, "1");
      context->AddTrailingMetadata(kHeadUnixMsMetadata, std::to_string(core_->clock()->UnixMillis()));
      timer.Finish(reactor, ToGrpc(status));
    };
    // A handler that takes the caller gets it; one that does not is a
    // look at the cluster that any user may take (never a node token).
    auto call = [&fn, &caller]() -> Status {
      if constexpr (std::is_invocable_v<Fn&, const Principal&>) {
        return fn(caller);
      } else {
        RETURN_IF_ERROR(RequireUser(caller));
        return fn();
      }
    };
    Status status = RunGuarded(method, call);
    if (!status.ok()) {
      finish(status);
      return;
    }
    // Acknowledged only once what the call changed (and anything before
    // it) is on disk; a burst of calls shares one sync.
    core_->jobs().WhenDurable(finish);
  });
  return reactor;
}

grpc::ServerUnaryReactor* HeadServiceImpl::GetStatus(grpc::CallbackServerContext* context,
                                                     const StatusRequest* request, ClusterStatus* reply) {
  return OnLoop(context, "GetStatus", [this, request, reply] {
    if (request->nodes_per_state() < 0) return Status::InvalidArgument("nodes_per_state must not be negative");
    *reply = core_->GetStatus(request->nodes_per_state());
    return Status::Ok();
  });
}

grpc::ServerUnaryReactor* HeadServiceImpl::ListNodes(grpc::CallbackServerContext* context,
                                                     const ListNodesRequest* request, ListNodesReply* reply) {
  return OnLoop(context, "ListNodes", [this, request, reply] {
    if (request->page_size() < 0) return Status::InvalidArgument("page_size must not be negative");
    *reply = core_->ListNodes(*request);
    return Status::Ok();
  });
}

grpc::ServerUnaryReactor* HeadServiceImpl::DrainNode(grpc::CallbackServerContext* context,
                                                     const NodeRequest* request, NodeReply* reply) {
  return OnLoop(context, "DrainNode", [this, request, reply](const Principal& caller) {
    RETURN_IF_ERROR(RequireAdmin(caller, "drain"));
    auto node = core_->DrainNode(request->node());
    if (node.ok()) *reply->mutable_node() = *node;
    return node.status();
  });
}

grpc::ServerUnaryReactor* HeadServiceImpl::StopNode(grpc::CallbackServerContext* context,
                                                    const NodeRequest* request, NodeReply* reply) {
  return OnLoop(context, "StopNode", [this, request, reply](const Principal& caller) {
    RETURN_IF_ERROR(RequireAdmin(caller, "stop-node"));
    auto node = core_->StopNode(request->node());
    if (node.ok()) *reply->mutable_node() = *node;
    return node.status();
  });
}

grpc::ServerUnaryReactor* HeadServiceImpl::NodeResetGpu(grpc::CallbackServerContext* context,
                                                        const ResetGpuRequest* request, ResetGpuReply* reply) {
  return OnLoop(context, "NodeResetGpu", [this, request, reply](const Principal& caller) {
    RETURN_IF_ERROR(RequireAdmin(caller, "node --reset-gpu"));
    auto reset = core_->ResetGpu(*request);
    if (reset.ok()) *reply = std::move(*reset);
    return reset.status();
  });
}

namespace {
// Copies a Result's value into the reply and passes its Status on.
template <typename T>
Status Fill(Result<T> result, T* reply) {
  if (result.ok()) *reply = std::move(*result);
  return result.status();
}

// Fill with a job's or a sweep's record, as `caller` may see it
// (shown_records.h: passthrough values hidden; shown_to.h: the store ids
// of others' jobs hidden).
template <typename T>
Status FillShown(const Principal& caller, Result<T> result, T* reply) {
  Status status = Fill(std::move(result), reply);
  HidePassthroughValues(reply);
  HideOthersData(caller, reply);
  return status;
}
}  // namespace

grpc::ServerUnaryReactor* HeadServiceImpl::SubmitJob(grpc::CallbackServerContext* context,
                                                     const SubmitJobRequest* request, SubmitJobReply* reply) {
  return OnLoop(context, "SubmitJob", [this, request, reply](const Principal& caller) {
    RETURN_IF_ERROR(RequireUser(caller));
    return SubmitOne(*request, caller.user, reply);
  });
}

namespace {

// The head's sweeps make their trials; a submitter that names a sweep would
// be taken for one (kept from retention, for one thing).
Status NotATrial(const JobSpec& spec) {
  if (spec.sweep_id().empty()) return Status::Ok();
  return Status::InvalidArgument("key 'sweep_id': set by the head for a sweep's trials, not by a submitter");
}

}  // namespace

Status HeadServiceImpl::SubmitOne(const SubmitJobRequest& request, const std::string& owner, SubmitJobReply* reply) {
  RETURN_IF_ERROR(NotATrial(request.spec()));
  auto id = request.spec().has_tune() ? core_->sweeps().Submit(request, owner) : core_->jobs().Submit(request, owner);
  if (!id.ok()) return id.status();
  reply->set_job_id(*id);
  if (request.spec().has_array()) reply->set_array_count(request.spec().array().count());
  return Status::Ok();
}

grpc::ServerUnaryReactor* HeadServiceImpl::SubmitJobs(grpc::CallbackServerContext* context,
                                                      const SubmitJobsRequest* request, SubmitJobsReply* reply) {
  return OnLoop(context, "SubmitJobs", [this, request, reply](const Principal& caller) {
    RETURN_IF_ERROR(RequireUser(caller));
    // Every spec is checked before any job is made, so a bad one makes none.
    for (int i = 0; i < request->jobs_size(); ++i) {
      Status valid = core_->jobs().CheckSpec(request->jobs(i).spec());
      if (valid.ok()) valid = NotATrial(request->jobs(i).spec());
      if (!valid.ok()) return valid.WithContext(fmt::format("job {} of {}", i + 1, request->jobs_size()));
    }
    // And their number, all of them at once: a call past the limits makes
    // none, rather than the first few thousand. A sweep's trials are
    // counted as it makes them.
    int64_t jobs = 0;
    for (const SubmitJobRequest& one : request->jobs()) {
      if (!one.spec().has_tune()) jobs += one.spec().has_array() ? one.spec().array().count() : 1;
    }
    RETURN_IF_ERROR(core_->jobs().AdmitJobs(jobs, caller.user).WithContext(fmt::format("{} specs in one call", request->jobs_size())));
    for (int i = 0; i < request->jobs_size(); ++i) {
      Status made = SubmitOne(request->jobs(i), caller.user, reply->add_jobs());
      if (!made.ok()) {
        return made.WithContext(fmt::format("job {} of {} (the {} before it were submitted)", i + 1,
                                            request->jobs_size(), i));
      }
    }
    return Status::Ok();
  });
}

grpc::ServerUnaryReactor* HeadServiceImpl::ListJobs(grpc::CallbackServerContext* context,
                                                    const ListJobsRequest* request, ListJobsReply* reply) {
  return OnLoop(context, "ListJobs", [this, request, reply](const Principal& caller) {
    RETURN_IF_ERROR(RequireUser(caller));
    return FillShown(caller, core_->jobs().ListPage(*request), reply);
  });
}

grpc::ServerUnaryReactor* HeadServiceImpl::GetJob(grpc::CallbackServerContext* context, const JobRequest* request,
                                                  JobInfo* reply) {
  return OnLoop(context, "GetJob", [this, request, reply](const Principal& caller) {
    RETURN_IF_ERROR(RequireUser(caller));
    return FillShown(caller, core_->jobs().Get(request->job_id()), reply);
  });
}

grpc::ServerUnaryReactor* HeadServiceImpl::StopJob(grpc::CallbackServerContext* context, const JobRequest* request,
                                                   JobInfo* reply) {
  return OnLoop(context, "StopJob", [this, request, reply](const Principal& caller) {
    RETURN_IF_ERROR(CheckOwnership(*core_, caller, request->job_id(), request->whole_array(), OwnedAction::kStop));
    if (SweepManager::IsSweepId(request->job_id())) {
      auto sweep = core_->sweeps().Stop(request->job_id());
      return sweep.ok() ? AnswerAsJob(*sweep, sweep->reason(), reply) : sweep.status();
    }
    return FillShown(caller, request->whole_array() ? core_->jobs().StopArray(request->job_id())
                                            : core_->jobs().Stop(request->job_id()),
                     reply);
  });
}

grpc::ServerUnaryReactor* HeadServiceImpl::GetLogs(grpc::CallbackServerContext* context, const LogsRequest* request,
                                                   LogsReply* reply) {
  // Here, not on the loop: a log being read back is waited for on this thread.
  Status ready = logs_ready_ ? logs_ready_(request->job_id()) : Status::Ok();
  return OnLoop(context, "GetLogs", [this, request, reply, ready](const Principal& caller) {
    RETURN_IF_ERROR(CheckOwnership(*core_, caller, request->job_id(), false, OwnedAction::kReadLogs));
    RETURN_IF_ERROR(ready);
    return Fill(core_->jobs().Logs(*request), reply);
  });
}

grpc::ServerUnaryReactor* HeadServiceImpl::GetMetrics(grpc::CallbackServerContext* context,
                                                      const JobRequest* request, MetricsReply* reply) {
  return OnLoop(context, "GetMetrics", [this, request, reply](const Principal& caller) {
    // What a job's ranks report (loss, accuracy) is its results, the
    // owner's as its logs and outputs are.
    RETURN_IF_ERROR(CheckOwnership(*core_, caller, request->job_id(), false, OwnedAction::kReadMetrics));
    return Fill(core_->jobs().Metrics(*request), reply);
  });
}

grpc::ServerUnaryReactor* HeadServiceImpl::ListRunningJobs(grpc::CallbackServerContext* context,
                                                           const RunningJobsRequest* request,
                                                           RunningJobsReply* reply) {
  return OnLoop(context, "ListRunningJobs", [this, request, reply](const Principal& caller) {
    RETURN_IF_ERROR(RequireUser(caller));
    *reply = core_->jobs().RunningJobs(*request);
    // Each job as GetJob shows it to this caller.
    for (RunningJobRecord& running : *reply->mutable_jobs()) {
      HidePassthroughValues(running.mutable_job());
      HideOthersData(caller, &running);
    }
    return Status::Ok();
  });
}

grpc::ServerUnaryReactor* HeadServiceImpl::DeleteJob(grpc::CallbackServerContext* context, const JobRequest* request,
                                                     JobInfo* reply) {
  return OnLoop(context, "DeleteJob", [this, request, reply](const Principal& caller) {
    RETURN_IF_ERROR(CheckOwnership(*core_, caller, request->job_id(), request->whole_array(), OwnedAction::kDelete));
    if (SweepManager::IsSweepId(request->job_id())) {
      auto sweep = core_->sweeps().Delete(request->job_id());
      if (!sweep.ok()) return sweep.status();
      return AnswerAsJob(*sweep, fmt::format("deleted with its {} trials' jobs", sweep->trials_size()), reply);
    }
    // A sweep's trial goes with its sweep: deleted alone, it would leave the
    // sweep naming a job that is gone.
    auto shown = core_->jobs().Get(request->job_id());
    if (shown.ok() && !shown->spec().sweep_id().empty() && core_->sweeps().Get(shown->spec().sweep_id()).ok()) {
      return Status::FailedPrecondition(fmt::format("job {} is trial {} of sweep {}: delete the sweep (`clusterctl "
                                                    "delete {}`)", request->job_id(), shown->spec().trial_index(),
                                                    shown->spec().sweep_id(), shown->spec().sweep_id()));
    }
    return FillShown(caller, request->whole_array() ? core_->jobs().DeleteArray(request->job_id())
                                            : core_->jobs().Delete(request->job_id()),
                     reply);
  });
}

grpc::ServerUnaryReactor* HeadServiceImpl::GetSweep(grpc::CallbackServerContext* context, const SweepRequest* request,
                                                    SweepInfo* reply) {
  return OnLoop(context, "GetSweep", [this, request, reply](const Principal& caller) {
    RETURN_IF_ERROR(RequireUser(caller));
    return FillShown(caller, core_->sweeps().Get(request->sweep_id()), reply);
  });
}

grpc::ServerUnaryReactor* HeadServiceImpl::ListSweeps(grpc::CallbackServerContext* context,
                                                      const ListSweepsRequest* request, ListSweepsReply* reply) {
  return OnLoop(context, "ListSweeps", [this, request, reply](const Principal& caller) {
    RETURN_IF_ERROR(RequireUser(caller));
    return FillShown(caller, core_->sweeps().ListPage(*request), reply);
  });
}

grpc::ServerUnaryReactor* HeadServiceImpl::QueueList(grpc::CallbackServerContext* context,
                                                     const QueueListRequest* request, QueueListReply* reply) {
  return OnLoop(context, "QueueList", [this, request, reply] {
    *reply = core_->ListQueue(request->limit());
    return Status::Ok();
  });
}

grpc::ServerUnaryReactor* HeadServiceImpl::QueueSetQuota(grpc::CallbackServerContext* context,
                                                         const SetQuotaRequest* request, QuotaInfo* reply) {
  return OnLoop(context, "QueueSetQuota",
                [this, request, reply](const Principal& caller) {
                  RETURN_IF_ERROR(RequireAdmin(caller, "quota set"));
                  return Fill(core_->SetQuota(*request), reply);
                });
}

grpc::ServerUnaryReactor* HeadServiceImpl::QueueListQuotas(grpc::CallbackServerContext* context,
                                                           const ListQuotasRequest* request, ListQuotasReply* reply) {
  return OnLoop(context, "QueueListQuotas", [this, reply] {
    *reply = core_->ListQuotas();
    return Status::Ok();
  });
}

grpc::ServerUnaryReactor* HeadServiceImpl::IdentityWhoAmI(grpc::CallbackServerContext* context,
                                                          const WhoAmIRequest* /*request*/, WhoAmIReply* reply) {
  return OnLoop(context, "IdentityWhoAmI", [reply](const Principal& caller) {
    RETURN_IF_ERROR(RequireUser(caller));
    reply->set_user(caller.user);
    reply->set_admin(caller.IsAdmin());
    for (const std::string& group : caller.groups) reply->add_groups(group);
    return Status::Ok();
  });
}

grpc::ServerUnaryReactor* HeadServiceImpl::IdentityAddUser(grpc::CallbackServerContext* context,
                                                           const AddUserRequest* request, AddUserReply* reply) {
  return OnLoop(context, "IdentityAddUser", [this, request, reply](const Principal& caller) {
    RETURN_IF_ERROR(RequireAdmin(caller, "user add"));
    return Fill(core_->users().AddUser(*request), reply);
  });
}

grpc::ServerUnaryReactor* HeadServiceImpl::IdentityListUsers(grpc::CallbackServerContext* context,
                                                             const ListUsersRequest* /*request*/,
                                                             ListUsersReply* reply) {
  return OnLoop(context, "IdentityListUsers", [this, reply](const Principal& caller) {
    RETURN_IF_ERROR(RequireAdmin(caller, "user list"));
    for (UserInfo& user : core_->users().ListUsers()) *reply->add_users() = std::move(user);
    return Status::Ok();
  });
}

grpc::ServerUnaryReactor* HeadServiceImpl::IdentityRemoveUser(grpc::CallbackServerContext* context,
                                                              const RemoveUserRequest* request, UserInfo* reply) {
  return OnLoop(context, "IdentityRemoveUser", [this, request, reply](const Principal& caller) {
    RETURN_IF_ERROR(RequireAdmin(caller, "user remove"));
    if (request->name() == caller.user) {
      return Status::FailedPrecondition(fmt::format("{} may not remove themselves: another admin may", caller.user));
    }
    return Fill(core_->users().RemoveUser(request->name()), reply);
  });
}

grpc::ServerUnaryReactor* HeadServiceImpl::IdentitySetUser(grpc::CallbackServerContext* context,
                                                           const SetUserRequest* request, UserInfo* reply) {
  return OnLoop(context, "IdentitySetUser", [this, request, reply](const Principal& caller) {
    RETURN_IF_ERROR(RequireAdmin(caller, "user set"));
    return Fill(core_->users().SetUser(*request), reply);
  });
}

grpc::ServerUnaryReactor* HeadServiceImpl::IdentityCreateNodeToken(grpc::CallbackServerContext* context,
                                                                   const CreateNodeTokenRequest* request,
                                                                   CreateNodeTokenReply* reply) {
  return OnLoop(context, "IdentityCreateNodeToken", [this, request, reply](const Principal& caller) {
    RETURN_IF_ERROR(RequireAdmin(caller, "token create"));
    return Fill(core_->users().CreateNodeToken(request->label()), reply);
  });
}

grpc::ServerUnaryReactor* HeadServiceImpl::IdentityListNodeTokens(grpc::CallbackServerContext* context,
                                                                  const ListNodeTokensRequest* /*request*/,
                                                                  ListNodeTokensReply* reply) {
  return OnLoop(context, "IdentityListNodeTokens", [this, reply](const Principal& caller) {
    RETURN_IF_ERROR(RequireAdmin(caller, "token list"));
    for (NodeTokenInfo& token : core_->users().ListNodeTokens()) *reply->add_tokens() = std::move(token);
    return Status::Ok();
  });
}

grpc::ServerUnaryReactor* HeadServiceImpl::IdentityRevokeNodeToken(grpc::CallbackServerContext* context,
                                                                   const RevokeNodeTokenRequest* request,
                                                                   NodeTokenInfo* reply) {
  return OnLoop(context, "IdentityRevokeNodeToken", [this, request, reply](const Principal& caller) {
    RETURN_IF_ERROR(RequireAdmin(caller, "token revoke"));
    return Fill(core_->users().RevokeNodeToken(request->id()), reply);
  });
}

}  // namespace clusterd
