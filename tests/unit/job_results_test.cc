// What a job leaves behind, driven through HeadCore with fake agents and a
// real blob store: checkpoints accepted only from the current attempt's
// rank 0, kept checkpoint.keep deep, restored into the next attempt; outputs
// kept when the job succeeds; stale reports refused; delete and eviction
// journalled; a restarted head still holds it all.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>

#include "common/jobspec/job_spec.h"
#include "common/sha256.h"
#include "daemon/head/job_replay.h"
#include "daemon/store/blob_store.h"
#include "blob_store_dir.h"
#include "checkpoint_messages.h"
#include "daemon/head/job_data.h"
#include "daemon/head/job_results.h"
#include "head_harness.h"
#include "job_table_fixture.h"
#include "temp_tree.h"
#include "store.pb.h"

using namespace clusterd;
using namespace clusterd::testing;
namespace fs = std::filesystem;

namespace {


// A 2-rank job with outputs on nodes a (rank 0) and b (rank 1), launched.
std::string StartJob(Harness& h, int max_failures = 1, int keep = 2) {
  SubmitJobRequest request = h.Request(2, 1, STRICT_SPREAD, max_failures);
  request.mutable_spec()->add_outputs("model.pt");
  request.mutable_spec()->add_outputs("results/");
  request.mutable_spec()->mutable_checkpoint()->set_keep(keep);
  const std::string id = h.Submit(request);
  h.AnswerPort("a", 29500);
  return id;
}

// Nodes a and b of one CPU each, then StartJob's job on them.
std::string AddNodesAndStartJob(Harness& h, int max_failures = 1, int keep = 2) {
  h.AddNode("a", 1);
  h.AddNode("b", 1);
  return StartJob(h, max_failures, keep);
}

// A head over a blob store in a temporary folder, with StartJob's job
// launched on nodes a and b.
struct StartedJob {
  BlobStoreDir store;
  Harness h{store.blobs.get()};
  const std::string id = AddNodesAndStartJob(h);
};

// After a failed attempt: waits out the first restart delay, answers the
// next attempt's port, and returns the node of its rank 0.
std::string StartNextAttempt(Harness& h, const std::string& id, int port) {
  h.Advance(1000);
  const JobInfo job = h.Job(id);
  REQUIRE(job.attempts_size() >= 2);
  const std::string master = job.attempts(job.attempts_size() - 1).ranks(0).node_name();
  h.AnswerPort(master, port);
  return master;
}

}  // namespace

