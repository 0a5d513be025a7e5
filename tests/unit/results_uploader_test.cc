// The node agent's uploader of rank 0's results (daemon/agent/
// results_uploader.h) against a real store over gRPC.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include <grpcpp/create_channel.h>

#include "daemon/agent/rank_zero_results.h"
#include "daemon/agent/results_uploader.h"
#include "eventually.h"
#include "fake_waitable_clock.h"
#include "store_server.h"
#include "temp_tree.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;

namespace {

// An uploader against a real store over gRPC, with what it sends kept:
// stored checkpoints and reported exits, each under `mutex`. Its time, the
// pace of its uploads included, is `clock`'s, which moves only when the
// test moves it.
struct UploaderRig {
  explicit UploaderRig(int64_t final_wait_ms = Config{}.final_checkpoint_wait_ms) : final_wait_ms(final_wait_ms) {}
  int64_t final_wait_ms;
  FakeWaitableClock clock;
  StoreServer head;
  ClusterStorage storage{grpc::CreateChannel(head.address(), grpc::InsecureChannelCredentials()), StoreServer::kToken,
                         head.address()};
  TempTree t;
  std::mutex mutex;
  std::vector<AgentMessage> stored, exits, progress;
  std::vector<size_t> stored_when_exited;  // how many were stored as each exit was reported
  ResultsUploader uploader{&storage, MakeHashDir(t),
                           [this](const AgentMessage& m) {
                             std::lock_guard<std::mutex> lock(mutex);
                             stored.push_back(m);
                           },
                           [this](const AgentMessage& m) {
                             std::lock_guard<std::mutex> lock(mutex);
                             exits.push_back(m);
                             stored_when_exited.push_back(stored.size());
                           },
                           final_wait_ms,
                           [this](const AgentMessage& m) {
                             std::lock_guard<std::mutex> lock(mutex);
                             progress.push_back(m);
                           },
                           &clock};

  static std::string MakeHashDir(const TempTree& t) {
    t.Write("hashes/.keep", "");
    return t.Path("hashes");
  }

  size_t StoredCount() {
    std::lock_guard<std::mutex> lock(mutex);
    return stored.size();
  }
  size_t ExitCount() {
    std::lock_guard<std::mutex> lock(mutex);
    return exits.size();
  }
  // Waits, in real time only as long as the store's work takes (`limit` is
  // an outer bound), for `count` checkpoints stored with the clock standing
  // still.
  bool Stored(size_t count, std::chrono::seconds limit = 60s) {
    return Eventually([&] { return StoredCount() >= count; }, limit);
  }
  // Moves the clock from one wait to the next until `count` checkpoints are
  // stored.
  bool StoredAsTheClockMoves(size_t count) {
    return clock.AdvanceThroughWaitsUntil([&] { return StoredCount() >= count; }, 60s);
  }
};

}  // namespace

// A checkpoint its program goes on writing into for a moment after
// reporting it must not be given up at once, leaving the job with no
// checkpoint stored.
TEST_CASE("a checkpoint that changes while it is stored is tried again once it settles", "[results_uploader]") {
  UploaderRig rig;
  FakeWaitableClock& clock = rig.clock;
  const std::string file = rig.t.Path("ckpt/checkpoint_000000/w.bin");
  rig.t.Write("ckpt/checkpoint_000000/w.bin", std::string(1 << 20, 'w'));
  // The program rewrites a piece of it, over and over, until the uploader
  // has seen it change (it waits to try again) or stored it.
  std::atomic<bool> settled{false};
  std::thread writer([&] {
    for (int i = 0; !settled; ++i) {
      std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp((i * 4096) % (1 << 20));
      f << static_cast<char>('a' + i % 26);
      f.close();
      std::this_thread::sleep_for(1ms);
    }
  });
  rig.uploader.StoreCheckpoint("job-1", 0, rig.t.Path("ckpt"), rig.t.Path("ckpt/checkpoint_000000"), "", 0);
  auto stored = [&] {
    std::lock_guard<std::mutex> lock(rig.mutex);
    return !rig.stored.empty();
  };
  const bool tried = Eventually([&] { return stored() || !clock.Waiting().empty(); }, 60s);
  settled = true;
  writer.join();
  REQUIRE(tried);
  // Each try that saw it change waits kChangedRetryMs on the clock; the
  // first after the writes stopped stores it.
  for (int tries = 0; tries < ResultsUploader::kChangedTries && !stored(); ++tries) {
    REQUIRE(Eventually([&] { return stored() || !clock.Waiting().empty(); }));
    if (!stored()) clock.AdvanceMillis(ResultsUploader::kChangedRetryMs);
  }
  REQUIRE(Eventually(stored));
  std::lock_guard<std::mutex> lock(rig.mutex);
  REQUIRE(rig.stored.front().checkpoint_stored().name() == "checkpoint_000000");
  REQUIRE(rig.stored.front().checkpoint_stored().bytes() == (1 << 20));
}


