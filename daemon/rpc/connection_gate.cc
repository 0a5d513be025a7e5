#include "daemon/rpc/connection_gate.h"

#include <algorithm>

namespace clusterd {

ConnectionGate::ConnectionGate(GateLimits limits) : limits_(limits) {
  limits_.per_source = std::max(1, limits_.per_source);
  limits_.per_port = std::max(1, limits_.per_port);
}

ConnectionGate::Id ConnectionGate::Admit(const std::string& source, std::vector<Id>* evict) {
  auto found = by_source_.find(source);
  if (found != by_source_.end() && static_cast<int>(found->second.size()) >= limits_.per_source) {
    EvictOldest(found->second, evict);
  }
  if (static_cast<int>(order_.size()) >= limits_.per_port) EvictOldest(order_, evict);
  const Id id = next_id_++;
  std::list<Id>& mine = by_source_[source];
  Entry entry;
  entry.source = source;
  entry.in_order = order_.insert(order_.end(), id);
  entry.in_source_order = mine.insert(mine.end(), id);
  entries_.emplace(id, std::move(entry));
  return id;
}

void ConnectionGate::EvictOldest(const std::list<Id>& order, std::vector<Id>* evict) {
  const Id oldest = order.front();
  Forget(oldest);
  evict->push_back(oldest);
  ++evicted_;
}

void ConnectionGate::Proven(Id id) { Forget(id); }
void ConnectionGate::Closed(Id id) { Forget(id); }

void ConnectionGate::Forget(Id id) {
  auto found = entries_.find(id);
  if (found == entries_.end()) return;
  order_.erase(found->second.in_order);
  auto source = by_source_.find(found->second.source);
  source->second.erase(found->second.in_source_order);
  if (source->second.empty()) by_source_.erase(source);
  entries_.erase(found);
}

int ConnectionGate::unproven_from(const std::string& source) const {
  auto found = by_source_.find(source);
  return found == by_source_.end() ? 0 : static_cast<int>(found->second.size());
}

}  // namespace clusterd