TEST_CASE("checkpoints count only from the current attempt's rank 0, keep their depth, and reach the next attempt",
          "[jobs][results]") {
  BlobStoreDir store;
  Harness h(store.blobs.get());
  h.AddNode("a", 1);
  h.AddNode("b", 1);
  h.AddNode("c", 1);
  std::string id = StartJob(h);
  LaunchRanks first = h.Launches("a")[0];
  REQUIRE(first.store_checkpoints());
  REQUIRE(first.checkpoint_upload_bytes_per_s() == kDefaultCheckpointUploadRate);
  REQUIRE(first.outputs_size() == 2);
  REQUIRE_FALSE(first.has_restore());
  REQUIRE_FALSE(h.Launches("b")[0].store_checkpoints());  // rank 1 stores nothing
  REQUIRE(h.Launches("b")[0].outputs_size() == 0);

  std::string c0 = store.Folder("epoch 0"), c1 = store.Folder("epoch 1"), c2 = store.Folder("epoch 2");
  h.From("b", Stored(id, 0, c0, 0));  // rank 1's node: refused
  REQUIRE(h.Job(id).stored_checkpoints_size() == 0);
  h.From("a", Stored(id, 1, c0, 0));  // no such attempt: refused
  REQUIRE(h.Job(id).stored_checkpoints_size() == 0);
  h.From("a", Stored(id, 0, Sha256Hex("not in the store"), 0));  // unknown manifest: refused
  REQUIRE(h.Job(id).stored_checkpoints_size() == 0);

  for (auto [manifest, epoch] : {std::pair{c0, 0}, std::pair{c1, 1}, std::pair{c2, 2}}) {
    h.From("a", Stored(id, 0, manifest, epoch));
  }
  JobInfo job = h.Job(id);
  REQUIRE(job.stored_checkpoints_size() == 2);  // checkpoint.keep
  REQUIRE(job.stored_checkpoints(0).manifest_id() == c1);
  REQUIRE(job.stored_checkpoints(1).manifest_id() == c2);
  REQUIRE(job.stored_checkpoints(1).node_name() == "a");
  REQUIRE_FALSE(store.blobs->Has(c0));  // let go, and nobody else held it
  REQUIRE(store.blobs->IsPinned(c2));

  // Node a dies: the next attempt, wherever rank 0 lands, restores epoch 2.
  h.agents["a"]->closed = true;
  h.head->OnAgentDisconnected(h.agents["a"].get(), "connection lost");
  h.Exit("b", id, 0, 1, 0, 15);  // the rest of the gang stops
  const std::string master = StartNextAttempt(h, id, 29501);
  LaunchRanks again = h.Launches(master).back();
  REQUIRE(again.attempt() == 1);
  REQUIRE(again.restore().manifest_id() == c2);
  REQUIRE(again.restore().name() == "checkpoint_000002");
  REQUIRE(again.store_checkpoints());
  // The old rank 0, cut off but alive, cannot replace the new attempt's checkpoint.
  h.From("a", Stored(id, 0, c0, 3));
  REQUIRE(h.Job(id).stored_checkpoints(1).manifest_id() == c2);
}

TEST_CASE("a checkpoint whose upload ends after its attempt failed is kept, unless a later attempt stored one",
          "[jobs][results]") {
  BlobStoreDir store;
  Harness h(store.blobs.get());
  std::string id = AddNodesAndStartJob(h, /*max_failures=*/2);
  const std::string c0 = store.Folder("epoch 0"), c1 = store.Folder("epoch 1"), c2 = store.Folder("epoch 2");
  h.From("a", Stored(id, 0, c0, 0));
  // Rank 1 fails right after rank 0 saved epoch 1, before its upload ended.
  h.Exit("b", id, 0, 1, 3);
  h.Exit("a", id, 0, 0, 0, 15);
  REQUIRE(h.Job(id).state() == RESTARTING);
  h.From("b", Stored(id, 0, c1, 1));  // not attempt 0's rank 0: refused
  REQUIRE(h.Job(id).stored_checkpoints_size() == 1);
  h.From("a", Stored(id, 0, c1, 1));
  REQUIRE(h.Job(id).stored_checkpoints_size() == 2);
  REQUIRE(h.Job(id).stored_checkpoints(1).manifest_id() == c1);
  REQUIRE(h.Job(id).stored_checkpoints(1).node_name() == "a");

  const std::string master = StartNextAttempt(h, id, 29501);
  REQUIRE(h.Launches(master).back().restore().manifest_id() == c1);
  REQUIRE(h.Job(id).attempts(1).restored_checkpoint() == "checkpoint_000001");
  h.From(master, Stored(id, 1, c2, 2));
  // Attempt 1 stored one: attempt 0's late uploads no longer count.
  h.From("a", Stored(id, 0, c0, 0));
  REQUIRE(h.Job(id).stored_checkpoints_size() == 2);
  REQUIRE(h.Job(id).stored_checkpoints(1).manifest_id() == c2);
  REQUIRE(h.Job(id).stored_checkpoints(1).attempt() == 1);
}

