#include "daemon/head/identity/node_blob_access.h"

#include <fmt/format.h>

namespace clusterd {

void NodeBlobAccess::NodeRegistered(const std::string& node_id, const std::string& token_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto bound = token_of_node_.find(node_id);
  if (bound != token_of_node_.end()) {
    nodes_of_token_[bound->second].erase(node_id);
    if (nodes_of_token_[bound->second].empty()) nodes_of_token_.erase(bound->second);
    token_of_node_.erase(bound);
  }
  if (token_id.empty()) return;
  token_of_node_[node_id] = token_id;
  nodes_of_token_[token_id].insert(node_id);
}

void NodeBlobAccess::Launched(const std::string& node_id, const std::string& job_id, int attempt) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto nodes = nodes_of_job_.find(job_id);
  if (nodes != nodes_of_job_.end()) {
    const std::set<std::string> earlier = nodes->second;
    for (const std::string& node : earlier) {
      if (launched_[node][job_id] < attempt) DropLocked(node, job_id);
    }
  }
  launched_[node_id][job_id] = attempt;
  nodes_of_job_[job_id].insert(node_id);
}

void NodeBlobAccess::RanksEnded(const std::string& node_id, const std::string& job_id, int attempt) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto node = launched_.find(node_id);
  if (node == launched_.end()) return;
  auto job = node->second.find(job_id);
  if (job != node->second.end() && job->second == attempt) DropLocked(node_id, job_id);
}

void NodeBlobAccess::DropLocked(const std::string& node_id, const std::string& job_id) {
  auto node = launched_.find(node_id);
  if (node != launched_.end()) {
    node->second.erase(job_id);
    if (node->second.empty()) launched_.erase(node);
  }
  auto nodes = nodes_of_job_.find(job_id);
  if (nodes != nodes_of_job_.end()) {
    nodes->second.erase(node_id);
    if (nodes->second.empty()) nodes_of_job_.erase(nodes);
  }
}

Status NodeBlobAccess::MayFetch(const std::string& token_id, const std::string& blob_id,
                                const std::vector<std::string>& holding_jobs) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto nodes = nodes_of_token_.find(token_id);
  if (nodes != nodes_of_token_.end()) {
    for (const std::string& node_id : nodes->second) {
      auto launched = launched_.find(node_id);
      if (launched == launched_.end()) continue;
      for (const std::string& job_id : holding_jobs) {
        if (launched->second.count(job_id)) return Status::Ok();
      }
    }
  }
  return Status::PermissionDenied(fmt::format(
      "node token {} may fetch only the blobs of the jobs running on its nodes (their packages and checkpoints); "
      "blob {} is not one of them",
      token_id, blob_id));
}

}  // namespace clusterd
