// The results uploader's queue (daemon/agent/upload_queue.h) on its own:
// what waits, what each attempt holds, and what a worker takes next.
#include <catch2/catch.hpp>

#include "daemon/agent/upload_queue.h"

using namespace clusterd;

namespace {

UploadTask Checkpoint(const std::string& job_id, int attempt, const std::string& name,
                      const std::string& snapshot_of = "/ckpt") {
  UploadTask task;
  task.job_id = job_id;
  task.attempt = attempt;
  task.root = snapshot_of + "/.uploading";
  task.paths = {name};
  task.snapshot_of = snapshot_of;
  task.bytes_per_s = 1 << 20;
  return task;
}

UploadTask Outputs(const std::string& job_id, int attempt, std::optional<Micros> report_by = std::nullopt) {
  UploadTask task;
  task.exit.mutable_rank_exited()->set_job_id(job_id);
  task.exit.mutable_rank_exited()->set_attempt(attempt);
  task.job_id = job_id;
  task.attempt = attempt;
  task.outputs = true;
  if (!report_by) task.paths = {"model.pt"};
  task.report_by = report_by;
  return task;
}

}  // namespace

TEST_CASE("a newer checkpoint of an attempt replaces the one waiting, not another attempt's", "[upload_queue]") {
  UploadQueue queue;
  CHECK(queue.AddCheckpoint(Checkpoint("job-1", 0, "checkpoint_000001")).empty());
  CHECK(queue.AddCheckpoint(Checkpoint("job-2", 0, "checkpoint_000001", "/other")).empty());
  std::vector<UploadTask> replaced = queue.AddCheckpoint(Checkpoint("job-1", 0, "checkpoint_000002"));
  REQUIRE(replaced.size() == 1);
  CHECK(replaced[0].paths.front() == "checkpoint_000001");
  CHECK(queue.PendingCheckpoint("job-1", 0) == "checkpoint_000002");
  CHECK(queue.PendingCheckpoint("job-2", 0) == "checkpoint_000001");
  // The same folder reported again takes the waiting one's place, but
  // shares its snapshot: nothing to release.
  CHECK(queue.AddCheckpoint(Checkpoint("job-1", 0, "checkpoint_000002")).empty());
  // Oldest first: job-2's, then job-1's newest; then none.
  CHECK(queue.TakeNext(false, 0)->job_id == "job-2");
  CHECK(queue.TakeNext(false, 0)->paths.front() == "checkpoint_000002");
  CHECK_FALSE(queue.TakeNext(false, 0));
}

TEST_CASE("outputs wait for their own attempt's checkpoints, queued or under way, and never another's",
          "[upload_queue]") {
  UploadQueue queue;
  queue.AddCheckpoint(Checkpoint("job-1", 0, "checkpoint_000001"));
  queue.AddOutputs(Outputs("job-1", 0));
  queue.AddOutputs(Outputs("job-2", 0));
  CHECK(queue.AnyQueued(true));
  // job-1's outputs wait; job-2's, queued after them, go first.
  std::optional<UploadTask> next = queue.TakeNext(true, 0);
  REQUIRE(next);
  CHECK(next->job_id == "job-2");
  CHECK_FALSE(queue.HasNext(true, 0));
  // Under way, the checkpoint still holds them back; stored, it does not.
  UploadTask checkpoint = *queue.TakeNext(false, 0);
  queue.StartCheckpoint(checkpoint);
  CHECK_FALSE(queue.HasNext(true, 0));
  CHECK(queue.PendingCheckpoint("job-1", 0) == "checkpoint_000001");
  queue.FinishCheckpoint();
  CHECK(queue.PendingCheckpoint("job-1", 0).empty());
  REQUIRE(queue.HasNext(true, 0));
  CHECK(queue.TakeNext(true, 0)->job_id == "job-1");
  CHECK_FALSE(queue.AnyQueued(true));
}

