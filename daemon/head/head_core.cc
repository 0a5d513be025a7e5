#include "daemon/head/head_core.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "common/logging.h"
#include "common/net/net_address.h"
#include "common/resources.h"
#include "common/text.h"

namespace clusterd {

HeadCore::HeadCore(const Clock* clock, const Config& config, JobStore* store, LogStore* logs, BlobStore* blobs,
                   JobStore* sweep_store, JobStore* node_store)
    : clock_(clock),
      config_(config),
      nodes_(clock, static_cast<Micros>(config.node_timeout_ms) * 1000),
      jobs_(clock, config, &nodes_, store, logs,
            [this](const std::string& node_id, const HeadMessage& message) { return SendToNode(node_id, message); },
            blobs),
      sweeps_(clock, &jobs_, &nodes_, sweep_store, static_cast<Micros>(config.trial_finish_grace_ms) * 1000) {
  if (node_store == nullptr) return;
  node_journal_ = std::make_unique<NodeJournal>(clock, node_store, [this] { return nodes_.Records(); });
}

Status HeadCore::Restore() {
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
  RETURN_IF_ERROR(jobs_.Restore());
  return sweeps_.Restore().WithContext("the sweeps' journal");
}

bool HeadCore::SendToNode(const std::string& node_id, const HeadMessage& message) {
  auto current = link_of_node_.find(node_id);
  if (current == link_of_node_.end()) return false;
  auto link = links_.find(current->second);
  if (link == links_.end()) return false;
  link->second.connection->Send(message);
  return true;
}

void HeadCore::AfterNodeDeath(const std::string& node_id) {
  const NodeInfo* node = nodes_.Find(node_id);
  if (node && node->state() == DEAD) jobs_.OnNodeDead(*node);
}

void HeadCore::OnAgentMessage(const std::shared_ptr<AgentConnection>& connection,
                              const AgentMessage& message) {
  auto [it, inserted] = links_.try_emplace(connection.get());
  Link& link = it->second;
  if (inserted) link.connection = connection;

  if (message.has_register_()) {
    HandleRegister(link, message.register_());
    return;
  }
  if (link.node_id.empty()) {
    connection->Close(Status::FailedPrecondition("the first message on a stream must register the node"));
    links_.erase(it);
    return;
  }
  // Any message proves the node is alive, not only heartbeats.
  NodeUsage usage;
  if (message.has_heartbeat()) usage = message.heartbeat().usage();
  else if (const NodeInfo* info = nodes_.Find(link.node_id)) usage = info->usage();
  Status st = nodes_.Heartbeat(link.node_id, link.incarnation, usage);
  if (!st.ok()) {
    // The table already counts this incarnation as gone (declared dead by
    // timeout): end the stream so the agent registers afresh.
    connection->Close(Status::Unavailable(st.message()));
    return;
  }
  const std::string& node_id = link.node_id;
  switch (message.kind_case()) {
    case AgentMessage::kPortReserved: jobs_.OnPortReserved(node_id, message.port_reserved()); break;
    case AgentMessage::kRankStarted: jobs_.OnRankStarted(node_id, message.rank_started()); break;
    case AgentMessage::kRankExited: jobs_.OnRankExited(node_id, message.rank_exited()); break;
    case AgentMessage::kLog: jobs_.OnLog(node_id, message.log()); break;
    case AgentMessage::kMetrics: jobs_.OnMetrics(node_id, message.metrics()); break;
    case AgentMessage::kCheckpointStored: jobs_.OnCheckpointStored(node_id, message.checkpoint_stored()); break;
    case AgentMessage::kResultsPending: jobs_.OnResultsPending(node_id, message.results_pending()); break;
    case AgentMessage::kDraining: {
      // Its agent is stopping: nothing more goes there, and when its stream
      // ends that is why.
      std::string reason = "its node agent is stopping" +
                           (message.draining().reason().empty() ? "" : ": " + message.draining().reason());
      nodes_.Drain(node_id, reason);
      if (link.stop_reason.empty()) link.stop_reason = reason;
      break;
    }
    default: break;
  }
  // A report or an exit may decide a trial; a freed slot may admit one.
  if (message.has_metrics() || message.has_rank_exited()) sweeps_.Poll();
  if (message.delivery_seq() > 0) {
    link.delivery_seq_seen = std::max(link.delivery_seq_seen, message.delivery_seq());
    if (link.delivery_seq_seen - link.delivery_seq_asked >= kEagerDeliveries) AcknowledgeWhenDurable(link);
    if (!link.delivery_due) {
      link.delivery_due = true;
      delivery_due_.push_back(connection.get());
    }
  }
}

void HeadCore::AcknowledgeDeliveries() {
  std::vector<AgentConnection*> due;
  due.swap(delivery_due_);
  for (AgentConnection* connection : due) {
    auto it = links_.find(connection);
    if (it == links_.end()) continue;
    Link& link = it->second;
    link.delivery_due = false;
    if (link.delivery_seq_seen > link.delivery_seq_asked && !AcknowledgeWhenDurable(link)) {
      link.delivery_due = true;  // the next tick asks again
      delivery_due_.push_back(connection);
    }
  }
}

bool HeadCore::AcknowledgeWhenDurable(Link& link) {
  if (link.delivery_ack_waiting) return false;
  link.delivery_ack_waiting = true;
  std::weak_ptr<AgentConnection> connection = link.connection;
  int64_t up_to = link.delivery_seq_asked = link.delivery_seq_seen;
  jobs_.WhenDurable([this, connection, up_to](Status status) { OnDeliveriesDurable(connection, up_to, status); });
  return true;
}

void HeadCore::OnDeliveriesDurable(const std::weak_ptr<AgentConnection>& weak, int64_t up_to, const Status& status) {
  std::shared_ptr<AgentConnection> connection = weak.lock();
  if (!connection) return;
  auto it = links_.find(connection.get());
  if (it == links_.end() || it->second.connection != connection) return;
  Link& link = it->second;
  link.delivery_ack_waiting = false;
  // A journal that cannot be written keeps nothing: the agent keeps its
  // messages and sends them again when it next registers.
  if (status.ok() && jobs_.JournalHealth().ok()) {
    HeadMessage delivered;
    delivered.mutable_delivered()->set_up_to_seq(up_to);
    connection->Send(delivered);
  }
}

void HeadCore::HandleRegister(Link& link, const RegisterNode& request) {
  if (!link.node_id.empty()) {
    link.connection->Close(Status::FailedPrecondition("node registered twice on one stream"));
    return;
  }
  auto registered = nodes_.Register(request, OriginOf(link, request));
  if (!registered.ok()) {
    // Quoted and cut short: the name may be what the refusal is about.
    LOG_WARN("refused registration of {} from {}: {}", JsonQuote(request.name().substr(0, 64)),
             link.connection->Peer(), registered.status().message().substr(0, 256));
    link.connection->Close(registered.status());
    return;
  }
  const NodeInfo& info = **registered;
  // The same node may come back on a new stream before its old one is seen
  // to break: the new one wins.
  auto previous = link_of_node_.find(info.node_id());
  if (previous != link_of_node_.end() && previous->second != link.connection.get()) {
    auto old = links_.find(previous->second);
    if (old != links_.end()) {
      old->second.connection->Close(Status::Unavailable("replaced by a newer stream of the same node"));
      links_.erase(old);
    }
  }
  link.node_id = info.node_id();
  link.incarnation = info.incarnation();
  link_of_node_[info.node_id()] = link.connection.get();

  HeadMessage reply;
  auto* ack = reply.mutable_registered();
  ack->set_node_id(info.node_id());
  ack->set_name(info.name());
  ack->set_incarnation(info.incarnation());
  ack->set_heartbeat_ms(config_.heartbeat_ms);
  link.connection->OfferDatagramHeartbeats(ack);
  link.connection->Send(reply);
  jobs_.OnNodeRegistered(info, request);
}

NodeTable::Origin HeadCore::OriginOf(const Link& link, const RegisterNode& request) const {
  NodeTable::Origin origin;
  origin.observed_address = PeerIp(link.connection->Peer());
  const std::string& claimed = request.address();
  const std::string& seen = origin.observed_address;
  // Without a peer (tests), the claim is all there is.
  const std::string& from = seen.empty() ? claimed : seen;
  bool on_head_machine = IsLoopbackAddress(from) || local_addresses_.count(from) > 0;
  origin.machine = on_head_machine ? "" : from;
  bool claim_fits = claimed == seen || (on_head_machine && (IsLoopbackAddress(claimed) || local_addresses_.count(claimed)));
  if (!seen.empty() && !claim_fits) {
    LOG_WARN("node '{}' registers with address {}, but its stream comes from {}: ranks on other nodes will dial {}; "
             "if that is not reachable, restart its agent with the right --node-ip-address",
             request.name(), claimed, seen, claimed);
  }
  return origin;
}

void HeadCore::OnAgentDisconnected(AgentConnection* connection, const std::string& cause) {
  auto it = links_.find(connection);
  if (it == links_.end()) return;
  Link link = it->second;
  links_.erase(it);
  if (link.node_id.empty() || stopping_) return;
  auto current = link_of_node_.find(link.node_id);
  if (current != link_of_node_.end() && current->second == connection) link_of_node_.erase(current);
  nodes_.MarkDisconnected(link.node_id, link.incarnation,
                          link.stop_reason.empty() ? cause : link.stop_reason);
  AfterNodeDeath(link.node_id);
}

void HeadCore::CollectHeartbeats() {
  for (auto& [connection, link] : links_) {
    if (link.node_id.empty()) continue;
    std::optional<AgentConnection::Heard> heard = link.connection->TakeHeartbeat();
    if (!heard) continue;
    Status st = nodes_.Heartbeat(link.node_id, link.incarnation, heard->usage, heard->at);
    // As for any message: an incarnation the table counts as gone ends its
    // stream, so that the agent registers afresh.
    if (!st.ok()) link.connection->Close(Status::Unavailable(st.message()));
  }
}

Micros HeadCore::Tick() {
  CollectHeartbeats();
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
  AcknowledgeDeliveries();
  for (const std::string& node_id : stopping_ ? std::vector<std::string>() : nodes_.CheckTimeouts()) {
    CloseNodeConnection(node_id, Status::Unavailable(fmt::format(
        "the head declared this node dead after {} ms of silence", config_.node_timeout_ms)));
    AfterNodeDeath(node_id);
  }
  Micros now = clock_->NowMicros();
  Micros at_latest = now + static_cast<Micros>(config_.heartbeat_ms) * 1000;
  Micros next = at_latest;
  const Micros jobs_due = jobs_.Tick();
  sweeps_.Poll();
  for (Micros due : {nodes_.NextDeadline(), jobs_due}) {
    if (due != 0 && due < next) next = due;
  }
  next_tick_ = next;
  return next;
}

void HeadCore::CloseNodeConnection(const std::string& node_id, const Status& status) {
  auto current = link_of_node_.find(node_id);
  if (current == link_of_node_.end()) return;
  auto link = links_.find(current->second);
  link_of_node_.erase(current);
  if (link == links_.end()) return;
  link->second.connection->Close(status);
  links_.erase(link);
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
  auto current = link_of_node_.find(info->node_id());
  if (current == link_of_node_.end()) {
    return Status::Unavailable(fmt::format("node {} has no open stream", info->name()));
  }
  Link& link = links_.at(current->second);
  link.stop_reason = "stopped by clusterctl stop-node";
  HeadMessage stop;
  stop.mutable_stop()->set_reason("clusterctl stop-node");
  link.connection->Send(stop);
  return *info;
}

}  // namespace clusterd
