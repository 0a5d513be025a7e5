// Which blobs of the head's store a node token may fetch (docs/SHARING.md,
// "Users and tokens"): those of the jobs whose current attempt the head
// launched on a node that registered with that token, while the attempt
// runs there (their package, the checkpoint it restores). A node token is
// a worker's whole credential: a worker that is taken over must not read
// every user's packages, checkpoints and outputs. A node registered with
// the cluster's token (an admin's) is not tracked: that token fetches
// anything, as it always did.
//
// The head's loop says what it registers and launches; the store's gRPC
// threads ask. Thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"

namespace clusterd {

class NodeBlobAccess {
 public:
  // `node_id` registered with node token `token_id` ("": another kind of
  // token, which this class does not restrict). A node that registers
  // again keeps what it was launched: its fetches may still be under way.
  void NodeRegistered(const std::string& node_id, const std::string& token_id);
  // The head sent `node_id` the ranks of `job_id`'s `attempt`: that node
  // may fetch the job's blobs. An earlier attempt's nodes lose them.
  void Launched(const std::string& node_id, const std::string& job_id, int attempt);
  // A rank of that attempt ended on `node_id`: a node fetches what its
  // ranks need before any starts, so the node needs the blobs no more.
  void RanksEnded(const std::string& node_id, const std::string& job_id, int attempt);

  // OK when a node of `token_id` runs an attempt of one of `holding_jobs`
  // (the jobs whose package, checkpoints or outputs hold blob `blob_id`).
  // Else PermissionDenied naming the rule, not whose the blob is.
  Status MayFetch(const std::string& token_id, const std::string& blob_id,
                  const std::vector<std::string>& holding_jobs) const;

 private:
  // REQUIRES: mutex_ held.
  void DropLocked(const std::string& node_id, const std::string& job_id);

  mutable std::mutex mutex_;
  std::map<std::string, std::string> token_of_node_;            // node tokens only
  std::map<std::string, std::set<std::string>> nodes_of_token_;
  std::map<std::string, std::map<std::string, int>> launched_;  // node -> job -> attempt
  std::map<std::string, std::set<std::string>> nodes_of_job_;   // the inverse of launched_
};

}  // namespace clusterd
