// The head's queue of job ids waiting to be placed, in the order the queue
// policy says they start (docs/SHARING.md): priority first, higher first;
// within a priority, among users, the one standing first in fair share
// (least usage of their share, fair_share.h); within a user, oldest first
// (the job's seq: a job requeued by a retry or a preemption keeps its
// age). With one user and one priority that is plain first come, first
// served.
//
// Kept as one FIFO per (priority, user), so that choosing the next job
// looks at the users of the highest priority only, never at every job:
// 10,000 pending jobs of 100 users cost 100 comparisons a pick.
//
// The queue holds ids, not jobs: an entry may outlive its job's wait (the
// job started, was stopped or deleted elsewhere) and is dropped when it is
// met. An id is in it once however often it is pushed.
// NOT thread-safe: the head's event loop owns it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <queue>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "daemon/head/queue_policy/fair_share.h"

namespace clusterd {

// What places a job in the queue; fixed for the job's life.
struct QueueKey {
  int priority = 0;
  std::string user;
  uint64_t seq = 0;  // its age: order of submission
};

class JobQueue {
  // Users' FIFOs (seq -> id) by priority, highest first.
  using UserFifos = std::unordered_map<std::string, std::map<uint64_t, std::string>>;
  using Levels = std::map<int, UserFifos, std::greater<int>>;

 public:
  // The reason a job waiting in the queue has on its record. What it waits
  // for is shown only (JobPlacement::ExplainWait): the journal keeps
  // "queued", so that the queue moving writes nothing.
  static constexpr const char* kReason = "queued";

  // The key of a job the table holds; nullopt for an id it does not hold.
  using KeyFn = std::function<std::optional<QueueKey>(const std::string& job_id)>;
  // Where a user stands in fair share now (less first); unset: all equal.
  using StandingFn = std::function<FairShareStanding(const std::string& user)>;
  // What a job adds to its user's standing once it runs: GPUs, CPUs.
  using LoadFn = std::function<std::pair<double, double>(const std::string& job_id)>;

  explicit JobQueue(KeyFn key) : key_(std::move(key)) {}
  // Without keys: plain FIFO, push_front before every job in it.
  JobQueue() = default;
  void SetFairShare(StandingFn standing, LoadFn load) {
    standing_ = std::move(standing);
    load_ = std::move(load);
    front_.reset();
  }
  // Fair share moved (time passed, a job started or ended): the next
  // front() picks again.
  void StandingsChanged() { front_.reset(); }

  // Both put the job where its key says: a retry's old age puts it before
  // newer jobs, as a strict FIFO's push_front did.
  void push_back(const std::string& job_id) { Insert(job_id, /*front=*/false); }
  void push_front(const std::string& job_id) { Insert(job_id, /*front=*/true); }
  // Drops front(). REQUIRES: !empty().
  void pop_front();
  // The job that starts next. REQUIRES: !empty().
  const std::string& front() const;
  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }
  // Whether any entry names the job: a hash lookup, not a walk of the queue.
  bool Contains(const std::string& job_id) const { return entries_.count(job_id) > 0; }
  // Drops the job's entry, wherever it is (a job started ahead of its turn).
  void Remove(const std::string& job_id);
  // Changes with every push and drop.
  uint64_t version() const { return version_; }
  // The ids that entered since the last call, in order; nullopt when more
  // than kPushedKept did (a look at the whole queue is then as cheap).
  static constexpr size_t kPushedKept = 64;
  std::optional<std::vector<std::string>> TakePushed();

  // The queue in the order it would start, each job as if started before
  // the next is picked (it adds to its user's standing). A snapshot: it
  // ends (Next gives null) once the queue changes.
  class Walk {
   public:
    explicit Walk(const JobQueue* queue);
    const std::string* Next();
    // The rest of the last job's user's jobs at its priority are passed
    // over (they wait behind it, as for a quota).
    void SkipRestOfUser() { last_.reset(); }

   private:
    struct Cursor {
      FairShareStanding standing;
      std::map<uint64_t, std::string>::const_iterator at, end;
    };
    struct Later {
      bool operator()(const Cursor& a, const Cursor& b) const;
    };
    void EnterLevel();

    const JobQueue* queue_;
    uint64_t version_;
    Levels::const_iterator level_;
    std::priority_queue<Cursor, std::vector<Cursor>, Later> users_;
    std::optional<Cursor> last_;  // the last job's user, advanced past it: back among users_ at the next call
  };
  Walk InOrder() const { return Walk(this); }

 private:
  void Insert(const std::string& job_id, bool front);
  FairShareStanding StandingOf(const std::string& user) const {
    return standing_ ? standing_(user) : FairShareStanding{};
  }

  KeyFn key_;
  StandingFn standing_;
  LoadFn load_;
  Levels levels_;
  std::unordered_map<std::string, QueueKey> entries_;
  uint64_t version_ = 0;
  std::vector<std::string> pushed_;  // since the last TakePushed, at most kPushedKept
  bool pushed_overflow_ = false;
  // Without keys: the ages push_front and push_back give, out from the middle.
  uint64_t next_front_ = uint64_t{1} << 62;
  uint64_t next_back_ = (uint64_t{1} << 62) + 1;
  // front() as last picked: (user, seq) at the first level.
  mutable std::optional<std::pair<std::string, uint64_t>> front_;
};

}  // namespace clusterd
