#include "daemon/head/node_roster.h"

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

namespace clusterd {

bool NodeRoster::IsLive(const Entry& entry) {
  return entry.info.state() == ALIVE || entry.info.state() == DRAINING;
}

bool NodeRoster::TakesWork(const Entry& entry) { return entry.info.state() == ALIVE && !entry.restored; }

NodeRoster::Entry* NodeRoster::Find(const std::string& id_or_name) {
  return const_cast<Entry*>(static_cast<const NodeRoster*>(this)->Find(id_or_name));
}

const NodeRoster::Entry* NodeRoster::Find(const std::string& id_or_name) const {
  auto it = nodes_.find(id_or_name);
  if (it != nodes_.end()) return &it->second;
  auto named = by_name_.find(id_or_name);
  if (named != by_name_.end()) return &nodes_.at(named->second);
  return nullptr;
}

std::string NodeRoster::UniqueName(const std::string& wanted) const {
  // A name is free when nobody has it or only a dead node had it.
  auto is_free = [this](const std::string& name) {
    auto it = by_name_.find(name);
    return it == by_name_.end() || !IsLive(nodes_.at(it->second));
  };
  if (is_free(wanted)) return wanted;
  for (int i = 2;; ++i) {
    std::string candidate = fmt::format("{}-{}", wanted, i);
    if (is_free(candidate)) return candidate;
  }
}

Result<NodeRoster::Entry*> NodeRoster::EntryFor(const RegisterNode& request, const std::string& machine,
                                                std::string* name) {
  // The same agent again (its stream broke, or the head restarted): its
  // own entry, under the name it was given, whatever order agents come in.
  auto own = request.instance_id().empty() ? by_instance_.end() : by_instance_.find(request.instance_id());
  if (own != by_instance_.end()) {
    Entry* entry = &nodes_.at(own->second);
    *name = entry->info.name();
    return entry;
  }
  *name = request.name();
  auto existing = by_name_.find(*name);
  if (existing == by_name_.end()) return nullptr;
  Entry* old = &nodes_.at(existing->second);
  // A node put back by Restore is kept for its own agent until it times
  // out, as a live one is: its ranks may still run there. But an agent of
  // its name on its machine is that machine's agent started again while
  // the head was away (a reboot, a systemd restart, the head's own agent
  // in a restarted head process); from another machine it is refused.
  if (!IsLive(*old) || (old->restored && old->machine == machine)) return old;
  if (request.name_given()) {
    return Status::AlreadyExists(fmt::format("node name '{}' is already used by a live node at {}; pass another --node-name",
                                             *name, old->info.address()));
  }
  *name = UniqueName(*name);
  auto renamed = by_name_.find(*name);
  return renamed == by_name_.end() ? nullptr : &nodes_.at(renamed->second);
}

NodeRoster::Entry& NodeRoster::AddNew(const std::string& name) {
  std::string id = fmt::format("node-{:04d}", next_node_number_++);
  Entry& entry = nodes_[id];
  entry.info.set_node_id(id);
  by_name_[name] = id;
  return entry;
}

void NodeRoster::SetInstance(Entry& entry, const std::string& instance_id) {
  if (entry.instance_id != instance_id) by_instance_.erase(entry.instance_id);
  entry.instance_id = instance_id;
  if (!instance_id.empty()) by_instance_[instance_id] = entry.info.node_id();
}

NodeRoster::Entry& NodeRoster::Put(const NodeRecord& record) {
  const std::string& id = record.info().node_id();
  auto old = nodes_.find(id);
  if (old != nodes_.end()) {
    by_name_.erase(old->second.info.name());
    by_instance_.erase(old->second.instance_id);
  }
  Entry& entry = nodes_[id];
  entry = Entry();
  entry.info = record.info();
  entry.instance_id = record.instance_id();
  entry.machine = record.machine();
  entry.drain_reason = record.drain_reason();
  by_name_[entry.info.name()] = id;
  if (!entry.instance_id.empty()) by_instance_[entry.instance_id] = id;
  if (entry.info.is_head()) head_id_ = id;
  int number = 0;
  if (std::sscanf(id.c_str(), "node-%d", &number) == 1) next_node_number_ = std::max(next_node_number_, number + 1);
  return entry;
}

std::vector<const NodeInfo*> NodeRoster::Nodes() const {
  bool more = false;
  return Page("", nodes_.size(), &more);
}

std::vector<const NodeInfo*> NodeRoster::Page(const std::string& after, size_t limit, bool* more) const {
  std::vector<const NodeInfo*> out;
  *more = false;
  const NodeInfo* head = head_id_.empty() ? nullptr : &nodes_.at(head_id_).info;
  auto add = [&](const NodeInfo* node) {
    if (out.size() == limit) {
      *more = true;
      return false;
    }
    out.push_back(node);
    return true;
  };
  if (after.empty() && head && !add(head)) return out;
  auto it = after.empty() || (head && after == head->name()) ? by_name_.begin() : by_name_.upper_bound(after);
  for (; it != by_name_.end(); ++it) {
    const NodeInfo* node = &nodes_.at(it->second).info;
    if (node == head) continue;
    if (!add(node)) break;
  }
  return out;
}

NodeCounts NodeRoster::Counts() const {
  NodeCounts counts;
  for (const auto& [id, entry] : nodes_) {
    switch (entry.info.state()) {
      case ALIVE: counts.set_alive(counts.alive() + 1); break;
      case DRAINING: counts.set_draining(counts.draining() + 1); break;
      case DEAD: counts.set_dead(counts.dead() + 1); break;
      default: break;
    }
  }
  return counts;
}

NodeRecord NodeRoster::RecordOf(const Entry& entry) {
  NodeRecord record;
  *record.mutable_info() = entry.info;
  record.mutable_info()->clear_usage();
  record.set_instance_id(entry.instance_id);
  record.set_machine(entry.machine);
  record.set_drain_reason(entry.drain_reason);
  return record;
}

std::vector<NodeRecord> NodeRoster::Records() const {
  std::vector<NodeRecord> records;
  records.reserve(nodes_.size());
  for (const auto& [id, entry] : nodes_) records.push_back(RecordOf(entry));
  return records;
}

}  // namespace clusterd