TEST_CASE("a checkpoint whose upload ends after its job ended is kept from the last attempt's rank 0 only",
          "[jobs][results]") {
  BlobStoreDir store(/*cap=*/64 << 10);
  Harness h(store.blobs.get());
  std::string id = AddNodesAndStartJob(h, /*max_failures=*/1, /*keep=*/0);
  const std::string c0 = store.Folder("epoch 0"), c1 = store.Folder("epoch 1");
  h.From("a", Stored(id, 0, c0, 0));
  // The training loop reported its last epoch's checkpoint and exited 0
  // before its node had uploaded it.
  h.Exit("a", id, 0, 0, 0);
  h.Exit("b", id, 0, 1, 0);
  REQUIRE(h.Job(id).state() == SUCCEEDED);
  h.From("b", Stored(id, 0, c1, 1));  // rank 1's node: refused
  REQUIRE(h.Job(id).stored_checkpoints_size() == 1);
  h.From("a", Stored(id, 0, c1, 1));
  JobInfo job = h.Job(id);
  REQUIRE(job.stored_checkpoints_size() == 2);
  REQUIRE(job.stored_checkpoints(1).manifest_id() == c1);
  REQUIRE(job.stored_checkpoints(1).epoch() == 1);
  // Held as the ended job's other data is: evictable when room is needed.
  REQUIRE(store.blobs->Has(c1));
  store.Put(std::string((64 << 10) - 16, 'x'));  // room only if both go
  CHECK_FALSE(store.blobs->Has(c0));
  CHECK_FALSE(store.blobs->Has(c1));
}

TEST_CASE_METHOD(StartedJob,
                 "a successful job keeps rank 0's outputs and names what is missing, a failed one keeps none",
                 "[jobs][results]") {
  std::string outputs = store.Folder("weights");
  AgentMessage exit0;
  auto* e = exit0.mutable_rank_exited();
  e->set_job_id(id);
  e->set_rank(0);
  e->set_outputs_manifest(outputs);
  e->set_outputs_bytes(7);
  e->add_outputs_missing("results/");
  h.From("a", exit0);
  h.Exit("b", id, 0, 1, 0);
  JobInfo job = h.Job(id);
  REQUIRE(job.state() == SUCCEEDED);
  REQUIRE(job.outputs_manifest() == outputs);
  REQUIRE(job.outputs_bytes() == 7);
  REQUIRE(job.reason() == "all 2 ranks exited 0 (attempt 0); rank 0 did not write output results/");
  REQUIRE(store.blobs->IsPinned(outputs));

  // Outputs that could not be stored fail the attempt (and with no retries left, the job).
  std::string failing = StartJob(h, /*max_failures=*/0);
  AgentMessage bad = exit0;
  bad.mutable_rank_exited()->set_job_id(failing);
  bad.mutable_rank_exited()->clear_outputs_manifest();
  bad.mutable_rank_exited()->set_outputs_error("cannot reach the head's store");
  h.From("a", bad);
  h.Exit("b", failing, 0, 1, 0);
  JobInfo failed = h.Job(failing);
  REQUIRE(failed.state() == FAILED);
  REQUIRE(failed.reason().find("its outputs could not be stored: cannot reach the head's store") != std::string::npos);
  REQUIRE(failed.outputs_manifest().empty());
}

TEST_CASE("reports from an attempt that is not the current one, or from a node not running the rank, are refused",
          "[jobs][results]") {
  Harness h;
  h.AddNode("a", 1);
  h.AddNode("b", 1);
  std::string id = h.Submit(2, 1, STRICT_SPREAD);
  h.AnswerPort("a", 1);
  auto report = [&](const std::string& node, int attempt, int rank) {
    AgentMessage m;
    m.mutable_metrics()->set_job_id(id);
    m.mutable_metrics()->set_attempt(attempt);
    m.mutable_metrics()->set_rank(rank);
    (*m.mutable_metrics()->mutable_values())["loss"] = 1;
    h.From(node, m);
    JobRequest request;
    request.set_job_id(id);
    return h.head->jobs().Metrics(request)->records_size();
  };
  REQUIRE(report("a", 0, 0) == 1);
  REQUIRE(report("b", 0, 0) == 1);  // b runs rank 1, not 0
  REQUIRE(report("a", 7, 0) == 1);  // no attempt 7
  REQUIRE(report("b", 0, 1) == 2);
  // A rank exit from a node that does not run that rank changes nothing.
  h.Exit("b", id, 0, 0, 1);
  REQUIRE(h.Job(id).state() == RUNNING);
}