TEST_CASE("an exit held for its checkpoints goes once they are stored or its final wait is over", "[upload_queue]") {
  UploadQueue queue;
  queue.AddCheckpoint(Checkpoint("job-1", 0, "checkpoint_000003"));
  queue.AddOutputs(Outputs("job-1", 0, /*report_by=*/10'000));
  queue.AddOutputs(Outputs("job-3", 0, /*report_by=*/5'000));
  CHECK(queue.ExitHeldFor("job-1", 0));
  CHECK_FALSE(queue.ExitHeldFor("job-1", 1));
  CHECK(queue.NextDue(true) == Micros{5'000});
  CHECK_FALSE(queue.NextDue(false));  // the checkpoints' worker waits for no deadline
  // job-3 has no checkpoint to wait for: it goes now.
  CHECK(queue.TakeNext(true, 0)->job_id == "job-3");
  CHECK(queue.NextDue(true) == Micros{10'000});
  CHECK_FALSE(queue.HasNext(true, 9'999));
  REQUIRE(queue.HasNext(true, 10'000));
  std::optional<UploadTask> late = queue.TakeNext(true, 10'000);
  REQUIRE(late);
  CHECK(late->job_id == "job-1");
  CHECK(queue.PendingCheckpoint("job-1", 0) == "checkpoint_000003");  // what the head is told is late
}

TEST_CASE("an attempt is held while a checkpoint or outputs of it are queued or under way", "[upload_queue]") {
  UploadQueue queue;
  CHECK_FALSE(queue.Holds("job-1", 0));
  queue.AddCheckpoint(Checkpoint("job-1", 0, "checkpoint_000001"));
  CHECK(queue.Holds("job-1", 0));
  CHECK_FALSE(queue.Holds("job-1", 1));
  CHECK(queue.HeldRanks().empty());  // a checkpoint holds no rank's exit
  UploadTask checkpoint = *queue.TakeNext(false, 0);
  queue.StartCheckpoint(checkpoint);
  CHECK(queue.Holds("job-1", 0));
  CHECK(queue.CheckpointUnderWay("job-1", 0));
  queue.FinishCheckpoint();
  CHECK_FALSE(queue.Holds("job-1", 0));
  CHECK_FALSE(queue.CheckpointUnderWay("job-1", 0));

  UploadTask outputs = Outputs("job-2", 1);
  outputs.exit.mutable_rank_exited()->set_rank(0);
  queue.AddOutputs(outputs);
  std::vector<LiveRank> held = queue.HeldRanks();
  REQUIRE(held.size() == 1);
  CHECK(held[0].job_id() == "job-2");
  CHECK(held[0].attempt() == 1);
  UploadTask taken = *queue.TakeNext(true, 0);
  queue.StartOutputs(taken);
  CHECK(queue.Holds("job-2", 1));
  CHECK(queue.HeldRanks().size() == 1);  // under way, still running for the head
  queue.FinishOutputs();
  CHECK_FALSE(queue.Holds("job-2", 1));
  CHECK(queue.HeldRanks().empty());
}

TEST_CASE("a failed task goes back to the front unless a newer checkpoint of its attempt came meanwhile",
          "[upload_queue]") {
  UploadQueue queue;
  queue.AddOutputs(Outputs("job-2", 0));
  UploadTask failed = Checkpoint("job-1", 0, "checkpoint_000001");
  CHECK_FALSE(queue.Requeue(failed));
  CHECK(queue.TakeNext(false, 0)->paths.front() == "checkpoint_000001");
  // A newer one of another folder replaced it: dropped, and handed back for its snapshot.
  queue.AddCheckpoint(Checkpoint("job-1", 0, "checkpoint_000002"));
  std::optional<UploadTask> dropped = queue.Requeue(failed);
  REQUIRE(dropped);
  CHECK(dropped->paths.front() == "checkpoint_000001");
  // The same folder reported again: dropped, its snapshot shared.
  CHECK_FALSE(queue.Requeue(Checkpoint("job-1", 0, "checkpoint_000002")));
  CHECK(queue.TakeNext(false, 0)->paths.front() == "checkpoint_000002");
  CHECK_FALSE(queue.TakeNext(false, 0));
}

TEST_CASE("a snapshot is in use while a waiting task or the upload under way is sent from it", "[upload_queue]") {
  UploadQueue queue;
  const UploadTask first = Checkpoint("job-1", 0, "checkpoint_000001");
  CHECK_FALSE(queue.SharesSnapshot(first));
  CHECK(queue.SnapshotsInUse("/ckpt").empty());
  queue.AddCheckpoint(first);
  queue.AddCheckpoint(Checkpoint("job-2", 0, "checkpoint_000007", "/other"));
  CHECK(queue.SharesSnapshot(first));
  CHECK_FALSE(queue.SharesSnapshot(Checkpoint("job-1", 0, "checkpoint_000001", "/elsewhere")));
  CHECK(queue.SnapshotsInUse("/ckpt") == std::set<std::string>{"checkpoint_000001"});
  queue.StartCheckpoint(*queue.TakeNext(false, 0));
  queue.AddCheckpoint(Checkpoint("job-1", 0, "checkpoint_000002"));
  CHECK(queue.SharesSnapshot(first));  // under way
  CHECK(queue.SnapshotsInUse("/ckpt") == std::set<std::string>{"checkpoint_000001", "checkpoint_000002"});
  queue.FinishCheckpoint();
  CHECK_FALSE(queue.SharesSnapshot(first));
  CHECK(queue.SnapshotsInUse("/other") == std::set<std::string>{"checkpoint_000007"});
}

TEST_CASE("rank 0's exit unpaces its attempt's queued checkpoints only", "[upload_queue]") {
  UploadQueue queue;
  queue.AddCheckpoint(Checkpoint("job-1", 0, "checkpoint_000001"));
  queue.AddCheckpoint(Checkpoint("job-2", 0, "checkpoint_000001", "/other"));
  queue.Unpace("job-1", 0);
  CHECK(queue.TakeNext(false, 0)->bytes_per_s == 0);
  CHECK(queue.TakeNext(false, 0)->bytes_per_s == 1 << 20);
}