TEST_CASE("a checkpoint goes at its upload rate while rank 0 trains and at full speed once it exits",
          "[results_uploader]") {
  UploaderRig rig;
  rig.t.Write("ckpt/checkpoint_000000/w.bin", std::string(4 << 20, 'a'));
  rig.t.Write("ckpt/checkpoint_000001/w.bin", std::string(4 << 20, 'b'));
  // 4 MiB at 2 MiB/s, sent in 1 MiB messages: each waits for the clock to
  // reach its half second, 2 s in all (unpaced, it needs none).
  const Micros start = rig.clock.NowMicros();
  rig.uploader.StoreCheckpoint("job-1", 0, rig.t.Path("ckpt"), rig.t.Path("ckpt/checkpoint_000000"), "", 2 << 20);
  // Its attempt's working folder must stay meanwhile; no other's.
  CHECK(rig.uploader.Holds("job-1", 0));
  CHECK_FALSE(rig.uploader.Holds("job-1", 1));
  CHECK_FALSE(rig.uploader.Holds("job-2", 0));
  REQUIRE(rig.StoredAsTheClockMoves(1));
  CHECK(rig.clock.NowMicros() - start == 2'000'000);
  CHECK(Eventually([&] { return !rig.uploader.Holds("job-1", 0); }));
  // 4 MiB at 1 MiB/s: 4 s on the clock; rank 0 exits 1 s in, with the
  // second message waiting for its turn.
  const Micros second = rig.clock.NowMicros();
  rig.uploader.StoreCheckpoint("job-1", 0, rig.t.Path("ckpt"), rig.t.Path("ckpt/checkpoint_000001"), "", 1 << 20);
  REQUIRE(Eventually([&] { return rig.clock.SomeoneWaitsUntil(second + 1'000'000); }));
  rig.clock.Advance(1'000'000);
  REQUIRE(Eventually([&] { return rig.clock.SomeoneWaitsUntil(second + 2'000'000); }));
  rig.uploader.Unpace("job-1", 0);
  // The rest goes with the clock standing still: paced, it would wait for it.
  REQUIRE(rig.Stored(2));
  std::lock_guard<std::mutex> lock(rig.mutex);
  CHECK(rig.stored[1].checkpoint_stored().name() == "checkpoint_000001");
}