// A rank 0 that reports its last epoch and exits while the head restarts
// must not lose those reports and that checkpoint.
// Its agent keeps them and sends them, then its exit, once registered
// again; a report sent again (the old head died before confirming it) is
// taken once.
TEST_CASE_METHOD(StartedJob,
                 "a restarted head takes what a rank 0 that ended while it was away kept, once each, from its node only",
                 "[jobs][results][journal]") {
  auto report = [&](int64_t seq, double loss) {
    AgentMessage m;
    m.mutable_metrics()->set_job_id(id);
    m.mutable_metrics()->set_rank(0);
    m.mutable_metrics()->set_report_seq(seq);
    m.mutable_metrics()->set_checkpoint("/ckpt/checkpoint_00000" + std::to_string(seq));
    (*m.mutable_metrics()->mutable_values())["loss"] = loss;
    return m;
  };
  h.From("a", report(1, 0.9));
  h.From("a", report(1, 0.9));  // the same report again, on a new stream: once
  JobRequest request;
  request.set_job_id(id);
  REQUIRE(h.head->jobs().Metrics(request)->records_size() == 1);

  FakeClock clock2;
  TempTree dir;
  LogStore logs(dir.Path("logs"));
  HeadCore head2(&clock2, h.config, &h.store, &logs, store.blobs.get());
  REQUIRE(head2.Restore().ok());
  auto a = std::make_shared<FakeAgentConnection>(), b = std::make_shared<FakeAgentConnection>();
  head2.OnAgentMessage(a, RegisterAgain("a", 1, "", {}));  // rank 0 exited meanwhile
  head2.OnAgentMessage(b, RegisterAgain("b", 1, id, {1}));
  // Another node cannot speak for rank 0.
  head2.OnAgentMessage(b, report(2, 0.1));
  REQUIRE(head2.jobs().Metrics(request)->records_size() == 1);
  // Rank 0's node sends what it kept, in order: one report the old head had
  // taken, two it had not, a stored checkpoint, then the exit.
  head2.OnAgentMessage(a, report(1, 0.9));
  head2.OnAgentMessage(a, report(2, 0.5));
  head2.OnAgentMessage(a, report(3, 0.3));
  const std::string ckpt = store.Folder("epoch 3");
  head2.OnAgentMessage(a, Stored(id, 0, ckpt, 3));
  AgentMessage exit;
  exit.mutable_rank_exited()->set_job_id(id);
  exit.mutable_rank_exited()->set_rank(0);
  head2.OnAgentMessage(a, exit);
  auto records = head2.jobs().Metrics(request)->records();
  REQUIRE(records.size() == 3);
  REQUIRE(records[1].values().at("loss") == 0.5);
  REQUIRE(records[2].values().at("loss") == 0.3);
  REQUIRE(records[2].report_seq() == 3);
  JobInfo job = *head2.jobs().Get(id);
  REQUIRE(job.latest_checkpoint() == "/ckpt/checkpoint_000003");
  REQUIRE(job.stored_checkpoints_size() == 1);
  REQUIRE(job.stored_checkpoints(0).manifest_id() == ckpt);
  REQUIRE(job.state() == RUNNING);  // rank 1 still runs, adopted
  // And a third head, from the journal: the numbers came with the records.
  FakeClock clock3;
  LogStore logs3(dir.Path("logs3"));
  HeadCore head3(&clock3, h.config, &h.store, &logs3, store.blobs.get());
  REQUIRE(head3.Restore().ok());
  auto a3 = std::make_shared<FakeAgentConnection>();
  head3.OnAgentMessage(a3, RegisterAgain("a", 1, "", {}));
  head3.OnAgentMessage(a3, report(3, 0.3));
  REQUIRE(head3.jobs().Metrics(request)->records_size() == 3);
}

