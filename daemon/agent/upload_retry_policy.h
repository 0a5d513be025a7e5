// When the results uploader (results_uploader.h) tries a failed upload
// again, and how long it waits first. A store out of reach (the head
// restarting, a network cut) is tried again, backing off from
// kFirstRetryMs to kMaxRetryMs, for up to kGiveUpAfterMs since the task's
// first failure (an S3 endpoint that never answers must not hold a job's
// end for ever); a Nudge (the head is back) starts the back-off over. Files
// that changed while they were sent (a program that goes on writing into a
// checkpoint it reported) are tried again kChangedTries times,
// kChangedRetryMs apart. Anything else, or anything while the uploader
// stops, is given up. Kept apart from the sending so that these rules are
// tested on their own. Not thread-safe: one per worker thread.
#pragma once

#include "common/clock.h"
#include "common/status.h"
#include "daemon/agent/upload_queue.h"

namespace clusterd {

class UploadRetryPolicy {
 public:
  static constexpr int kFirstRetryMs = 200;
  static constexpr int kMaxRetryMs = 5000;
  static constexpr int kGiveUpAfterMs = 10 * 60 * 1000;
  static constexpr int kChangedTries = 5;
  static constexpr int kChangedRetryMs = 1000;

  enum class Action { kGiveUp, kChangedTryAgain, kUnreachableTryAgain };
  struct Decision {
    Action action = Action::kGiveUp;
    int wait_ms = 0;     // before the next try
    bool first = false;  // the task's first try again of this kind (worth a line in the log)
  };

  // What to do with `task`, which failed with `failed` at `now`; counts the
  // failure in the task (tries, changed, failing_since).
  Decision OnFailure(UploadTask& task, const Status& failed, Micros now, bool stopping) const;
  // The wait of an unreachable try again is over: the next one waits twice
  // as long, up to kMaxRetryMs, unless a nudge ended it.
  void Waited(bool nudged);
  // An upload went through: the next outage backs off from the start.
  void Succeeded() { retry_ms_ = kFirstRetryMs; }
  int retry_ms() const { return retry_ms_; }

 private:
  int retry_ms_ = kFirstRetryMs;
};

// What a later try may fix: the store was out of reach (gRPC's UNAVAILABLE
// or a deadline), or another head answered on its address for a while (a
// wrong token: the agent's link waits for the right one too). Anything else
// (a file gone, a refusal) would fail again.
bool WorthRetrying(const Status& status);

}  // namespace clusterd
