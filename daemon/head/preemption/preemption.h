// Preemption (docs/SHARING.md "Preemption"): what happens to the running
// jobs that make room for a blocked pending one. Placement asks, through
// its RoomMaker, for room for the first job that must wait; this chooses
// the victims (victim_choice.h), journals each one's notice and deadline
// before its nodes hear of it, tells its nodes (PreemptRanks: the ranks
// see the deadline), ends its attempt at the deadline (SIGTERM, the job's
// preemption_grace_s, SIGKILL) or as soon as a rank of it exits, and once
// its ranks are down puts it back into the queue with its id, to resume
// from its newest stored checkpoint (once its node has stored the one rank
// 0 reported last: resume_wait.h). Preemptions are counted apart from
// failures. Separate from the attempt lifecycle, which ends attempts it is
// told to end, and from the queue policy, which orders the queue.
// NOT thread-safe: the head's event loop owns it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "agent.pb.h"
#include "cluster.pb.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/status.h"
#include "daemon/head/job_attempts.h"
#include "daemon/head/job_launch.h"
#include "daemon/head/job_table.h"
#include "daemon/head/node_table.h"
#include "daemon/head/preemption/resume_wait.h"
#include "daemon/head/preemption/victim_choice.h"

namespace clusterd {

class Preemption {
 public:
  // What the queue policy and the users know, injected so that this class
  // is tested without them. Unset: every job has priority 0, none borrows,
  // nobody is an admin.
  struct Policy {
    std::function<int64_t(const JobSpec&)> priority;
    std::function<bool(const TrackedJob&)> borrowing;  // beyond its quota (the queue policy's IsBorrowing)
    std::function<bool(const std::string& user)> is_admin;
  };
  // Sends a command to a node's agent; false when the node has no stream.
  using SendFn = std::function<bool(const std::string& node_id, const HeadMessage&)>;

  // REQUIRES: every pointer outlives this object.
  Preemption(const Clock* clock, const Config& config, JobTable* table, NodeTable* nodes, JobAttempts* attempts,
             const JobLaunch* launch, SendFn send);
  void set_policy(Policy policy) { policy_ = std::move(policy); }
  // Told of each notice's deadline as it is set, between the head's ticks:
  // the notice is shorter than the ticks' period, and SIGTERM goes at it.
  void set_tick_wanted(std::function<void(Micros)> fn) { tick_wanted_ = std::move(fn); }

  // Whether `spec`, submitted by `owner`, may ask what it asks of
  // preemption: a grace within preemption_grace_max_s, and preemptible:
  // false above preemption_exempt_max_priority only for an admin (not
  // checked for an empty owner: a check before the submit that knows it).
  Status CheckSpec(const JobSpec& spec, const std::string& owner) const;

  // Placement's RoomMaker: the running jobs being preempted to make room
  // for `blocked`, noticed now or already on their way out; empty when
  // preemption cannot make room. Idempotent: asked again for the same
  // job, it notices nobody new while those under way free enough.
  std::vector<std::string> MakeRoom(TrackedJob& blocked);

  // A rank of a job under notice exited (it checkpointed and left, or
  // crashed): its attempt ends as preempted, not as a success or failure,
  // the other ranks told to stop. Called before the attempt hears of it.
  void BeforeRankExited(const std::string& node_id, const RankExited& message);
  // A node died: an attempt under notice with a rank there ends as
  // preempted (it was ending anyway), not as a failure. Called before the
  // attempts hear of the death.
  void BeforeNodeDead(const NodeInfo& node);
  // Deadlines: the attempts whose deadline passed are ended (their ranks
  // get SIGTERM, then their grace, then SIGKILL); `wake` learns of those ahead.
  void Tick(Micros now, NextWake* wake);
  // The attempt of a preempted job is over, all its ranks down (the
  // attempt lifecycle calls it): back into the queue with its id, counted,
  // once the checkpoint its rank 0 reported last is settled (ResumeWait).
  void Requeue(TrackedJob& job);
  // A checkpoint the head took from rank 0's node (JobResults): true when
  // a job waiting for it to resume was queued.
  bool OnCheckpointSettled(TrackedJob& job, const CheckpointStored& message) {
    return resume_wait_.OnCheckpointSettled(job, message);
  }
  // A node died: true when jobs waiting for a checkpoint from it were queued.
  bool AfterNodeDead(const NodeInfo& node) { return resume_wait_.OnNodeDead(node); }
  // After the journal's replay: jobs that were under notice when the head
  // stopped keep their deadline (one passed ends the attempt once its
  // ranks are adopted, never leaving it beside the job it made room for);
  // one whose ranks do not come back is retried without counting it.
  void Restored();
  // A node (re)registered: the ranks under notice there hear of it again
  // (a notice sent while it was away was lost).
  void OnNodeRegistered(const NodeInfo& node);

  // Preemptions in the jobs the head holds, and since it started (Prometheus).
  int64_t total() const { return total_; }

  // preemption_grace_s as it applies to `spec`, ms.
  int GraceMs(const JobSpec& spec) const;

 private:
  int64_t PriorityOf(const JobSpec& spec) const { return policy_.priority ? policy_.priority(spec) : 0; }
  bool Preemptible(const TrackedJob& job) const;
  // The running gangs that could free room for a job of `below_priority`,
  // as victim choice sees them: those ending already, and the preemptible
  // ones of a lower priority or borrowing beyond their quota.
  std::vector<RunningGang> Running(int64_t below_priority) const;
  // Journals the notice on the victim's record, then tells its nodes.
  void Notice(TrackedJob& victim, const TrackedJob& blocked);
  void SendNotice(const TrackedJob& victim, const std::string& only_node = "");
  // Ends the attempt under notice: its ranks get SIGTERM and its grace.
  void EndAttempt(TrackedJob& job, const std::string& why);

  const Clock* clock_;
  const Config& config_;
  JobTable* table_;
  NodeTable* nodes_;
  JobAttempts* attempts_;
  SendFn send_;
  ResumeWait resume_wait_;
  Policy policy_;
  std::function<void(Micros)> tick_wanted_;
  // Jobs under notice -> their deadline (monotonic micros).
  std::map<std::string, Micros> deadlines_;
  int64_t total_ = 0;
};

}  // namespace clusterd