// At 1 MiB/s with ctrain's keep: 2, every checkpoint is pruned while it
// uploads: it must still be stored; and a job's outputs must not wait
// behind another job's paced checkpoint.
TEST_CASE("a checkpoint pruned while it uploads is still stored and outputs do not wait behind it",
          "[results_uploader]") {
  UploaderRig rig;
  rig.t.Write("ckpt/checkpoint_000000/w.bin", std::string(6 << 20, 'p'));
  rig.t.Write("work/model.pt", "weights");
  // 6 MiB at 2 MiB/s: 3 s on the clock, which stands still until the
  // outputs are in; the program prunes the folder at once.
  rig.uploader.StoreCheckpoint("job-1", 0, rig.t.Path("ckpt"), rig.t.Path("ckpt/checkpoint_000000"), "", 2 << 20);
  std::filesystem::remove_all(rig.t.Path("ckpt/checkpoint_000000"));
  AgentMessage exit;
  exit.mutable_rank_exited()->set_job_id("job-2");
  rig.uploader.StoreOutputs(exit, rig.t.Path("work"), {"model.pt"}, "");
  REQUIRE(Eventually([&] { return rig.ExitCount() > 0; }, 60s));
  {
    std::lock_guard<std::mutex> lock(rig.mutex);
    CHECK(rig.stored.empty());  // the checkpoint is still on its way...
    CHECK_FALSE(rig.exits[0].rank_exited().outputs_manifest().empty());
  }
  REQUIRE(rig.StoredAsTheClockMoves(1));
  std::lock_guard<std::mutex> lock(rig.mutex);
  REQUIRE(rig.stored.size() == 1);  // ...and arrives whole though pruned
  CHECK(rig.stored[0].checkpoint_stored().bytes() == (6 << 20));
  // The last one stored keeps its snapshot until the next report, which
  // takes its place.
  CHECK(std::filesystem::exists(rig.t.Path("ckpt/.uploading/checkpoint_000000/w.bin")));
  rig.t.Write("ckpt/checkpoint_000001/w.bin", "small");
  rig.uploader.StoreCheckpoint("job-1", 0, rig.t.Path("ckpt"), rig.t.Path("ckpt/checkpoint_000001"), "", 0);
  CHECK_FALSE(std::filesystem::exists(rig.t.Path("ckpt/.uploading/checkpoint_000000")));
}

// Outputs go on a thread of their own: a job must still not end before the
// checkpoint its rank 0 reported last is stored.
TEST_CASE("outputs wait for their own attempt's checkpoints to be stored", "[results_uploader]") {
  UploaderRig rig;
  rig.t.Write("ckpt/checkpoint_000002/w.bin", std::string(4 << 20, 'c'));
  rig.t.Write("work/model.pt", "weights");
  rig.uploader.StoreCheckpoint("job-1", 0, rig.t.Path("ckpt"), rig.t.Path("ckpt/checkpoint_000002"), "", 1 << 20);
  AgentMessage exit;
  exit.mutable_rank_exited()->set_job_id("job-1");
  rig.uploader.StoreOutputs(exit, rig.t.Path("work"), {"model.pt"}, "");
  rig.uploader.Unpace("job-1", 0);  // rank 0 exited
  // Unpaced, it goes with the clock standing still (paced: 4 s on it).
  REQUIRE(Eventually([&] { return rig.ExitCount() > 0; }, 60s));
  std::lock_guard<std::mutex> lock(rig.mutex);
  REQUIRE(rig.exits.size() == 1);
  CHECK(rig.stored_when_exited[0] == 1);  // stored before the exit went
}

