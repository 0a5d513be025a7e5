// What the results uploader (results_uploader.h) tells the head about rank
// 0's results, as agent messages: a checkpoint stored, or not stored and
// why (the job's record says so, not only this node's log), and how far a
// checkpoint an exit waits for has got. Each names the checkpoint and its
// epoch, taken from its folder's name.
#pragma once

#include <cstdint>
#include <string>

#include "agent.pb.h"

namespace clusterd {

// "checkpoint_000004" -> 4; -1 for any other name.
int64_t CheckpointEpoch(const std::string& name);

// Checkpoint `name` of the attempt is stored as `manifest_id`: `bytes` in
// all, of which `sent_bytes` were not in the store already.
AgentMessage CheckpointStoredMessage(const std::string& job_id, int attempt, const std::string& name,
                                     const std::string& manifest_id, int64_t bytes, int64_t sent_bytes);
// Checkpoint `name` of the attempt is not stored (or not in time), because of `error`.
AgentMessage CheckpointNotStoredMessage(const std::string& job_id, int attempt, const std::string& name,
                                        const std::string& error);
// Rank 0's exit waited `final_wait_ms` (final_checkpoint_wait_ms) for
// checkpoint `name` and goes without it: the job ends with the one stored before.
AgentMessage CheckpointLateMessage(const std::string& job_id, int attempt, const std::string& name,
                                   int64_t final_wait_ms);
// An exit of the attempt waits for `checkpoint`, `done` of `total` bytes sent so far.
AgentMessage ResultsPendingMessage(const std::string& job_id, int attempt, const std::string& checkpoint,
                                   int64_t done, int64_t total);

}  // namespace clusterd
