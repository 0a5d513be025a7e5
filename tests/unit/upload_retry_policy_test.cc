// When the results uploader tries a failed upload again
// (daemon/agent/upload_retry_policy.h), on its own: no store, no threads.
#include <catch2/catch.hpp>

#include "daemon/agent/upload_retry_policy.h"

using namespace clusterd;

namespace {

using Action = UploadRetryPolicy::Action;

// What tree_transfer reports for a file written into while it was sent.
Status Changed() { return Status::IOError("ckpt/w.bin changed while it was being uploaded"); }

}  // namespace

TEST_CASE("a store out of reach is tried again, backing off, until the give-up time since the first failure",
          "[upload_retry_policy]") {
  UploadRetryPolicy retries;
  UploadTask task;
  const Micros start = 5'000'000;
  std::vector<int> waits;
  Micros now = start;
  for (int i = 0; i < 8; ++i) {
    const auto decision = retries.OnFailure(task, Status::Unavailable("the head is away"), now, false);
    REQUIRE(decision.action == Action::kUnreachableTryAgain);
    CHECK(decision.first == (i == 0));  // said once in the log, not at every try
    waits.push_back(decision.wait_ms);
    retries.Waited(/*nudged=*/false);
    now += Micros{decision.wait_ms} * 1000;
  }
  CHECK(waits == std::vector<int>{200, 400, 800, 1600, 3200, 5000, 5000, 5000});
  CHECK(task.tries == 8);
  CHECK(task.failing_since == start);
  // A wrong token (another head on the address for a while) is worth trying again too.
  CHECK(retries.OnFailure(task, Status::Unauthenticated("bad token"), now, false).action ==
        Action::kUnreachableTryAgain);
  // The give-up time counts from the first failure, not the last.
  const Micros give_up = start + Micros{UploadRetryPolicy::kGiveUpAfterMs} * 1000;
  CHECK(retries.OnFailure(task, Status::Unavailable("away"), give_up - 1, false).action ==
        Action::kUnreachableTryAgain);
  CHECK(retries.OnFailure(task, Status::Unavailable("away"), give_up, false).action == Action::kGiveUp);
}

TEST_CASE("a nudge or a stored upload starts the back-off over", "[upload_retry_policy]") {
  UploadRetryPolicy retries;
  retries.Waited(false);
  retries.Waited(false);
  CHECK(retries.retry_ms() == 4 * UploadRetryPolicy::kFirstRetryMs);
  retries.Waited(/*nudged=*/true);
  CHECK(retries.retry_ms() == UploadRetryPolicy::kFirstRetryMs);
  retries.Waited(false);
  retries.Succeeded();
  CHECK(retries.retry_ms() == UploadRetryPolicy::kFirstRetryMs);
  for (int i = 0; i < 20; ++i) retries.Waited(false);
  CHECK(retries.retry_ms() == UploadRetryPolicy::kMaxRetryMs);
}

TEST_CASE("files that changed while they were sent are tried again a set number of times, then given up",
          "[upload_retry_policy]") {
  UploadRetryPolicy retries;
  UploadTask task;
  for (int i = 0; i < UploadRetryPolicy::kChangedTries; ++i) {
    const auto decision = retries.OnFailure(task, Changed(), 1'000'000 + i, false);
    REQUIRE(decision.action == Action::kChangedTryAgain);
    CHECK(decision.wait_ms == UploadRetryPolicy::kChangedRetryMs);
    CHECK(decision.first == (i == 0));
  }
  CHECK(task.changed == UploadRetryPolicy::kChangedTries);
  CHECK(task.tries == 0);  // not an outage: its back-off and give-up time are untouched
  CHECK(retries.retry_ms() == UploadRetryPolicy::kFirstRetryMs);
  CHECK(retries.OnFailure(task, Changed(), 2'000'000, false).action == Action::kGiveUp);
}

TEST_CASE("a failure a later try cannot fix, or any failure while stopping, is given up at once",
          "[upload_retry_policy]") {
  UploadRetryPolicy retries;
  UploadTask task;
  CHECK(retries.OnFailure(task, Status::NotFound("it is gone"), 0, false).action == Action::kGiveUp);
  CHECK(retries.OnFailure(task, Status::InvalidArgument("an absolute symlink"), 0, false).action == Action::kGiveUp);
  CHECK(retries.OnFailure(task, Status::IOError("disk read failed"), 0, false).action == Action::kGiveUp);
  CHECK(retries.OnFailure(task, Status::Unavailable("away"), 0, /*stopping=*/true).action == Action::kGiveUp);
  CHECK(retries.OnFailure(task, Changed(), 0, /*stopping=*/true).action == Action::kGiveUp);
  CHECK(task.tries == 0);
  CHECK(task.changed == 0);
}
