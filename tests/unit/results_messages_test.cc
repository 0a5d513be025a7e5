// What the results uploader tells the head (daemon/agent/results_messages.h).
#include <catch2/catch.hpp>

#include "daemon/agent/results_messages.h"

using namespace clusterd;

TEST_CASE("a checkpoint's epoch is the number its folder's name ends in", "[results_messages]") {
  CHECK(CheckpointEpoch("checkpoint_000004") == 4);
  CHECK(CheckpointEpoch("checkpoint_0") == 0);
  CHECK(CheckpointEpoch("checkpoint_123456789012345678") == 123456789012345678);
  CHECK(CheckpointEpoch("checkpoint_1234567890123456789") == -1);  // past 18 digits
  CHECK(CheckpointEpoch("checkpoint_") == -1);
  CHECK(CheckpointEpoch("checkpoint_12a") == -1);
  CHECK(CheckpointEpoch("checkpoint_-1") == -1);
  CHECK(CheckpointEpoch("ckpt_000004") == -1);
  CHECK(CheckpointEpoch("") == -1);
}

TEST_CASE("the head hears a checkpoint stored, not stored and why, or late, with its epoch", "[results_messages]") {
  const CheckpointStored stored =
      CheckpointStoredMessage("job-1", 2, "checkpoint_000005", "m-123", 4096, 1024).checkpoint_stored();
  CHECK(stored.job_id() == "job-1");
  CHECK(stored.attempt() == 2);
  CHECK(stored.name() == "checkpoint_000005");
  CHECK(stored.epoch() == 5);
  CHECK(stored.manifest_id() == "m-123");
  CHECK(stored.bytes() == 4096);
  CHECK(stored.sent_bytes() == 1024);
  CHECK(stored.error().empty());

  const CheckpointStored not_stored =
      CheckpointNotStoredMessage("job-1", 2, "checkpoint_000006", "escape: an absolute symlink").checkpoint_stored();
  CHECK(not_stored.name() == "checkpoint_000006");
  CHECK(not_stored.epoch() == 6);
  CHECK(not_stored.manifest_id().empty());  // nothing the head could restore
  CHECK(not_stored.error() == "escape: an absolute symlink");

  const CheckpointStored late = CheckpointLateMessage("job-1", 2, "checkpoint_000007", 300).checkpoint_stored();
  CHECK(late.name() == "checkpoint_000007");
  CHECK(late.epoch() == 7);
  CHECK(late.manifest_id().empty());
  CHECK(late.error().find("still being stored 0.3 s after rank 0 exited (final_checkpoint_wait_ms)") !=
        std::string::npos);

  const ResultsPending pending = ResultsPendingMessage("job-1", 2, "checkpoint_000006", 10, 20).results_pending();
  CHECK(pending.job_id() == "job-1");
  CHECK(pending.attempt() == 2);
  CHECK(pending.checkpoint() == "checkpoint_000006");
  CHECK(pending.done_bytes() == 10);
  CHECK(pending.total_bytes() == 20);
}
