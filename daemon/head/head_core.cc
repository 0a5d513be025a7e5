#include "daemon/head/head_core.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "common/logging.h"
#include "common/resources.h"

namespace clusterd {

HeadCore::HeadCore(const Clock* clock, const Config& config, JobStore* store, LogStore* logs, BlobStore* blobs,
                   JobStore* sweep_store, JobStore* node_store, JobStore* user_store)
    : clock_(clock),
      config_(config),
      users_(clock, user_store),
      nodes_(clock, static_cast<Micros>(config.node_timeout_ms) * 1000),
      usage_history_(clock, UsageHistorySettings::FromConfig(config).value_or(UsageHistorySettings{})),
      jobs_(clock, config, &nodes_, store, logs,
            [this](const std::string& node_id, const HeadMessage& message) {
              if (gated_sends_) return gated_sends_->Send(node_id, message);
              return SendNow(node_id, message);
            },
            blobs),
      sweeps_(clock, &jobs_, &nodes_, sweep_store, static_cast<Micros>(config.trial_finish_grace_ms) * 1000),
      deliveries_([this](std::function<void(Status)> done) { jobs_.WhenDurable(std::move(done)); },
                  [this] { return jobs_.JournalHealth().ok(); }),
      links_(&nodes_, config.heartbeat_ms, [this](AgentConnection* connection) { deliveries_.Forget(connection); }) {
  // Preemption outranks by the queue policy's priorities and takes
  // borrowing jobs first; only an admin may exempt a high-priority job.
  jobs_.set_preemption_policy({[](const JobSpec& spec) -> int64_t { return spec.priority(); },
                               [this](const TrackedJob& job) { return jobs_.IsBorrowing(job); },
                               [this](const std::string& user) { return users_.IsAdmin(user); }});
  // The queue policy holds each user to the maximum priority an admin set
  // (admins have none), and a job to its owner's groups' quotas.
  jobs_.queue_policy().SetMaxPriority([this](const std::string& user) -> std::optional<int> {
    if (users_.IsAdmin(user)) return std::nullopt;
    return users_.MaxPriorityOf(user);
  });
  jobs_.queue_policy().SetGroups([this](const std::string& user) { return users_.GroupsOf(user); });
  if (node_store == nullptr) return;
  node_journal_ = std::make_unique<NodeJournal>(clock, node_store, [this] { return nodes_.Records(); });
}

bool HeadCore::SendNow(const std::string& node_id, const HeadMessage& message) {
  // Granted before it goes: the node fetches as soon as it reads it.
  if (message.has_launch()) node_blobs_.Launched(node_id, message.launch().job_id(), message.launch().attempt());
  return links_.SendToNode(node_id, message);
}

void HeadCore::GateSendsOnJournal() {
  gated_sends_ = std::make_unique<JournalGatedSends>(
      [this](std::function<void(Status)> done) { jobs_.WhenDurable(std::move(done)); },
      [this] { return jobs_.JournalOk(); },
      [this](const std::string& node_id) { return links_.Connected(node_id); },
      [this](const std::string& node_id, const HeadMessage& message) { return SendNow(node_id, message); });
}

Status HeadCore::Restore() {
  // Users first: a call may come as soon as the ports open.
  RETURN_IF_ERROR(users_.Restore().WithContext("the users' journal"));
  if (node_journal_) {
    // Nodes first: an agent that registers again finds its own entry, and
    // adoption matches its ranks by the node's name.
    auto records = node_journal_->Load();
    if (records.ok()) {
      nodes_.Restore(*records);
    } else {
      // Nodes register again by themselves: a journal of them that cannot
      // be read costs their ids and the dead's listing, not the head.
      LOG_WARN("the nodes' journal: {}; starting without the nodes it held, and writing it anew",
               records.status().message());
      node_journal_->Rewrite();
    }
    nodes_.set_on_node_changed([this](const NodeRecord& record) { node_journal_->Record(record); });
  }
  // Quotas before jobs: a restored running job is charged to them.
  RETURN_IF_ERROR(quota_book_.Load().WithContext("the quotas' journal"));
  RETURN_IF_ERROR(jobs_.Restore());
  return sweeps_.Restore().WithContext("the sweeps' journal");
}

Result<QuotaInfo> HeadCore::SetQuota(const SetQuotaRequest& request) {
  auto set = quota_book_.Apply(request);
  if (set.ok()) jobs_.QuotasChanged();
  return set;
}

void HeadCore::AfterNodeDeath(const std::string& node_id) {
  const NodeInfo* node = nodes_.Find(node_id);
  if (node && node->state() == DEAD) jobs_.OnNodeDead(*node);
}

void HeadCore::OnAgentMessage(const std::shared_ptr<AgentConnection>& connection,
                              const AgentMessage& message) {
  if (message.has_register_()) {
    if (const NodeInfo* info = links_.Register(connection, message.register_())) {
      node_blobs_.NodeRegistered(info->node_id(), connection->NodeTokenId());
      jobs_.OnNodeRegistered(*info, message.register_());
    }
    return;
  }
  std::optional<std::string> heard_from = links_.Heard(connection, message);
  if (!heard_from) return;
  const std::string& node_id = *heard_from;
  switch (message.kind_case()) {
    case AgentMessage::kPortReserved: jobs_.OnPortReserved(node_id, message.port_reserved()); break;
    case AgentMessage::kRankStarted: jobs_.OnRankStarted(node_id, message.rank_started()); break;
    case AgentMessage::kRankExited:
      node_blobs_.RanksEnded(node_id, message.rank_exited().job_id(), message.rank_exited().attempt());
      jobs_.OnRankExited(node_id, message.rank_exited());
      break;
    case AgentMessage::kLog: jobs_.OnLog(node_id, message.log()); break;
    case AgentMessage::kMetrics: jobs_.OnMetrics(node_id, message.metrics()); break;
    case AgentMessage::kCheckpointStored: jobs_.OnCheckpointStored(node_id, message.checkpoint_stored()); break;
    case AgentMessage::kResultsPending: jobs_.OnResultsPending(node_id, message.results_pending()); break;
    case AgentMessage::kRankActivity: jobs_.OnRankActivity(node_id, message.rank_activity()); break;
    case AgentMessage::kRanksDiagnosed: jobs_.OnRanksDiagnosed(node_id, message.ranks_diagnosed()); break;
    case AgentMessage::kDraining: {
      // Its agent is stopping: nothing more goes there, and when its stream
      // ends that is why.
      std::string reason = "its node agent is stopping" +
                           (message.draining().reason().empty() ? "" : ": " + message.draining().reason());
      nodes_.Drain(node_id, reason);
      links_.SetStopReason(connection.get(), reason);
      break;
    }
    default: break;
  }
  // A report or an exit may decide a trial; a freed slot may admit one.
  if (message.has_metrics() || message.has_rank_exited()) sweeps_.Poll();
  if (message.delivery_seq() > 0) deliveries_.Taken(connection, message.delivery_seq());
}

void HeadCore::OnAgentDisconnected(AgentConnection* connection, const std::string& cause) {
  if (std::optional<std::string> dead = links_.Disconnected(connection, cause)) AfterNodeDeath(*dead);
}

Micros HeadCore::Tick() {
  links_.CollectHeartbeats();
  // A head stopped for seconds (SIGSTOP) must not take its own silence for
  // its nodes' at its first tick back and fail every running job. Ticks come
  // at least every heartbeat period. One that late again, with no node heard
  // meanwhile (not even by the threads that take datagrams off the loop),
  // means the head was not running at all: the heartbeats sent meanwhile
  // still wait in its sockets.
  const Micros woke = clock_->NowMicros();
  const Micros period = static_cast<Micros>(config_.heartbeat_ms) * 1000;
  const Micros late = next_tick_ > 0 ? woke - next_tick_ : 0;
  if (late > period && !nodes_.HeardBetween(next_tick_, woke - period)) {
    LOG_WARN("the head did not run for {} ms (stopped, paused or starved): its nodes get that long again before "
             "their silence counts", late / 1000);
    nodes_.ForgiveSilence(late);
  }
  deliveries_.AcknowledgeDue();
  for (const std::string& node_id : stopping_ ? std::vector<std::string>() : nodes_.CheckTimeouts()) {
    links_.CloseNode(node_id, Status::Unavailable(fmt::format(
        "the head declared this node dead after {} ms of silence", config_.node_timeout_ms)));
    AfterNodeDeath(node_id);
  }
  Micros now = clock_->NowMicros();
  Micros at_latest = now + static_cast<Micros>(config_.heartbeat_ms) * 1000;
  Micros next = at_latest;
  const Micros jobs_due = jobs_.Tick();
  // After the journal's own retry: what a failing journal held goes once it heals.
  if (gated_sends_) gated_sends_->Release();
  sweeps_.Poll();
  const Micros usage_due = usage_history_.MaybeSample([this] { return nodes_.Nodes(); });
  for (Micros due : {nodes_.NextDeadline(), jobs_due, usage_due}) {
    if (due != 0 && due < next) next = due;
  }
  next_tick_ = next;
  return next;
}

ClusterStatus HeadCore::NodeStatus(int per_state) const {
  ClusterStatus status;
  std::map<NodeState, int> listed;
  // Summed in plain maps and written once: a protobuf map entry per node
  // and resource cost 10,000 nodes tens of milliseconds.
  std::map<std::string, double> total, used;
  for (const NodeInfo* node : nodes_.Nodes()) {
    if (per_state == 0 || listed[node->state()]++ < per_state) *status.add_nodes() = *node;
    if (node->state() == DEAD) continue;
    for (const auto& [name, amount] : node->total().amounts()) {
      total[name] += amount;
      used[name] += std::max(0.0, amount - Amount(node->available(), name));
    }
  }
  for (const auto& [name, amount] : total) (*status.mutable_total()->mutable_amounts())[name] = amount;
  for (const auto& [name, amount] : used) (*status.mutable_used()->mutable_amounts())[name] = amount;
  *status.mutable_node_counts() = nodes_.Counts();
  return status;
}

ClusterStatus HeadCore::GetStatus(int nodes_per_state) {
  ClusterStatus status;
  if (nodes_per_state > 0) {
    // A summary for `clusterctl status`: with 10,000 nodes, building it
    // costs the loop milliseconds, so it is kept while nothing changed.
    const Micros now = clock_->NowMicros();
    const Micros max_age = static_cast<Micros>(config_.heartbeat_ms) * 1000;
    if (snapshot_.per_state != nodes_per_state || snapshot_.generation != nodes_.generation()) {
      snapshot_ = {nodes_.generation(), now, nodes_per_state, NodeStatus(nodes_per_state)};
    } else if (now - snapshot_.built_at >= max_age) {
      // Only heartbeats came since: the same nodes are listed (a state
      // change moves the generation), with their newest usage and times.
      for (NodeInfo& listed : *snapshot_.nodes.mutable_nodes()) {
        if (const NodeInfo* current = nodes_.Find(listed.node_id())) listed = *current;
      }
      snapshot_.built_at = now;
    }
    status = snapshot_.nodes;
  } else {
    status = NodeStatus(0);
  }
  status.set_head_address(head_address_);
  for (auto& demand : jobs_.Pending()) *status.add_pending() = std::move(demand);
  *status.mutable_journal() = jobs_.JournalHealth();
  return status;
}

ListNodesReply HeadCore::ListNodes(const ListNodesRequest& request) const {
  constexpr int kDefaultPage = 1000;
  const size_t size = static_cast<size_t>(request.page_size() > 0 ? request.page_size() : kDefaultPage);
  ListNodesReply reply;
  bool more = false;
  for (const NodeInfo* node : nodes_.Page(request.page_token(), size, &more)) *reply.add_nodes() = *node;
  if (more) reply.set_next_page_token(reply.nodes(reply.nodes_size() - 1).name());
  *reply.mutable_counts() = nodes_.Counts();
  return reply;
}

Result<NodeInfo> HeadCore::DrainNode(const std::string& id_or_name) {
  auto drained = nodes_.Drain(id_or_name);
  if (!drained.ok()) return drained.status();
  return **drained;
}

Result<ResetGpuReply> HeadCore::ResetGpu(const ResetGpuRequest& request) {
  ResetGpuReply reply;
  auto node = nodes_.ResetGpu(request.node(), request.gpu(), reply.mutable_fault());
  if (!node.ok()) return node.status();
  *reply.mutable_node() = **node;
  // Jobs that turned INFEASIBLE while the GPU was out may fit again, and
  // those waiting for it may start now.
  jobs_.OnNodeRestored(**node);
  return reply;
}

Result<NodeInfo> HeadCore::StopNode(const std::string& id_or_name) {
  const NodeInfo* info = nodes_.Find(id_or_name);
  if (!info) return Status::NotFound(fmt::format("no node named or with id '{}'", id_or_name));
  if (info->is_head()) {
    return Status::FailedPrecondition(fmt::format(
        "node {} is the head's own node agent; stop the head with `clusterd stop` on its machine",
        info->name()));
  }
  if (info->state() == DEAD) {
    return Status::FailedPrecondition(fmt::format("node {} is already DEAD", info->name()));
  }
  HeadMessage stop;
  stop.mutable_stop()->set_reason("clusterctl stop-node");
  if (!links_.AskToStop(info->node_id(), "stopped by clusterctl stop-node", stop)) {
    return Status::Unavailable(fmt::format("node {} has no open stream", info->name()));
  }
  return *info;
}

}  // namespace clusterd