TEST_CASE_METHOD(StartedJob, "delete forgets a finished job and its data, journalled, a running job is refused",
                 "[jobs][results]") {
  std::string ckpt = store.Folder("state");
  h.From("a", Stored(id, 0, ckpt, 0));
  REQUIRE(h.head->jobs().Delete(id).status().code() == Status::Code::kFailedPrecondition);
  h.Exit("a", id, 0, 0, 0);
  h.Exit("b", id, 0, 1, 0);
  REQUIRE(h.Job(id).state() == SUCCEEDED);
  REQUIRE(store.blobs->Has(ckpt));  // kept after the job ended...
  REQUIRE(h.head->jobs().Delete(id).ok());
  REQUIRE_FALSE(store.blobs->Has(ckpt));  // ...until deleted
  REQUIRE(h.head->jobs().Get(id).status().code() == Status::Code::kNotFound);
  REQUIRE(h.head->jobs().Delete(id).status().code() == Status::Code::kNotFound);
  REQUIRE(ReplayJobs(*h.store.LoadAll()).jobs.count(id) == 0);
}

TEST_CASE("a restarted head holds the stored checkpoints again, evicted data is noted on the job", "[jobs][results]") {
  BlobStoreDir store;
  std::string id, ckpt;
  {
    Harness h(store.blobs.get());
    id = AddNodesAndStartJob(h);
    ckpt = store.Folder("state");
    h.From("a", Stored(id, 0, ckpt, 0));
    // The head goes away mid-job; its journal stays.
    MemoryJobStore journal = h.store;
    store.blobs->UnpinAll(id + "/checkpoint/" + ckpt);  // a new head process starts with no pins
    REQUIRE_FALSE(store.blobs->IsPinned(ckpt));
    FakeClock clock;
    LogStore logs("");
    HeadCore restarted(&clock, h.config, &journal, &logs, store.blobs.get());
    REQUIRE(restarted.Restore().ok());
    REQUIRE(restarted.jobs().Get(id)->stored_checkpoints(0).manifest_id() == ckpt);
    REQUIRE(store.blobs->IsPinned(ckpt));
  }
  // Eviction of a finished job's checkpoint is written on the job.
  Harness h(store.blobs.get());
  std::string done = AddNodesAndStartJob(h);
  std::string kept = store.Folder("kept state");
  h.From("a", Stored(done, 0, kept, 4));
  h.Exit("a", done, 0, 0, 0);
  h.Exit("b", done, 0, 1, 0);
  h.head->jobs().OnDataReleased(done + "/checkpoint/" + kept, "");
  JobInfo job = h.Job(done);
  REQUIRE(job.stored_checkpoints_size() == 0);
  REQUIRE(job.data_released().find("evicted a stored checkpoint") != std::string::npos);
}

TEST_CASE("a rank's log counts only from the node running it in the current attempt", "[jobs][results]") {
  BlobStoreDir logs;  // a temporary folder
  Harness h(nullptr, (logs.path / "logs").string());
  h.AddNode("a", 1);
  h.AddNode("b", 1);
  std::string id = h.Submit(2, 1, STRICT_SPREAD);
  h.AnswerPort("a", 1);
  auto log = [&](const std::string& node, int attempt, int rank, const std::string& text) {
    AgentMessage m;
    m.mutable_log()->set_job_id(id);
    m.mutable_log()->set_attempt(attempt);
    m.mutable_log()->set_rank(rank);
    m.mutable_log()->set_data(text);
    h.From(node, m);
  };
  log("a", 0, 0, "from rank 0\n");
  log("b", 0, 0, "forged\n");      // b does not run rank 0
  log("a", 3, 0, "stale\n");       // no attempt 3
  log("a", 0, 99, "made up\n");    // no rank 99
  LogsRequest request;
  request.set_job_id(id);
  request.set_rank(-1);
  auto reply = h.head->jobs().Logs(request);
  REQUIRE(reply.ok());
  std::string all;
  for (const auto& chunk : reply->chunks()) all += chunk.data();
  REQUIRE(all.find("from rank 0") != std::string::npos);
  REQUIRE(all.find("forged") == std::string::npos);
  REQUIRE(all.find("stale") == std::string::npos);
  REQUIRE(all.find("made up") == std::string::npos);
}

