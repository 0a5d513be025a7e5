#include "daemon/head/node_table.h"

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "common/logging.h"
#include "common/resources.h"
#include "daemon/head/registration_check.h"

namespace clusterd {

const char* NodeStateName(NodeState state) {
  switch (state) {
    case ALIVE: return "ALIVE";
    case DRAINING: return "DRAINING";
    case DEAD: return "DEAD";
    default: return "NEW";
  }
}

NodeTable::NodeTable(const Clock* clock, Micros node_timeout)
    : clock_(clock), node_timeout_(node_timeout) {}

bool NodeTable::IsLive(const Entry& entry) {
  return entry.info.state() == ALIVE || entry.info.state() == DRAINING;
}

NodeTable::Entry* NodeTable::FindEntry(const std::string& id_or_name) {
  return const_cast<Entry*>(static_cast<const NodeTable*>(this)->FindEntry(id_or_name));
}

const NodeTable::Entry* NodeTable::FindEntry(const std::string& id_or_name) const {
  auto it = nodes_.find(id_or_name);
  if (it != nodes_.end()) return &it->second;
  auto named = by_name_.find(id_or_name);
  if (named != by_name_.end()) return &nodes_.at(named->second);
  return nullptr;
}

std::string NodeTable::UniqueName(const std::string& wanted) const {
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

Result<NodeTable::Entry*> NodeTable::EntryFor(const RegisterNode& request, const Origin& origin, std::string* name) {
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
  if (!IsLive(*old) || (old->restored && old->machine == origin.machine)) return old;
  if (request.name_given()) {
    return Status::AlreadyExists(fmt::format("node name '{}' is already used by a live node at {}; pass another --node-name",
                                             *name, old->info.address()));
  }
  *name = UniqueName(*name);
  auto renamed = by_name_.find(*name);
  return renamed == by_name_.end() ? nullptr : &nodes_.at(renamed->second);
}

Result<const NodeInfo*> NodeTable::Register(const RegisterNode& request, const Origin& origin) {
  if (request.name().empty()) return Status::InvalidArgument("a node must have a name");
  RETURN_IF_ERROR(CheckRegistration(request));
  std::string name;
  ASSIGN_OR_RETURN(Entry* entry, EntryFor(request, origin, &name));
  const bool same_agent = entry && entry->instance_id == request.instance_id();
  Micros now = clock_->NowMicros();
  if (entry) {
    entry->info.set_incarnation(entry->info.incarnation() + 1);
    if (!same_agent) by_instance_.erase(entry->instance_id);
  } else {
    std::string id = fmt::format("node-{:04d}", next_node_number_++);
    entry = &nodes_[id];
    entry->info.set_node_id(id);
    entry->info.set_incarnation(1);
    by_name_[name] = id;
  }
  // A drain is the agent's: one started anew (clusterd stop, then start) takes work again.
  if (!same_agent) entry->drain_reason.clear();
  entry->restored = false;
  NodeInfo& info = entry->info;
  info.set_name(name);
  info.set_address(request.address());
  info.set_observed_address(origin.observed_address);
  entry->machine = origin.machine;
  *info.mutable_total() = request.total();
  *info.mutable_available() = request.total();
  *info.mutable_labels() = request.labels();
  info.set_is_head(request.is_head());
  if (request.is_head()) head_id_ = info.node_id();
  info.mutable_gpu_indexes()->CopyFrom(request.gpu_indexes());
  info.clear_usage();
  entry->instance_id = request.instance_id();
  if (!entry->instance_id.empty()) by_instance_[entry->instance_id] = info.node_id();
  entry->gpus = GpuSlots(std::vector<int>(request.gpu_indexes().begin(), request.gpu_indexes().end()));
  entry->last_heard = now;
  info.set_last_heartbeat_unix_ms(clock_->UnixMillis());
  std::string cause = info.incarnation() == 1 ? "registered"
                                              : fmt::format("registered again (incarnation {})", info.incarnation());
  if (entry->drain_reason.empty()) {
    Transition(*entry, ALIVE, cause);
  } else {
    Transition(*entry, DRAINING, fmt::format("{}, still draining: {}", cause, entry->drain_reason));
  }
  LOG_INFO("node {} ({}) at {}: {}", info.name(), info.node_id(), info.address(),
           FormatResources(info.total()));
  return &entry->info;
}

void NodeTable::Restore(const std::vector<NodeRecord>& records) {
  const Micros now = clock_->NowMicros();
  for (const NodeRecord& record : records) {
    const std::string& id = record.info().node_id();
    if (id.empty() || record.info().name().empty()) continue;
    auto old = nodes_.find(id);
    if (old != nodes_.end()) {
      by_name_.erase(old->second.info.name());
      by_instance_.erase(old->second.instance_id);
    }
    Entry& entry = nodes_[id];
    entry = Entry();
    entry.info = record.info();
    entry.info.clear_usage();
    entry.instance_id = record.instance_id();
    entry.machine = record.machine();
    entry.drain_reason = record.drain_reason();
    entry.restored = IsLive(entry);
    if (entry.restored) {
      // Nothing is free there until its agent says what is.
      *entry.info.mutable_available() = ResourceSet();
      entry.info.set_state_reason(fmt::format("not heard from since the head restarted (before: {})",
                                              record.info().state_reason()));
      entry.last_heard = now;
      // Its node timeout counts from the restart, and so does the age shown
      // (found by exploratory testing: the journal's registration time read
      // as a heartbeat hours old, and alerts on that age fired at every
      // head restart).
      entry.info.set_last_heartbeat_unix_ms(clock_->UnixMillis());
    }
    by_name_[entry.info.name()] = id;
    if (!entry.instance_id.empty()) by_instance_[entry.instance_id] = id;
    if (entry.info.is_head()) head_id_ = id;
    int number = 0;
    if (std::sscanf(id.c_str(), "node-%d", &number) == 1) next_node_number_ = std::max(next_node_number_, number + 1);
  }
  ++generation_;
  if (!records.empty()) {
    const NodeCounts counts = Counts();
    LOG_INFO("nodes: {} restored, {} of them awaiting their agents, {} dead", nodes_.size(),
             counts.alive() + counts.draining(), counts.dead());
  }
}

std::vector<NodeRecord> NodeTable::Records() const {
  std::vector<NodeRecord> records;
  records.reserve(nodes_.size());
  for (const auto& [id, entry] : nodes_) records.push_back(RecordOf(entry));
  return records;
}

NodeRecord NodeTable::RecordOf(const Entry& entry) const {
  NodeRecord record;
  *record.mutable_info() = entry.info;
  record.mutable_info()->clear_usage();
  record.set_instance_id(entry.instance_id);
  record.set_machine(entry.machine);
  record.set_drain_reason(entry.drain_reason);
  return record;
}

Status NodeTable::Heartbeat(const std::string& node_id, int64_t incarnation, const NodeUsage& usage,
                            Micros heard_at) {
  Entry* entry = FindEntry(node_id);
  if (!entry) return Status::NotFound(fmt::format("unknown node {}", node_id));
  if (entry->info.incarnation() != incarnation || !IsLive(*entry)) {
    return Status::FailedPrecondition(fmt::format(
        "node {} incarnation {} is not live (current {}, {})", node_id, incarnation,
        entry->info.incarnation(), NodeStateName(entry->info.state())));
  }
  const Micros now = clock_->NowMicros();
  const Micros at = heard_at < 0 ? now : std::min(heard_at, now);
  if (at < entry->last_heard) return Status::Ok();  // an older one than what the table has
  entry->last_heard = at;
  entry->info.set_last_heartbeat_unix_ms(clock_->UnixMillis() - (now - at) / 1000);
  *entry->info.mutable_usage() = usage;
  return Status::Ok();
}

void NodeTable::MarkDisconnected(const std::string& node_id, int64_t incarnation,
                                 const std::string& cause) {
  Entry* entry = FindEntry(node_id);
  if (!entry || entry->info.incarnation() != incarnation || !IsLive(*entry)) return;
  Transition(*entry, DEAD, cause);
}

std::vector<std::string> NodeTable::CheckTimeouts() {
  std::vector<std::string> dead;
  Micros now = clock_->NowMicros();
  for (auto& [id, entry] : nodes_) {
    if (!IsLive(entry)) continue;
    Micros silent = now - entry.last_heard;
    if (silent > node_timeout_) {
      Transition(entry, DEAD,
                 entry.restored ? fmt::format("not back within {} ms of the head's restart", node_timeout_ / 1000)
                                : fmt::format("no heartbeat for {} ms (timeout {} ms)", silent / 1000,
                                              node_timeout_ / 1000));
      dead.push_back(id);
    }
  }
  return dead;
}

bool NodeTable::HeardBetween(Micros from, Micros to) const {
  for (const auto& [id, entry] : nodes_) {
    if (IsLive(entry) && entry.last_heard >= from && entry.last_heard <= to) return true;
  }
  return false;
}

void NodeTable::ForgiveSilence(Micros stalled) {
  const Micros now = clock_->NowMicros();
  for (auto& [id, entry] : nodes_) {
    if (IsLive(entry)) entry.last_heard = std::min(now, entry.last_heard + stalled);
  }
}

Micros NodeTable::NextDeadline() const {
  Micros next = 0;
  for (const auto& [id, entry] : nodes_) {
    if (!IsLive(entry)) continue;
    Micros deadline = entry.last_heard + node_timeout_;
    if (next == 0 || deadline < next) next = deadline;
  }
  return next;
}

Result<const NodeInfo*> NodeTable::Drain(const std::string& id_or_name, const std::string& reason) {
  Entry* entry = FindEntry(id_or_name);
  if (!entry) return Status::NotFound(fmt::format("no node named or with id '{}'", id_or_name));
  if (entry->info.state() == DEAD) {
    return Status::FailedPrecondition(fmt::format("node {} is DEAD", entry->info.name()));
  }
  if (entry->info.state() == ALIVE) {
    entry->drain_reason = reason;
    Transition(*entry, DRAINING, reason);
  }
  return &entry->info;
}

const NodeInfo* NodeTable::Find(const std::string& id_or_name) const {
  const Entry* entry = FindEntry(id_or_name);
  return entry ? &entry->info : nullptr;
}

std::vector<const NodeInfo*> NodeTable::Nodes() const {
  bool more = false;
  return Page("", nodes_.size(), &more);
}

std::vector<const NodeInfo*> NodeTable::Page(const std::string& after, size_t limit, bool* more) const {
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

NodeCounts NodeTable::Counts() const {
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

bool NodeTable::TakesWork(const Entry& entry) { return entry.info.state() == ALIVE && !entry.restored; }

bool NodeTable::IsSchedulable(const std::string& node_id) const {
  const Entry* entry = FindEntry(node_id);
  return entry && TakesWork(*entry);
}

bool NodeTable::TryAllocate(const std::string& node_id, const ResourceSet& request,
                            std::vector<int>* gpus) {
  Entry* entry = FindEntry(node_id);
  if (!entry || !TakesWork(*entry)) return false;
  if (!Fits(entry->info.available(), request)) return false;
  auto taken = entry->gpus.Take(Amount(request, kGpu));
  if (!taken) return false;
  SubtractFrom(entry->info.mutable_available(), request);
  *gpus = std::move(*taken);
  AllocationChanged(*entry);
  return true;
}

bool NodeTable::TryAllocateExact(const std::string& node_id, const ResourceSet& request,
                                 const std::vector<int>& gpus) {
  Entry* entry = FindEntry(node_id);
  if (!entry || !TakesWork(*entry)) return false;
  if (!Fits(entry->info.available(), request)) return false;
  if (!entry->gpus.TakeExact(Amount(request, kGpu), gpus)) return false;
  SubtractFrom(entry->info.mutable_available(), request);
  AllocationChanged(*entry);
  return true;
}

std::map<int, double> NodeTable::GpuFree(const std::string& node_id) const {
  const Entry* entry = FindEntry(node_id);
  return entry ? entry->gpus.free() : std::map<int, double>{};
}

void NodeTable::Release(const std::string& node_id, int64_t incarnation, const ResourceSet& request,
                        const std::vector<int>& gpus) {
  Entry* entry = FindEntry(node_id);
  if (!entry || entry->info.incarnation() != incarnation) return;
  AddTo(entry->info.mutable_available(), request);
  // Never report more than the node has, whatever order releases come in.
  for (auto& [name, value] : *entry->info.mutable_available()->mutable_amounts()) {
    value = std::min(value, Amount(entry->info.total(), name));
  }
  entry->gpus.Give(Amount(request, kGpu), gpus);
  AllocationChanged(*entry);
}

void NodeTable::AllocationChanged(const Entry& entry) {
  const bool now_current = now_.generation == generation_;
  const bool totals_current = totals_.generation == generation_;
  ++generation_;
  if (totals_current) totals_.generation = generation_;  // totals do not move with allocations
  if (!now_current) return;
  auto row = now_.row_of.find(entry.info.node_id());
  if (row != now_.row_of.end()) {
    NodeCapacity& capacity = now_.rows[row->second];
    capacity.resources = entry.info.available();
    capacity.gpu_free = entry.gpus.free();
  }
  now_.generation = generation_;
}

const std::vector<NodeCapacity>& NodeTable::SchedulableNow() { return Rows(now_, /*as_if_idle=*/false); }

const std::vector<NodeCapacity>& NodeTable::SchedulableTotals() { return Rows(totals_, /*as_if_idle=*/true); }

const std::vector<NodeCapacity>& NodeTable::Rows(PlanningRows& rows, bool as_if_idle) {
  if (rows.generation == generation_) return rows.rows;
  rows.rows.clear();
  rows.row_of.clear();
  for (const NodeInfo* node : Nodes()) {
    const Entry& entry = *FindEntry(node->node_id());
    // A node put back after a head restart takes no work until its agent is
    // back, but counts as one a job may wait for (found by exploratory
    // testing: queued and restarting jobs flapped to INFEASIBLE at every
    // head restart, until their nodes had registered again).
    if (as_if_idle ? entry.info.state() != ALIVE : !TakesWork(entry)) continue;
    NodeCapacity capacity = IdleCapacity(*node, entry.machine);
    if (!as_if_idle) {
      capacity.resources = node->available();
      capacity.gpu_free = entry.gpus.free();
    }
    rows.row_of[node->node_id()] = rows.rows.size();
    rows.rows.push_back(std::move(capacity));
  }
  rows.generation = generation_;
  return rows.rows;
}

void NodeTable::Transition(Entry& entry, NodeState state, const std::string& cause) {
  NodeState from = entry.info.state();
  ++generation_;
  entry.info.set_state(state);
  entry.info.set_state_reason(cause);
  LOG_INFO("node {} ({}) incarnation {}: {} -> {}: {}", entry.info.name(), entry.info.node_id(),
           entry.info.incarnation(), NodeStateName(from), NodeStateName(state), cause);
  if (state == DEAD) {
    *entry.info.mutable_available() = ResourceSet();
    entry.gpus = GpuSlots();
    if (on_node_dead_) on_node_dead_(entry.info);
  }
  if (on_node_changed_) on_node_changed_(RecordOf(entry));
}

std::string NodeTable::MachineOf(const std::string& node_id) const {
  const Entry* entry = FindEntry(node_id);
  return entry ? entry->machine : "";
}

}  // namespace clusterd
