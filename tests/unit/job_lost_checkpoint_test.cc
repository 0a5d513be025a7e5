// A stored checkpoint the store lost (a piece gone bad on the head's disk,
// dropped as such), driven through HeadCore with fake agents and a real blob
// store: the node that cannot restore it says so, the head checks its own
// copy, drops it from the job's stored checkpoints and journals that, and
// the retry restores the one before.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "blob_store_dir.h"
#include "checkpoint_messages.h"
#include "common/sha256.h"
#include "head_harness.h"

using namespace clusterd;
using namespace clusterd::testing;
namespace fs = std::filesystem;

namespace {

// A 1-rank job running on node a, with checkpoint_000001 (c1) and
// checkpoint_000002 (c2) stored unless `stored` is false.
struct RunningJob {
  BlobStoreDir store;
  Harness h{store.blobs.get()};
  std::string id, c1, c2;
  explicit RunningJob(bool stored = true) {
    h.AddNode("a", 1);
    id = h.Submit(1, 1, PACK);
    if (!stored) return;
    c1 = store.Folder("epoch 1");
    c2 = store.Folder("epoch 2");
    h.From("a", Stored(id, 0, c1, 1));
    h.From("a", Stored(id, 0, c2, 2));
  }
};

}  // namespace

// A checkpoint whose piece the store has lost must not stay the newest
// stored, or every later attempt fails to restore it.
TEST_CASE("a checkpoint the store lost is dropped when a node cannot restore it and the retry restores the one before",
          "[jobs][results]") {
  BlobStoreDir store;
  Harness h(store.blobs.get());
  h.AddNode("a", 1);
  h.AddNode("b", 1);
  SubmitJobRequest request = h.Request(2, 1, STRICT_SPREAD, /*max_failures=*/3);
  request.mutable_spec()->mutable_restart_delay()->set_factor(1);  // retries 0 s apart
  const std::string id = h.Submit(request);
  h.AnswerPort("a", 29500);
  std::string c1 = store.Folder("epoch 1"), c2 = store.Folder("epoch 2");
  h.From("a", Stored(id, 0, c1, 1));
  h.From("a", Stored(id, 0, c2, 2));
  auto fail_attempt = [&](int attempt, const AgentMessage& first) {
    const AttemptInfo current = h.Job(id).attempts(attempt);
    h.From(current.ranks(0).node_name(), first);
    h.Exit(current.ranks(1).node_name(), id, attempt, 1, 0, 15);
    h.Advance(1000);
    const JobInfo job = h.Job(id);
    REQUIRE(job.attempts_size() == attempt + 2);
    h.AnswerPort(job.attempts(attempt + 1).ranks(0).node_name(), 29501 + attempt);
    return h.Launches(job.attempts(attempt + 1).ranks(0).node_name()).back();
  };
  AgentMessage crash;
  crash.mutable_rank_exited()->set_job_id(id);
  crash.mutable_rank_exited()->set_exit_code(1);
  REQUIRE(fail_attempt(0, crash).restore().manifest_id() == c2);

  // The store holds it whole: the node's trouble, not the checkpoint's.
  LaunchRanks next = fail_attempt(1, NotRestored(id, 1, 0, c2));
  CHECK(h.Job(id).stored_checkpoints_size() == 2);
  CHECK(next.restore().manifest_id() == c2);

  // Its piece goes bad on the head's disk, and is dropped as such.
  std::ofstream(store.FileOf(Sha256Hex("epoch 2"))) << "epoch 3";
  REQUIRE(*store.blobs->DropIfCorrupt(Sha256Hex("epoch 2")));
  next = fail_attempt(2, NotRestored(id, 2, 0, c2));
  const JobInfo job = h.Job(id);
  REQUIRE(job.stored_checkpoints_size() == 1);
  CHECK(job.stored_checkpoints(0).manifest_id() == c1);
  CHECK_FALSE(store.blobs->IsPinned(c2));
  CHECK(job.attempts(2).failure_reason().find("checkpoint_000002 is gone from the store and no longer offered (a retry "
                                      "restores checkpoint_000001; this failure does not count against max_failures)") != std::string::npos);
  CHECK(next.restore().manifest_id() == c1);
  CHECK(job.attempts(3).restored_checkpoint() == "checkpoint_000001");
  // Attempts 0 and 1 failed by the job's or its node's fault, 2 by the store's.
  CHECK(job.uncounted_failures() == 1);
}

