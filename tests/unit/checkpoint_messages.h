// Agent messages about a job's checkpoints, as a node sends them, for the
// head's tests.
#pragma once

#include <cstdint>
#include <string>

#include "agent.pb.h"

namespace clusterd::testing {

// Rank 0's node stored checkpoint_00000<epoch> of `attempt` as `manifest`.
inline AgentMessage Stored(const std::string& job, int attempt, const std::string& manifest, int64_t epoch) {
  AgentMessage m;
  auto* c = m.mutable_checkpoint_stored();
  c->set_job_id(job);
  c->set_attempt(attempt);
  c->set_manifest_id(manifest);
  c->set_name("checkpoint_00000" + std::to_string(epoch));
  c->set_epoch(epoch);
  c->set_bytes(100);
  return m;
}

// Rank 0's node gave up storing checkpoint_00000<epoch> of `attempt`: `why`.
inline AgentMessage NotStored(const std::string& job, int attempt, int64_t epoch, const std::string& why) {
  AgentMessage m = Stored(job, attempt, "", epoch);
  m.mutable_checkpoint_stored()->set_bytes(0);
  m.mutable_checkpoint_stored()->set_error(why);
  return m;
}

// A node's report that a launch failed: the store lacks checkpoint `manifest`.
inline AgentMessage NotRestored(const std::string& job, int attempt, int rank, const std::string& manifest) {
  AgentMessage m;
  auto* e = m.mutable_rank_exited();
  e->set_job_id(job);
  e->set_attempt(attempt);
  e->set_rank(rank);
  e->set_exit_code(127);
  e->set_error("restoring checkpoint: the head's store has no blob");
  e->set_unrestorable_checkpoint(manifest);
  return m;
}

}  // namespace clusterd::testing