TEST_CASE("job ids carry the head's cluster id, so a head that lost its state never repeats them", "[jobs]") {
  Harness h;
  h.head->jobs().set_cluster_id("a1b2c3");
  h.AddNode("a", 1);
  REQUIRE(h.Submit(1, 1, PACK) == "job-0001-a1b2c3");
  REQUIRE(h.Submit(1, 1, PACK) == "job-0002-a1b2c3");
}


TEST_CASE_METHOD(StartedJob,
                 "while rank 0's node stores its last checkpoint before the job may end, the job says it is finishing",
                 "[jobs][results]") {
  auto pending = [&](int64_t done, int64_t total, int attempt = 0) {
    AgentMessage m;
    ResultsPending* p = m.mutable_results_pending();
    p->set_job_id(id);
    p->set_attempt(attempt);
    p->set_checkpoint("checkpoint_000003");
    p->set_done_bytes(done);
    p->set_total_bytes(total);
    return m;
  };
  h.Exit("b", id, 0, 1, 0, 0);  // rank 1 is done; rank 0's exit waits on its node
  h.From("b", pending(0, 0));   // not rank 0's node: nothing said
  REQUIRE(h.Job(id).reason().find("finishing") == std::string::npos);
  h.From("a", pending(0, 0, 1));  // no such attempt
  REQUIRE(h.Job(id).reason().find("finishing") == std::string::npos);
  h.From("a", pending(0, 0));
  REQUIRE(h.Job(id).state() == RUNNING);
  REQUIRE(h.Job(id).reason() ==
          "finishing: rank 0 exited 0; storing checkpoint_000003, the checkpoint it reported last (reading it)");
  h.From("a", pending(120 << 20, 192 << 20));
  REQUIRE(h.Job(id).reason() == "finishing: rank 0 exited 0; storing checkpoint_000003, the checkpoint it reported "
                                "last (120.0 MiB of 192.0 MiB)");
  h.From("a", Stored(id, 0, store.Folder("epoch 3"), 3));
  h.Exit("a", id, 0, 0, 0, 0);
  const JobInfo job = h.Job(id);
  REQUIRE(job.state() == SUCCEEDED);
  REQUIRE(job.reason().find("finishing") == std::string::npos);
  h.From("a", pending(1, 2));  // late: an ended job's reason stays
  REQUIRE(h.Job(id).reason() == job.reason());
}

// JobResults on its own over a job table: its holds on the store follow
// the table's events, not a call from whoever sets a state.
TEST_CASE("results let a job's package go when the table says it ended, and all its data when it is removed",
          "[jobs][results]") {
  BlobStoreDir blobs;
  JobTableFixture f;
  JobData data(blobs.blobs.get());
  NodeTable nodes(&f.clock, 2'000'000);
  JobResults results(&f.clock, f.config, &f.table, &nodes, &data);
  f.table.Subscribe(&results);
  const std::string package = blobs.Put("a code package");
  const std::string outputs = blobs.Folder("a model");
  TrackedJob& job = f.Add();
  job.info.mutable_spec()->set_package_id(package);
  REQUIRE(data.HoldPackage(job.info).ok());
  REQUIRE(data.HoldOutputs(&job.info, outputs).ok());
  f.table.SetState(job, RUNNING, "placed");
  REQUIRE(blobs.blobs->IsPinned(package));
  f.table.SetState(job, SUCCEEDED, "done");
  REQUIRE_FALSE(blobs.blobs->IsPinned(package));
  REQUIRE(blobs.blobs->IsPinned(outputs));  // kept, evictable, until the job goes
  REQUIRE(f.table.Remove(job, "deleted by a test").ok());
  REQUIRE_FALSE(blobs.blobs->IsPinned(outputs));
  REQUIRE_FALSE(blobs.blobs->Has(outputs));
}
