// Quotas (docs/SHARING.md): what the running jobs of a user or of a group
// may hold at once, GPUs and CPUs (or any resource), as an admin set them
// with `clusterctl quota set NAME GPU=8 CPU=64`. A job is held against its
// owner's quota and each of its owner's groups'; one that would pass any
// of them waits, saying which, unless its job file says `borrow: true`: it
// then runs on idle capacity beyond its quota, and is borrowing until it
// ends (the first that preemption takes when the quota's owner needs room).
// NOT thread-safe: the head's event loop owns it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cluster.pb.h"

namespace clusterd {

class Quotas {
 public:
  void Set(const std::string& name, const ResourceSet& limit);
  // False when it had none.
  bool Remove(const std::string& name);
  bool empty() const { return limits_.empty(); }
  // Null when the name has no quota.
  const ResourceSet* LimitOf(const std::string& name) const;
  // Every name with a quota or a use, in name order, with its limit and use.
  std::vector<QuotaInfo> List() const;

  // `amounts` began (sign 1) or stopped (sign -1) being held by each of
  // `holders` (a job's owner and the owner's groups).
  void Charge(const std::vector<std::string>& holders, const ResourceSet& amounts, int sign);
  // Why `amounts` more would pass a quota of one of `holders`, as "team-a
  // uses 8 of 8 GPUs"; nullopt when it would pass none.
  std::optional<std::string> WouldPass(const std::vector<std::string>& holders, const ResourceSet& amounts) const;
  // Changes with every Set and Remove: what was judged over quota may fit now.
  uint64_t generation() const { return generation_; }

 private:
  std::map<std::string, ResourceSet> limits_;
  std::map<std::string, std::map<std::string, double>> used_;  // name -> resource -> held
  uint64_t generation_ = 0;
};

// "GPUs", "CPUs", or the resource's own name: how a reason says it.
std::string ResourceWord(const std::string& resource);

}  // namespace clusterd