// A checkpoint larger than the head's store is refused; the job says so,
// not only a line in the head's log, and `fetch --checkpoint` does not
// claim the newest might still be under way.
TEST_CASE("a checkpoint the head will not keep is named on the job until a later one is kept", "[jobs][results]") {
  RunningJob running(/*stored=*/false);
  BlobStoreDir& store = running.store;
  Harness& h = running.h;
  const std::string& id = running.id;
  Manifest manifest;  // names a piece the store lacks (evicted, or larger than it)
  manifest.set_chunk_bytes(4 << 20);
  auto* entry = manifest.add_entries();
  entry->set_path("model.pt");
  entry->set_size(5);
  entry->add_chunks(Sha256Hex("never uploaded"));
  const std::string refused = store.Put(manifest.SerializeAsString());
  h.From("a", Stored(id, 0, refused, 3));
  JobInfo job = h.Job(id);
  CHECK(job.stored_checkpoints_size() == 0);
  CHECK(job.checkpoint_refused() == "checkpoint_000003 (epoch 3, 100 bytes, attempt 0) was uploaded but not kept: "
                                    "manifest " + refused + " names blob " + Sha256Hex("never uploaded") +
                                        ", which the store lacks");
  h.From("a", Stored(id, 0, store.Folder("epoch 4"), 4));
  job = h.Job(id);
  CHECK(job.stored_checkpoints_size() == 1);
  CHECK(job.checkpoint_refused().empty());
}

// A checkpoint holding an absolute symlink is never stored; the job says
// why, not only the node's log.
TEST_CASE("a checkpoint its node gave up storing is named on the job with why until a later one is kept",
          "[jobs][results]") {
  RunningJob running;
  Harness& h = running.h;
  const std::string& id = running.id;
  h.From("a", NotStored(id, 0, 3, "checkpoint_000003: path latest is a symlink pointing out of the folder"));
  JobInfo job = h.Job(id);
  CHECK(job.stored_checkpoints_size() == 2);  // the ones before stay
  CHECK(job.checkpoint_refused() == "checkpoint_000003 (epoch 3, attempt 0) was not stored by node a: "
                                    "checkpoint_000003: path latest is a symlink pointing out of the folder");
  // Another node's word about it is not taken.
  h.AddNode("b", 1);
  h.From("b", NotStored(id, 0, 4, "made up"));
  CHECK(h.Job(id).checkpoint_refused().find("made up") == std::string::npos);
  // An older one stored late does not clear it (an orphaned attempt's
  // upload, finished once its node is back).
  h.From("a", Stored(id, 0, running.store.Folder("epoch 2, late"), 2));
  CHECK_FALSE(h.Job(id).checkpoint_refused().empty());
  h.From("a", Stored(id, 0, running.store.Folder("epoch 4"), 4));
  job = h.Job(id);
  CHECK(job.stored_checkpoints(job.stored_checkpoints_size() - 1).name() == "checkpoint_000004");
  CHECK(job.checkpoint_refused().empty());
}

TEST_CASE("a checkpoint the store let go of because a piece went bad leaves the job's record at once", "[jobs][results]") {
  RunningJob running;
  BlobStoreDir& store = running.store;
  Harness& h = running.h;
  const std::string &id = running.id, &c1 = running.c1, &c2 = running.c2;
  h.head->jobs().OnDataReleased(id + "/package", "its file was gone from the head's disk");  // not on the record
  CHECK(h.Job(id).data_released().empty());
  h.head->jobs().OnDataReleased(id + "/checkpoint/" + c2, "its file was gone from the head's disk");
  const JobInfo job = h.Job(id);
  REQUIRE(job.stored_checkpoints_size() == 1);
  CHECK(job.stored_checkpoints(0).manifest_id() == c1);
  CHECK(job.data_released().rfind("the head's store lost a stored checkpoint at ", 0) == 0);
  CHECK(job.data_released().find(" UTC: a piece of it was dropped, as its file was gone from the head's disk") !=
        std::string::npos);
}

// A checkpoint whose piece file went while the head was down must not stay
// on the record, offered to every retry and fetch, with only a guess in the
// head's log that it was evicted.
TEST_CASE("a head that starts again without a stored checkpoint's piece lets it go from the record",
          "[jobs][results]") {
  RunningJob running;
  BlobStoreDir& store = running.store;
  Harness& h = running.h;
  const std::string &id = running.id, &c1 = running.c1, &c2 = running.c2;
  MemoryJobStore journal = h.store;
  fs::remove(store.FileOf(Sha256Hex("epoch 2")));
  auto reopened = BlobStore::Open({store.path.string(), 0});  // a new head process finds what is on its disk
  REQUIRE(reopened.ok());
  FakeClock clock;
  LogStore logs("");
  HeadCore restarted(&clock, h.config, &journal, &logs, reopened->get());
  REQUIRE(restarted.Restore().ok());
  const JobInfo job = *restarted.jobs().Get(id);
  REQUIRE(job.stored_checkpoints_size() == 1);
  CHECK(job.stored_checkpoints(0).manifest_id() == c1);
  CHECK(job.data_released() == "the head's store lacked stored checkpoint checkpoint_000002 when the head started "
                               "again: manifest " + c2 + " names blob " + Sha256Hex("epoch 2") +
                                   ", which the store lacks");
  CHECK((*reopened)->IsPinned(Sha256Hex("epoch 1")));
}
