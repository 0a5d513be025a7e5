#include "daemon/agent/results_messages.h"

#include <fmt/format.h>

namespace clusterd {

int64_t CheckpointEpoch(const std::string& name) {
  const std::string prefix = "checkpoint_";
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return -1;
  std::string digits = name.substr(prefix.size());
  if (digits.empty() || digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoll(digits);
}

AgentMessage CheckpointStoredMessage(const std::string& job_id, int attempt, const std::string& name,
                                     const std::string& manifest_id, int64_t bytes, int64_t sent_bytes) {
  AgentMessage message;
  CheckpointStored* stored = message.mutable_checkpoint_stored();
  stored->set_job_id(job_id);
  stored->set_attempt(attempt);
  stored->set_manifest_id(manifest_id);
  stored->set_name(name);
  stored->set_epoch(CheckpointEpoch(name));
  stored->set_bytes(bytes);
  stored->set_sent_bytes(sent_bytes);
  return message;
}

AgentMessage CheckpointNotStoredMessage(const std::string& job_id, int attempt, const std::string& name,
                                        const std::string& error) {
  AgentMessage message;
  CheckpointStored* not_stored = message.mutable_checkpoint_stored();
  not_stored->set_job_id(job_id);
  not_stored->set_attempt(attempt);
  not_stored->set_name(name);
  not_stored->set_epoch(CheckpointEpoch(name));
  not_stored->set_error(error);
  return message;
}

AgentMessage CheckpointLateMessage(const std::string& job_id, int attempt, const std::string& name,
                                   int64_t final_wait_ms) {
  return CheckpointNotStoredMessage(
      job_id, attempt, name,
      fmt::format("still being stored {} s after rank 0 exited (final_checkpoint_wait_ms): the job ended with the "
                  "checkpoint stored before it",
                  final_wait_ms / 1000.0));
}

AgentMessage ResultsPendingMessage(const std::string& job_id, int attempt, const std::string& checkpoint,
                                   int64_t done, int64_t total) {
  AgentMessage message;
  ResultsPending* pending = message.mutable_results_pending();
  pending->set_job_id(job_id);
  pending->set_attempt(attempt);
  pending->set_checkpoint(checkpoint);
  pending->set_done_bytes(done);
  pending->set_total_bytes(total);
  return message;
}

}  // namespace clusterd
