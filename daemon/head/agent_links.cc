#include "daemon/head/agent_links.h"

#include <utility>

#include "common/logging.h"
#include "common/net/net_address.h"
#include "common/text.h"

namespace clusterd {

AgentLinks::AgentLinks(NodeTable* nodes, int heartbeat_ms, StreamForgotten on_forgotten)
    : nodes_(nodes), heartbeat_ms_(heartbeat_ms), on_forgotten_(std::move(on_forgotten)) {}

AgentLinks::Link& AgentLinks::LinkOf(const std::shared_ptr<AgentConnection>& connection) {
  auto [it, inserted] = links_.try_emplace(connection.get());
  if (inserted) it->second.connection = connection;
  return it->second;
}

void AgentLinks::Erase(std::map<AgentConnection*, Link>::iterator link) {
  AgentConnection* connection = link->first;
  links_.erase(link);
  if (on_forgotten_) on_forgotten_(connection);
}

const NodeInfo* AgentLinks::Register(const std::shared_ptr<AgentConnection>& connection,
                                     const RegisterNode& request) {
  Link& link = LinkOf(connection);
  if (!link.node_id.empty()) {
    connection->Close(Status::FailedPrecondition("node registered twice on one stream"));
    return nullptr;
  }
  auto registered = nodes_->Register(request, OriginOf(link, request));
  if (!registered.ok()) {
    // Quoted and cut short: the name may be what the refusal is about.
    LOG_WARN("refused registration of {} from {}: {}", JsonQuote(request.name().substr(0, 64)),
             connection->Peer(), registered.status().message().substr(0, 256));
    connection->Close(registered.status());
    return nullptr;
  }
  const NodeInfo& info = **registered;
  // The same node may come back on a new stream before its old one is seen
  // to break: the new one wins.
  auto previous = link_of_node_.find(info.node_id());
  if (previous != link_of_node_.end() && previous->second != connection.get()) {
    auto old = links_.find(previous->second);
    if (old != links_.end()) {
      old->second.connection->Close(Status::Unavailable("replaced by a newer stream of the same node"));
      Erase(old);
    }
  }
  link.node_id = info.node_id();
  link.incarnation = info.incarnation();
  link_of_node_[info.node_id()] = connection.get();

  HeadMessage reply;
  auto* ack = reply.mutable_registered();
  ack->set_node_id(info.node_id());
  ack->set_name(info.name());
  ack->set_incarnation(info.incarnation());
  ack->set_heartbeat_ms(heartbeat_ms_);
  connection->OfferDatagramHeartbeats(ack);
  connection->Send(reply);
  return &info;
}

NodeTable::Origin AgentLinks::OriginOf(const Link& link, const RegisterNode& request) const {
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

std::optional<std::string> AgentLinks::Heard(const std::shared_ptr<AgentConnection>& connection,
                                             const AgentMessage& message) {
  Link& link = LinkOf(connection);
  if (link.node_id.empty()) {
    connection->Close(Status::FailedPrecondition("the first message on a stream must register the node"));
    Erase(links_.find(connection.get()));
    return std::nullopt;
  }
  // Any message proves the node is alive, not only heartbeats.
  NodeUsage usage;
  if (message.has_heartbeat()) usage = message.heartbeat().usage();
  else if (const NodeInfo* info = nodes_->Find(link.node_id)) usage = info->usage();
  Status st = nodes_->Heartbeat(link.node_id, link.incarnation, usage);
  if (!st.ok()) {
    // The table already counts this incarnation as gone (declared dead by
    // timeout): end the stream so the agent registers afresh.
    connection->Close(Status::Unavailable(st.message()));
    return std::nullopt;
  }
  return link.node_id;
}

void AgentLinks::CollectHeartbeats() {
  for (auto& [connection, link] : links_) {
    if (link.node_id.empty()) continue;
    std::optional<AgentConnection::Heard> heard = link.connection->TakeHeartbeat();
    if (!heard) continue;
    Status st = nodes_->Heartbeat(link.node_id, link.incarnation, heard->usage, heard->at);
    // As for any message: an incarnation the table counts as gone ends its
    // stream, so that the agent registers afresh.
    if (!st.ok()) link.connection->Close(Status::Unavailable(st.message()));
  }
}

void AgentLinks::SetStopReason(AgentConnection* connection, const std::string& reason) {
  auto it = links_.find(connection);
  if (it != links_.end() && it->second.stop_reason.empty()) it->second.stop_reason = reason;
}

std::optional<std::string> AgentLinks::Disconnected(AgentConnection* connection, const std::string& cause) {
  auto it = links_.find(connection);
  if (it == links_.end()) return std::nullopt;
  Link link = it->second;
  Erase(it);
  if (link.node_id.empty() || stopping_) return std::nullopt;
  auto current = link_of_node_.find(link.node_id);
  if (current != link_of_node_.end() && current->second == connection) link_of_node_.erase(current);
  nodes_->MarkDisconnected(link.node_id, link.incarnation, link.stop_reason.empty() ? cause : link.stop_reason);
  return link.node_id;
}

bool AgentLinks::SendToNode(const std::string& node_id, const HeadMessage& message) {
  auto current = link_of_node_.find(node_id);
  if (current == link_of_node_.end()) return false;
  auto link = links_.find(current->second);
  if (link == links_.end()) return false;
  link->second.connection->Send(message);
  return true;
}

bool AgentLinks::AskToStop(const std::string& node_id, const std::string& stop_reason, const HeadMessage& stop) {
  auto current = link_of_node_.find(node_id);
  if (current == link_of_node_.end()) return false;
  auto link = links_.find(current->second);
  if (link == links_.end()) return false;
  link->second.stop_reason = stop_reason;
  link->second.connection->Send(stop);
  return true;
}

void AgentLinks::CloseNode(const std::string& node_id, const Status& status) {
  auto current = link_of_node_.find(node_id);
  if (current == link_of_node_.end()) return;
  auto link = links_.find(current->second);
  link_of_node_.erase(current);
  if (link == links_.end()) return;
  link->second.connection->Close(status);
  Erase(link);
}

}  // namespace clusterd
