// The INFEASIBLE jobs (DESIGN rule 3: a gang no live node set can hold is
// reported with the reason, not left pending), grouped by what their gang
// asks. Whether a gang fits depends on its shape alone, so nodes that join
// or leave judge each shape once, not each of 100,000 jobs that ask alike.
// Separate from placement: the queue places one job at a time, this looks
// again at every job that could not fit at all whenever the nodes change.
// A listener of the job table: it keeps every INFEASIBLE job in its
// shape's group and no other.
// NOT thread-safe: the head's event loop owns it.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "daemon/head/job_table.h"
#include "daemon/head/node_table.h"
#include "daemon/head/scheduler.h"

namespace clusterd {

class InfeasibleShapes : public JobEvents {
 public:
  // REQUIRES: both outlive this object.
  InfeasibleShapes(JobTable* table, NodeTable* nodes) : table_(table), nodes_(nodes) {}

  // A job restored INFEASIBLE joins its shape; the next Rejudge judges it
  // against the nodes that have registered by then.
  void OnJobAdded(TrackedJob& job) override;
  void OnStateChanged(TrackedJob& job, JobState from) override;

  // A job still INFEASIBLE was judged again: only its shape's reason
  // changes (nothing is journalled).
  void StillInfeasible(TrackedJob& job, const std::string& reason) { Enter(job, reason); }
  // The reason shown for an INFEASIBLE job: its shape's as last judged (the
  // record keeps the reason it had when it became INFEASIBLE: nodes coming
  // and going write nothing per job). Null when it has none.
  const std::string* ReasonOf(const TrackedJob& job) const;

  // A node joined: the shapes of which it can hold a worker are judged now
  // (every worker runs on one node, so one that holds none cannot make a
  // job fit), and the jobs of those that fit are queued again, PENDING, in
  // submission order. The others' reasons (which count the live nodes) are
  // brought up to date by the next Rejudge, once for however many nodes
  // joined.
  void OnNodeJoined(const NodeInfo& node);
  // Nodes came or went: every reason counts them as they were.
  void MarkStale() { stale_ = true; }
  // If nodes came or went since the last look: every shape judged again,
  // the jobs of those that fit queued again. True when it looked.
  bool RejudgeIfStale();
  size_t size() const { return shapes_.size(); }

 private:
  struct Shape {
    GangRequest gang;
    std::map<uint64_t, std::string> jobs;  // by seq: submission order
    std::string reason;                    // as last judged
  };
  using Shapes = std::map<std::string, Shape>;
  using FreedJobs = std::map<uint64_t, std::string>;  // by seq

  void Enter(TrackedJob& job, const std::string& reason);
  void Leave(TrackedJob& job);
  // Judges a shape again against the live nodes: when it fits an idle
  // cluster now, it leaves shapes_ and its jobs go to `freed`; else only the
  // shape's reason changes. Returns the next shape.
  Shapes::iterator Judge(Shapes::iterator shape, FreedJobs* freed);
  // Queues the freed jobs again, PENDING, in submission order.
  void RequeueFreed(const FreedJobs& freed);

  JobTable* table_;
  NodeTable* nodes_;
  Shapes shapes_;  // by ShapeKey (job_shape.h)
  bool stale_ = false;
};

}  // namespace clusterd
