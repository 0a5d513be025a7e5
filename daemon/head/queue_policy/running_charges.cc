#include "daemon/head/queue_policy/running_charges.h"

#include "common/resources.h"

namespace clusterd {

ResourceSet JobAmounts(const JobSpec& spec) {
  ResourceSet total;
  const double workers = spec.num_workers() > 0 ? spec.num_workers() : 1;
  for (const auto& [name, amount] : spec.resources_per_worker().amounts()) {
    if (amount > 0) (*total.mutable_amounts())[name] = amount * workers;
  }
  return total;
}

std::vector<std::string> RunningCharges::HoldersOf(const std::string& owner) const {
  // A job without an owner was submitted with the cluster's one token
  // before there were users: the identity layer's admin, "admin".
  const std::string user = owner.empty() ? "admin" : owner;
  std::vector<std::string> holders{user};
  if (groups_) {
    for (std::string& group : groups_(user)) {
      if (group != user) holders.push_back(std::move(group));
    }
  }
  return holders;
}

bool RunningCharges::IsBorrowing(const TrackedJob& job) const {
  return borrowing_.count(job.seq) > 0;
}

void RunningCharges::Update(TrackedJob& job) {
  const bool runs = job.info.state() == RUNNING;
  const bool charged = charges_.count(job.seq) > 0;
  if (runs == charged) return;
  if (!runs) {
    Uncharge(job.seq);
    return;
  }
  Charge charge;
  charge.owner = job.info.owner();
  charge.holders = HoldersOf(charge.owner);
  charge.amounts = JobAmounts(job.info.spec());
  const bool borrowing = job.info.spec().borrow() && quotas_->WouldPass(charge.holders, charge.amounts).has_value();
  quotas_->Charge(charge.holders, charge.amounts, 1);
  fair_share_->Charge(charge.owner, Amount(charge.amounts, kGpu), Amount(charge.amounts, kCpu), 1);
  if (borrowing) borrowing_.insert(job.seq);
  charges_.emplace(job.seq, std::move(charge));
  running_[job.seq] = &job;
}

void RunningCharges::Uncharge(uint64_t seq) {
  auto it = charges_.find(seq);
  if (it == charges_.end()) return;
  const Charge& charge = it->second;
  quotas_->Charge(charge.holders, charge.amounts, -1);
  fair_share_->Charge(charge.owner, Amount(charge.amounts, kGpu), Amount(charge.amounts, kCpu), -1);
  charges_.erase(it);
  running_.erase(seq);
  borrowing_.erase(seq);
}

}  // namespace clusterd
