// What the running jobs hold, charged to their owners: fair share's rate
// of use for each user, and quotas' use for each user and group. A
// listener of the job table: a job is charged while it is RUNNING (a
// restored running job included) and no longer. Whether a running job is
// borrowing (started beyond a quota with `borrow: true`) is judged as it
// starts and holds until it ends.
// NOT thread-safe: the head's event loop owns it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include <boost/container/flat_map.hpp>
#include <boost/container/flat_set.hpp>

#include "cluster.pb.h"
#include "daemon/head/job_table.h"
#include "daemon/head/queue_policy/fair_share.h"
#include "daemon/head/queue_policy/quotas.h"

namespace clusterd {

// What the whole gang holds: resources_per_worker times num_workers.
ResourceSet JobAmounts(const JobSpec& spec);

class RunningCharges : public JobEvents {
 public:
  // The groups a user is in (the identity layer's); none when unset.
  using GroupsFn = std::function<std::vector<std::string>(const std::string& user)>;

  // REQUIRES: both outlive this object.
  RunningCharges(FairShare* fair_share, Quotas* quotas) : fair_share_(fair_share), quotas_(quotas) {}
  void SetGroups(GroupsFn groups) { groups_ = std::move(groups); }

  void OnJobAdded(TrackedJob& job) override { Update(job); }
  void OnStateChanged(TrackedJob& job, JobState from) override { Update(job); }
  void OnJobRemoved(const TrackedJob& job) override { Uncharge(job.seq); }

  // Who a job of `owner` is held against: the owner ("admin" for a job
  // without one), then their groups.
  std::vector<std::string> HoldersOf(const std::string& owner) const;
  // Runs beyond its user's or a group's quota (it was started so, with borrow: true).
  bool IsBorrowing(const TrackedJob& job) const;
  // The RUNNING jobs, by seq. Flat, as the job table's timed index is:
  // every reservation walks all of it, and a tree's walk is a cache miss
  // a job.
  const boost::container::flat_map<uint64_t, TrackedJob*>& running() const { return running_; }

 private:
  struct Charge {
    std::string owner;
    std::vector<std::string> holders;
    ResourceSet amounts;
  };
  void Update(TrackedJob& job);
  void Uncharge(uint64_t seq);

  FairShare* fair_share_;
  Quotas* quotas_;
  GroupsFn groups_;
  std::unordered_map<uint64_t, Charge> charges_;  // by seq
  boost::container::flat_map<uint64_t, TrackedJob*> running_;
  // The seqs of the borrowing jobs among them, apart: each preempting
  // decision asks of every running job, and few borrow, so a search of a
  // short array answers where a charge's lookup was a cache miss a job.
  boost::container::flat_set<uint64_t> borrowing_;
};

}  // namespace clusterd
