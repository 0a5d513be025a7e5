#include "daemon/head/node_table.h"

#include <algorithm>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "common/logging.h"
#include "common/resources.h"
#include "daemon/head/registration_check.h"

namespace clusterd {

namespace {
// How a drain for GPU faults begins, so that a reset knows to undo it.
constexpr std::string_view kNoGpuLeft = "every GPU is out of the offer for a fault";

bool IsBad(const NodeInfo& info, int index) {
  for (const GpuStatus& bad : info.bad_gpus()) {
    if (bad.index() == index) return true;
  }
  return false;
}
}  // namespace

const char* NodeStateName(NodeState state) {
  switch (state) {
    case ALIVE: return "ALIVE";
    case DRAINING: return "DRAINING";
    case DEAD: return "DEAD";
    default: return "NEW";
  }
}

NodeTable::NodeTable(const Clock* clock, Micros node_timeout, Micros restored_grace)
    : clock_(clock), node_timeout_(node_timeout), restored_grace_(std::max(node_timeout, restored_grace)) {}

Result<const NodeInfo*> NodeTable::Register(const RegisterNode& request, const Origin& origin) {
  if (request.name().empty()) return Status::InvalidArgument("a node must have a name");
  RETURN_IF_ERROR(CheckRegistration(request));
  std::string name;
  ASSIGN_OR_RETURN(Entry* entry, roster_.EntryFor(request, origin.machine, &name));
  const bool same_agent = entry && entry->instance_id == request.instance_id();
  Micros now = clock_->NowMicros();
  if (entry) {
    entry->info.set_incarnation(entry->info.incarnation() + 1);
  } else {
    entry = &roster_.AddNew(name);
    entry->info.set_incarnation(1);
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
  if (request.is_head()) roster_.SetHead(*entry);
  info.mutable_gpu_indexes()->CopyFrom(request.gpu_indexes());
  info.clear_usage();
  roster_.SetInstance(*entry, request.instance_id());
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
  ApplyBadGpus(*entry);
  LOG_INFO("node {} ({}) at {}: {}", info.name(), info.node_id(), info.address(),
           FormatResources(info.total()));
  return &entry->info;
}

void NodeTable::Restore(const std::vector<NodeRecord>& records) {
  const Micros now = clock_->NowMicros();
  for (const NodeRecord& record : records) {
    if (record.info().node_id().empty() || record.info().name().empty()) continue;
    Entry& entry = roster_.Put(record);
    entry.info.clear_usage();
    entry.restored = NodeRoster::IsLive(entry);
    if (entry.restored) {
      // Nothing is free there until its agent says what is.
      *entry.info.mutable_available() = ResourceSet();
      entry.info.set_state_reason(fmt::format("not heard from since the head restarted (before: {})",
                                              record.info().state_reason()));
      entry.last_heard = now;
      // Its node timeout counts from the restart, and so does the age
      // shown: the journal's registration time would read as a heartbeat
      // hours old, and alerts on that age fire at every head restart.
      entry.info.set_last_heartbeat_unix_ms(clock_->UnixMillis());
    }
  }
  roster_.Changed();
  if (!records.empty()) {
    const NodeCounts counts = Counts();
    LOG_INFO("nodes: {} restored, {} of them awaiting their agents, {} dead", roster_.entries().size(),
             counts.alive() + counts.draining(), counts.dead());
  }
}

Status NodeTable::Heartbeat(const std::string& node_id, int64_t incarnation, const NodeUsage& usage,
                            Micros heard_at) {
  Entry* entry = roster_.Find(node_id);
  if (!entry) return Status::NotFound(fmt::format("unknown node {}", node_id));
  if (entry->info.incarnation() != incarnation || !NodeRoster::IsLive(*entry)) {
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
  if (TakeOutFaultyGpus(*entry, usage)) {
    ApplyBadGpus(*entry);
    roster_.Changed();
    if (on_node_changed_) on_node_changed_(NodeRoster::RecordOf(*entry));
  }
  return Status::Ok();
}

bool NodeTable::TakeOutFaultyGpus(Entry& entry, const NodeUsage& usage) {
  bool changed = false;
  for (const GpuStatus& gpu : usage.gpus()) {
    if (gpu.fault().empty() || IsBad(entry.info, gpu.index())) continue;
    const auto& indexes = entry.info.gpu_indexes();
    if (std::find(indexes.begin(), indexes.end(), gpu.index()) == indexes.end()) continue;
    GpuStatus& bad = *entry.info.add_bad_gpus();
    bad.set_index(gpu.index());
    bad.set_fault(gpu.fault());
    bad.set_fault_since_unix_ms(clock_->UnixMillis());
    LOG_WARN("node {} ({}): GPU {} is out of the offer until `clusterctl node {} --reset-gpu {}`: {}",
             entry.info.name(), entry.info.node_id(), gpu.index(), entry.info.name(), gpu.index(), gpu.fault());
    changed = true;
  }
  return changed;
}

void NodeTable::ApplyBadGpus(Entry& entry) {
  for (const GpuStatus& bad : entry.info.bad_gpus()) entry.gpus.Withhold(bad.index());
  const auto& indexes = entry.info.gpu_indexes();
  if (indexes.empty() || entry.info.state() != ALIVE) return;
  for (int index : indexes) {
    if (!IsBad(entry.info, index)) return;
  }
  std::string reason(kNoGpuLeft);
  for (const GpuStatus& bad : entry.info.bad_gpus()) reason += fmt::format("; GPU {}: {}", bad.index(), bad.fault());
  entry.drain_reason = reason;
  Transition(entry, DRAINING, reason);
}

Result<const NodeInfo*> NodeTable::ResetGpu(const std::string& id_or_name, int index, std::string* fault) {
  Entry* entry = roster_.Find(id_or_name);
  if (!entry) return Status::NotFound(fmt::format("no node named or with id '{}'", id_or_name));
  NodeInfo& info = entry->info;
  auto& bad = *info.mutable_bad_gpus();
  auto it = std::find_if(bad.begin(), bad.end(), [index](const GpuStatus& gpu) { return gpu.index() == index; });
  if (it == bad.end()) {
    std::string out;
    for (const GpuStatus& gpu : bad) out += (out.empty() ? "" : ", ") + std::to_string(gpu.index());
    return Status::FailedPrecondition(fmt::format("GPU {} of node {} is not out of the offer (out: {})", index,
                                                  info.name(), out.empty() ? "none" : out));
  }
  *fault = it->fault();
  bad.erase(it);
  entry->gpus.Offer(index);
  LOG_INFO("node {} ({}): GPU {} is back in the offer (it was out for: {})", info.name(), info.node_id(), index,
           *fault);
  if (info.state() == DRAINING && entry->drain_reason.rfind(kNoGpuLeft, 0) == 0) {
    entry->drain_reason.clear();
    Transition(*entry, ALIVE, fmt::format("GPU {} reset: back in the offer", index));
  } else {
    roster_.Changed();
    if (on_node_changed_) on_node_changed_(NodeRoster::RecordOf(*entry));
  }
  return &entry->info;
}

void NodeTable::MarkDisconnected(const std::string& node_id, int64_t incarnation,
                                 const std::string& cause) {
  Entry* entry = roster_.Find(node_id);
  if (!entry || entry->info.incarnation() != incarnation || !NodeRoster::IsLive(*entry)) return;
  Transition(*entry, DEAD, cause);
}

std::vector<std::string> NodeTable::CheckTimeouts() {
  std::vector<std::string> dead;
  Micros now = clock_->NowMicros();
  for (auto& [id, entry] : roster_.entries()) {
    if (!NodeRoster::IsLive(entry)) continue;
    Micros silent = now - entry.last_heard;
    if (silent > (entry.restored ? restored_grace_ : node_timeout_)) {
      Transition(entry, DEAD,
                 entry.restored ? fmt::format("not back within {} ms of the head's restart", restored_grace_ / 1000)
                                : fmt::format("no heartbeat for {} ms (timeout {} ms)", silent / 1000,
                                              node_timeout_ / 1000));
      dead.push_back(id);
    }
  }
  return dead;
}

bool NodeTable::HeardBetween(Micros from, Micros to) const {
  for (const auto& [id, entry] : roster_.entries()) {
    if (NodeRoster::IsLive(entry) && entry.last_heard >= from && entry.last_heard <= to) return true;
  }
  return false;
}

void NodeTable::ForgiveSilence(Micros stalled) {
  const Micros now = clock_->NowMicros();
  for (auto& [id, entry] : roster_.entries()) {
    if (NodeRoster::IsLive(entry)) entry.last_heard = std::min(now, entry.last_heard + stalled);
  }
}

Micros NodeTable::NextDeadline() const {
  Micros next = 0;
  for (const auto& [id, entry] : roster_.entries()) {
    if (!NodeRoster::IsLive(entry)) continue;
    Micros deadline = entry.last_heard + (entry.restored ? restored_grace_ : node_timeout_);
    if (next == 0 || deadline < next) next = deadline;
  }
  return next;
}

Result<const NodeInfo*> NodeTable::Drain(const std::string& id_or_name, const std::string& reason) {
  Entry* entry = roster_.Find(id_or_name);
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
  const Entry* entry = roster_.Find(id_or_name);
  return entry ? &entry->info : nullptr;
}

bool NodeTable::IsSchedulable(const std::string& node_id) const {
  const Entry* entry = roster_.Find(node_id);
  return entry && NodeRoster::TakesWork(*entry);
}

std::string NodeTable::MachineOf(const std::string& node_id) const {
  const Entry* entry = roster_.Find(node_id);
  return entry ? entry->machine : "";
}

void NodeTable::Transition(Entry& entry, NodeState state, const std::string& cause) {
  NodeState from = entry.info.state();
  roster_.Changed();
  entry.info.set_state(state);
  entry.info.set_state_reason(cause);
  LOG_INFO("node {} ({}) incarnation {}: {} -> {}: {}", entry.info.name(), entry.info.node_id(),
           entry.info.incarnation(), NodeStateName(from), NodeStateName(state), cause);
  if (state == DEAD) {
    *entry.info.mutable_available() = ResourceSet();
    entry.gpus = GpuSlots();
    if (on_node_dead_) on_node_dead_(entry.info);
  }
  if (on_node_changed_) on_node_changed_(NodeRoster::RecordOf(entry));
}

}  // namespace clusterd
