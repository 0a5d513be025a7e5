#include "daemon/agent/upload_retry_policy.h"

#include <algorithm>

#include "common/storage/tree_transfer.h"

namespace clusterd {

bool WorthRetrying(const Status& status) {
  return status.code() == Status::Code::kUnavailable || status.code() == Status::Code::kUnauthenticated;
}

UploadRetryPolicy::Decision UploadRetryPolicy::OnFailure(UploadTask& task, const Status& failed, Micros now,
                                                          bool stopping) const {
  if (task.tries == 0) task.failing_since = now;
  Decision decision;
  // A program may go on writing into a checkpoint for a moment after
  // reporting it: one that changed is tried again once it settles, rather
  // than given up at once and the job left with none stored.
  if (!stopping && ChangedUnderUpload(failed) && task.changed < kChangedTries) {
    decision.action = Action::kChangedTryAgain;
    decision.wait_ms = kChangedRetryMs;
    decision.first = task.changed++ == 0;
    return decision;
  }
  if (!stopping && WorthRetrying(failed) && now - task.failing_since < Micros{kGiveUpAfterMs} * 1000) {
    decision.action = Action::kUnreachableTryAgain;
    decision.wait_ms = retry_ms_;
    decision.first = task.tries++ == 0;
    return decision;
  }
  return decision;
}

void UploadRetryPolicy::Waited(bool nudged) { retry_ms_ = nudged ? kFirstRetryMs : std::min(retry_ms_ * 2, kMaxRetryMs); }

}  // namespace clusterd