// Pruning the folder changes the ctime of the files its snapshot shares:
// the upload must not take them as changed and let a newer report replace
// the retry, or nothing is stored while training runs. And a folder
// reported twice, then a newer one, must keep the snapshot it is being sent
// from.
TEST_CASE("a checkpoint pruned or reported again mid-upload is stored before the newer one", "[results_uploader]") {
  for (const bool prune : {true, false}) {
    INFO((prune ? "pruned" : "reported again"));
    UploaderRig rig;
    rig.t.Write("ckpt/checkpoint_000000/w.bin", std::string(4 << 20, 'a'));
    rig.t.Write("ckpt/checkpoint_000001/w.bin", "b");
    const Micros start = rig.clock.NowMicros();
    rig.uploader.StoreCheckpoint("job-1", 0, rig.t.Path("ckpt"), rig.t.Path("ckpt/checkpoint_000000"), "", 2 << 20);
    // Under way (2 s paced): its first message waits for the clock.
    REQUIRE(Eventually([&] { return rig.clock.SomeoneWaitsUntil(start + 500'000); }));
    if (prune) {
      std::filesystem::remove_all(rig.t.Path("ckpt/checkpoint_000000"));
    } else {
      rig.uploader.StoreCheckpoint("job-1", 0, rig.t.Path("ckpt"), rig.t.Path("ckpt/checkpoint_000000"), "", 2 << 20);
    }
    rig.uploader.StoreCheckpoint("job-1", 0, rig.t.Path("ckpt"), rig.t.Path("ckpt/checkpoint_000001"), "", 2 << 20);
    REQUIRE(rig.StoredAsTheClockMoves(2));
    std::lock_guard<std::mutex> lock(rig.mutex);
    REQUIRE(rig.stored.size() == 2);
    CHECK(rig.stored[0].checkpoint_stored().name() == "checkpoint_000000");
    CHECK(rig.stored[0].checkpoint_stored().bytes() == (4 << 20));
    CHECK(rig.stored[1].checkpoint_stored().name() == "checkpoint_000001");
  }
}

// A checkpoint holding an absolute symlink cannot be stored: the head is
// told why, not only the node's log.
TEST_CASE("a checkpoint the node cannot store is given up and the head is told why", "[results_uploader]") {
  UploaderRig rig;
  rig.t.Write("ckpt/checkpoint_000003/w.bin", "weights");
  std::filesystem::create_symlink("/etc/hostname", rig.t.Path("ckpt/checkpoint_000003/escape"));
  rig.uploader.StoreCheckpoint("job-1", 0, rig.t.Path("ckpt"), rig.t.Path("ckpt/checkpoint_000003"), "", 0);
  REQUIRE(rig.Stored(1));
  std::lock_guard<std::mutex> lock(rig.mutex);
  REQUIRE(rig.stored.size() == 1);
  const CheckpointStored& given_up = rig.stored.front().checkpoint_stored();
  CHECK(given_up.job_id() == "job-1");
  CHECK(given_up.name() == "checkpoint_000003");
  CHECK(given_up.epoch() == 3);
  CHECK(given_up.manifest_id().empty());
  INFO(given_up.error());
  CHECK(given_up.error().find("escape") != std::string::npos);
  CHECK(given_up.error().find("the head") == std::string::npos);  // the folder's fault, not the store's
}

// A checkpoint rank 0 reports outside its job's checkpoint folder is never
// read; the head hears that it will not be stored, so that a preempted job
// waiting for it (the head's ResumeWait) resumes at once, not after
// resume_checkpoint_wait_ms.
TEST_CASE("a checkpoint reported outside the job's checkpoint folder is refused and the head is told why",
          "[results_uploader]") {
  UploaderRig rig;
  rig.t.Write("work/ckpt/checkpoint_000001/w.bin", "weights");
  rig.t.Write("elsewhere/checkpoint_000002/w.bin", "not the job's");
  LaunchRanks launch;
  launch.set_job_id("job-1");
  launch.set_attempt(0);
  launch.set_working_dir(rig.t.Path("work"));
  launch.set_store_checkpoints(true);
  (*launch.mutable_env())["CLUSTER_CHECKPOINT_DIR"] = "ckpt";
  launch.add_ranks()->set_rank(0);
  RankZeroResults results(&rig.uploader);
  results.Remember(launch);
  MetricsReport report;
  report.set_job_id("job-1");
  report.set_attempt(0);
  report.set_rank(0);
  report.set_checkpoint(rig.t.Path("elsewhere/checkpoint_000002"));
  results.OnReport(report);
  report.set_checkpoint(rig.t.Path("work/ckpt/checkpoint_000001"));
  results.OnReport(report);
  REQUIRE(rig.Stored(2));
  std::lock_guard<std::mutex> lock(rig.mutex);
  REQUIRE(rig.stored.size() == 2);
  const CheckpointStored& refused = rig.stored[0].checkpoint_stored();
  CHECK(refused.job_id() == "job-1");
  CHECK(refused.name() == "checkpoint_000002");
  CHECK(refused.manifest_id().empty());
  CHECK(refused.error() == "it is not inside the job's checkpoint folder " + rig.t.Path("work/ckpt"));
  const CheckpointStored& stored = rig.stored[1].checkpoint_stored();
  CHECK(stored.name() == "checkpoint_000001");
  CHECK(stored.error().empty());
  CHECK_FALSE(stored.manifest_id().empty());
}

// A job that SUCCEEDED has its last checkpoint stored: rank 0's clean exit
// in a job without outputs waits for it rather than end the job before
// that checkpoint reaches the store.
TEST_CASE("rank 0's exit waits for its attempt's last checkpoint to be stored and counts as running meanwhile",
          "[results_uploader]") {
  UploaderRig rig;
  rig.t.Write("ckpt/checkpoint_000003/w.bin", std::string(4 << 20, 'c'));
  CHECK_FALSE(rig.uploader.StoringCheckpoint("job-1", 0));
  rig.uploader.StoreCheckpoint("job-1", 0, rig.t.Path("ckpt"), rig.t.Path("ckpt/checkpoint_000003"), "", 1 << 20);
  CHECK(rig.uploader.StoringCheckpoint("job-1", 0));
  CHECK_FALSE(rig.uploader.StoringCheckpoint("job-1", 1));
  AgentMessage exit;
  exit.mutable_rank_exited()->set_job_id("job-1");
  rig.uploader.ReportAfterCheckpoints(exit);
  // A head that asks meanwhile (it restarted) hears rank 0 as still running.
  std::vector<LiveRank> held = rig.uploader.HeldRanks();
  REQUIRE(held.size() == 1);
  CHECK(held[0].job_id() == "job-1");
  rig.uploader.Unpace("job-1", 0);  // rank 0 exited
  // Unpaced, it goes with the clock standing still (paced: 4 s on it).
  REQUIRE(Eventually([&] { return rig.ExitCount() > 0; }, 60s));
  std::lock_guard<std::mutex> lock(rig.mutex);
  REQUIRE(rig.exits.size() == 1);
  CHECK(rig.stored_when_exited[0] == 1);  // stored before the exit went
  REQUIRE(rig.stored.size() == 1);
  CHECK(rig.stored[0].checkpoint_stored().name() == "checkpoint_000003");
  CHECK(rig.stored[0].checkpoint_stored().error().empty());
  CHECK(rig.exits[0].rank_exited().outputs_manifest().empty());  // no outputs were made up
  CHECK(rig.uploader.HeldRanks().empty());
  // The head heard at once what the exit waits for.
  REQUIRE_FALSE(rig.progress.empty());
  CHECK(rig.progress[0].results_pending().job_id() == "job-1");
  CHECK(rig.progress[0].results_pending().checkpoint() == "checkpoint_000003");
}

TEST_CASE("an exit held for a checkpoint is reported after the final wait, saying why, and the upload goes on",
          "[results_uploader]") {
  UploaderRig rig(300);
  FakeWaitableClock& clock = rig.clock;
  // Bytes that do not repeat: the store keeps a piece once, and a file of
  // one repeated piece would be sent, and paced, as one.
  std::string noise(8 << 20, '\0');
  uint64_t x = 88172645463325252ull;
  for (char& c : noise) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    c = static_cast<char>(x);
  }
  rig.t.Write("ckpt/checkpoint_000005/w.bin", noise);
  // 8 MiB at 1 MiB/s: 8 s on the clock, which does not move by itself:
  // the upload stays under way until Unpace.
  rig.uploader.StoreCheckpoint("job-1", 0, rig.t.Path("ckpt"), rig.t.Path("ckpt/checkpoint_000005"), "", 1 << 20);
  AgentMessage exit;
  exit.mutable_rank_exited()->set_job_id("job-1");
  const Micros start = clock.NowMicros();
  rig.uploader.ReportAfterCheckpoints(exit);
  auto reported = [&] {
    std::lock_guard<std::mutex> lock(rig.mutex);
    return !rig.exits.empty();
  };
  // The exit waits for the clock to reach the final wait's end, no sooner.
  REQUIRE(Eventually([&] { return clock.SomeoneWaitsUntil(start + 300'000); }));
  CHECK_FALSE(reported());
  clock.AdvanceMillis(300);
  REQUIRE(Eventually(reported));
  {
    std::lock_guard<std::mutex> lock(rig.mutex);
    REQUIRE(rig.stored.size() == 1);
    const CheckpointStored& late = rig.stored[0].checkpoint_stored();
    CHECK(late.name() == "checkpoint_000005");
    CHECK(late.epoch() == 5);
    CHECK(late.manifest_id().empty());
    CHECK(late.error().find("still being stored 0.3 s after rank 0 exited") != std::string::npos);
  }
  rig.uploader.Unpace("job-1", 0);  // the rest goes with the clock standing still
  REQUIRE(rig.Stored(2));
  std::lock_guard<std::mutex> lock(rig.mutex);
  REQUIRE(rig.stored.size() == 2);
  CHECK_FALSE(rig.stored[1].checkpoint_stored().manifest_id().empty());
}
