// The results uploader's sending of one task (daemon/agent/results_sender.h)
// against a real store over gRPC, alone: no queue, no threads.
#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <thread>
#include <vector>

#include <grpcpp/create_channel.h>

#include "daemon/agent/results_sender.h"
#include "fake_waitable_clock.h"
#include "store_server.h"
#include "temp_tree.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

struct SenderRig {
  StoreServer head;
  ClusterStorage storage{grpc::CreateChannel(head.address(), grpc::InsecureChannelCredentials()), StoreServer::kToken,
                         head.address()};
  TempTree t;
  ResultsSender sender{&storage, MakeHashDir(t)};

  static std::string MakeHashDir(const TempTree& t) {
    t.Write("hashes/.keep", "");
    return t.Path("hashes");
  }
  UploadTask Checkpoint(const std::string& name) const {
    UploadTask task;
    task.job_id = "job-1";
    task.attempt = 2;
    task.root = t.Path("ckpt");
    task.paths = {name};
    return task;
  }
};

}  // namespace

TEST_CASE("a checkpoint is sent through its pacer and an unchanged one is not sent again", "[results_sender]") {
  SenderRig rig;
  rig.t.Write("ckpt/checkpoint_000004/w.bin", std::string(3 << 20, 'w'));
  FakeWaitableClock clock;
  RatePacer pacer(0, &clock);  // 0: unpaced
  int64_t last_done = 0, last_total = 0;
  auto stored = rig.sender.SendCheckpoint(rig.Checkpoint("checkpoint_000004"), pacer, [&](int64_t done, int64_t total) {
    last_done = done;
    last_total = total;
  });
  REQUIRE(stored.ok());
  const CheckpointStored& first = stored->checkpoint_stored();
  CHECK(first.job_id() == "job-1");
  CHECK(first.attempt() == 2);
  CHECK(first.name() == "checkpoint_000004");
  CHECK(first.epoch() == 4);
  CHECK_FALSE(first.manifest_id().empty());
  CHECK(first.bytes() == (3 << 20));
  CHECK(first.sent_bytes() > 0);
  CHECK(last_total > 0);
  CHECK(last_done == last_total);  // told of each chunk, up to the whole
  // Reported again unchanged: its pieces are in the store already.
  auto again = rig.sender.SendCheckpoint(rig.Checkpoint("checkpoint_000004"), pacer, nullptr);
  REQUIRE(again.ok());
  CHECK(again->checkpoint_stored().manifest_id() == first.manifest_id());
  CHECK(again->checkpoint_stored().sent_bytes() == 0);
}

TEST_CASE("a checkpoint is sent at its pacer's rate, each chunk told once the pacer let it go", "[results_sender]") {
  SenderRig rig;
  rig.t.Write("ckpt/checkpoint_000001/w.bin", std::string(3 << 20, 'w'));
  FakeWaitableClock clock;
  RatePacer pacer(1 << 20, &clock);  // 1 MiB/s: 3 s on the clock, which moves only below
  const Micros start = clock.NowMicros();
  std::vector<Micros> told_at;  // the clock's time at each chunk told
  std::atomic<bool> sent{false};
  Result<AgentMessage> stored = Status::Internal("not sent");
  std::thread sender([&] {
    stored = rig.sender.SendCheckpoint(rig.Checkpoint("checkpoint_000001"), pacer,
                                       [&](int64_t, int64_t) { told_at.push_back(clock.NowMicros()); });
    sent = true;
  });
  const bool finished = clock.AdvanceThroughWaitsUntil([&] { return sent.load(); }, std::chrono::seconds(60));
  if (!finished) pacer.Lift();  // so that the thread ends
  sender.join();
  REQUIRE(finished);
  REQUIRE(stored.ok());
  CHECK(stored->checkpoint_stored().sent_bytes() == (3 << 20));
  // Sent in 1 MiB messages, each told once its second is over.
  CHECK(clock.NowMicros() - start == 3'000'000);
  CHECK(told_at == std::vector<Micros>{start + 1'000'000, start + 2'000'000, start + 3'000'000});
}

TEST_CASE("a checkpoint gone from its folder is not found, and a store refusing the token says so",
          "[results_sender]") {
  SenderRig rig;
  rig.t.Write("ckpt/.keep", "");
  FakeWaitableClock clock;
  RatePacer pacer(0, &clock);  // 0: unpaced
  auto gone = rig.sender.SendCheckpoint(rig.Checkpoint("checkpoint_000001"), pacer, nullptr);
  REQUIRE_FALSE(gone.ok());
  CHECK(gone.status().code() == Status::Code::kNotFound);
  // Another head on the address: the uploader tries again (upload_retry_policy.h).
  rig.t.Write("ckpt/checkpoint_000002/w.bin", "weights");
  ClusterStorage other_head{grpc::CreateChannel(rig.head.address(), grpc::InsecureChannelCredentials()),
                            "another-token", rig.head.address()};
  ResultsSender refused_sender(&other_head, rig.t.Path("hashes"));
  auto refused = refused_sender.SendCheckpoint(rig.Checkpoint("checkpoint_000002"), pacer, nullptr);
  REQUIRE_FALSE(refused.ok());
  INFO(refused.status().message());
  CHECK(refused.status().code() == Status::Code::kUnauthenticated);
}

TEST_CASE("outputs are sent and the exit names their manifest and the ones missing", "[results_sender]") {
  SenderRig rig;
  rig.t.Write("work/model.pt", "weights");
  UploadTask task;
  task.exit.mutable_rank_exited()->set_job_id("job-1");
  task.exit.mutable_rank_exited()->set_exit_code(0);
  task.job_id = "job-1";
  task.root = rig.t.Path("work");
  task.paths = {"model.pt", "metrics.json"};
  task.outputs = true;
  auto exit = rig.sender.SendOutputs(task);
  REQUIRE(exit.ok());
  const RankExited& exited = exit->rank_exited();
  CHECK(exited.job_id() == "job-1");
  CHECK_FALSE(exited.outputs_manifest().empty());
  CHECK(exited.outputs_bytes() == 7);
  REQUIRE(exited.outputs_missing_size() == 1);
  CHECK(exited.outputs_missing(0) == "metrics.json");
  CHECK(task.exit.rank_exited().outputs_manifest().empty());  // the task's own exit is left as it was
}
