// Checkpoints and outputs of a real training job (examples/linear, ctrain)
// with the cluster's store in S3 (`--store s3://`) on a real radosgw: rank
// 0's node stores each checkpoint in S3 itself, the head journals only the
// ids, and clusterctl fetch reads S3 directly. Then the fault: radosgw is
// killed while the job keeps checkpointing and comes back; uploads retry,
// the job goes on, and what is fetched afterwards is a complete checkpoint.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "ceph_fixture.h"
#include "common/storage/cluster_storage.h"
#include "harness.h"
#include "job_json.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// The linear example and run.sh (rank 0 writes model.pt and results/ at the end).
fs::path JobFolder(Cluster& cluster, const std::string& name, const std::string& linear_flags) {
  fs::path dir = fs::path(cluster.temp_dir()) / name;
  fs::create_directories(dir);
  fs::copy_file(LINEAR_BIN, dir / "linear");
  std::ofstream(dir / "run.sh") << "#!/bin/sh\nset -e\n./linear " << linear_flags << "\n"
                                << "if [ \"$RANK\" = 0 ]; then echo \"weights of $CLUSTER_JOB_ID\" > model.pt; "
                                << "mkdir -p results; echo done > results/summary.txt; fi\n";
  fs::permissions(dir / "run.sh", fs::perms(0755));
  std::ofstream(dir.string() + ".yaml") << "name: " << name << "\nentrypoint: ./run.sh\nworking_dir: " << dir.string()
                                        << "\nnum_workers: 2\nplacement: SPREAD\noutputs: [model.pt, results/]\n";
  return dir;
}

void StartS3Cluster(Cluster& cluster, const CephFixture& ceph, const std::vector<std::string>& head_flags) {
  std::vector<std::string> flags = head_flags;
  flags.insert(flags.end(), {"--store", "s3://results/cluster", "--s3-endpoint", ceph.endpoint()});
  RunResult head = cluster.StartHead(flags);
  INFO(head.out << head.err);
  REQUIRE(head.exit_code == 0);
  REQUIRE(cluster.StartWorker("w1", {"--num-cpus", "1"}).exit_code == 0);
  REQUIRE(cluster.StartWorker("w2", {"--num-cpus", "1"}).exit_code == 0);
}

}  // namespace

TEST_CASE("with --store s3:// checkpoints and outputs go to S3 and come back with fetch", "[ceph][s3][results]") {
  REQUIRE_CEPH(ceph);
  REQUIRE(ceph->CreateBucket("results"));
  UseCeph(*ceph);
  Cluster cluster;
  StartS3Cluster(cluster, *ceph, {"--num-cpus", "1"});
  fs::path dir = JobFolder(cluster, "ok", "--epochs 3");
  RunResult r = cluster.Ctl({"submit", dir.string() + ".yaml", "--follow", "--json"}, 180s);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  JobInfo job = ParseJson<JobInfo>(cluster.Ctl({"job", SubmittedJobId(r), "--json"}));
  REQUIRE(job.state() == SUCCEEDED);
  REQUIRE(Slurp(dir / "model.pt") == "weights of " + job.job_id() + "\n");
  REQUIRE(job.stored_checkpoints_size() >= 1);
  REQUIRE(job.stored_checkpoints_size() <= 2);
  REQUIRE(job.stored_checkpoints().rbegin()->name() == "checkpoint_000002");

  fs::path later = fs::path(cluster.temp_dir()) / "later";
  RunResult fetched = cluster.Ctl({"fetch", job.job_id(), "--checkpoint", "--out", later.string()});
  INFO(fetched.err);
  REQUIRE(fetched.exit_code == 0);
  REQUIRE(fs::exists(later / "checkpoint_000002" / "meta.json"));
  REQUIRE(fs::exists(later / "checkpoint_000002" / "model.pt"));
  RunResult outputs = cluster.Ctl({"fetch", job.job_id(), "--out", later.string()});
  REQUIRE(outputs.exit_code == 0);
  REQUIRE(Slurp(later / "results" / "summary.txt") == "done\n");
  // The head's disk holds the journal and logs, no blob.
  CHECK_FALSE(fs::exists(fs::path(cluster.temp_dir()) / "state" / "store"));
}

// The cluster's store stays the head's own; the job keeps its checkpoints
// and outputs in S3 locations of its own. Attempt 0 checkpoints, loses its
// checkpoint folder (a dead disk) and fails; attempt 1 must restore from S3.
TEST_CASE("a job's own checkpoint.storage and outputs_storage in S3: restored from there, fetched from there, never "
          "held by the head",
          "[ceph][s3][results]") {
  REQUIRE_CEPH(ceph);
  REQUIRE(ceph->CreateBucket("ckpts"));
  REQUIRE(ceph->CreateBucket("models"));
  UseCeph(*ceph);
  Cluster cluster;
  RunResult head = cluster.StartHead({"--num-cpus", "1"});
  INFO(head.out << head.err);
  REQUIRE(head.exit_code == 0);
  REQUIRE(cluster.StartWorker("w1", {"--num-cpus", "1"}).exit_code == 0);
  fs::path dir = fs::path(cluster.temp_dir()) / "own";
  fs::create_directories(dir);
  fs::copy_file(LINEAR_BIN, dir / "linear");
  std::ofstream(dir / "run.sh")
      << "#!/bin/sh\nset -e\n"
      << "if [ \"$CLUSTER_ATTEMPT\" = 0 ]; then\n"
      << "  ./linear --epochs 2\n"
      << "  if [ \"$RANK\" = 0 ]; then sleep 2; rm -rf \"$CLUSTER_CHECKPOINT_DIR\"; else sleep 10; fi\n"
      << "  exit 3\n"
      << "fi\n"
      << "./linear --epochs 3\n"
      << "if [ \"$RANK\" = 0 ]; then echo \"weights of $CLUSTER_JOB_ID\" > model.pt; fi\n";
  fs::permissions(dir / "run.sh", fs::perms(0755));
  const std::string yaml = dir.string() + ".yaml";
  std::ofstream(yaml) << "name: own\nentrypoint: ./run.sh\nworking_dir: " << dir.string()
                      << "\nnum_workers: 2\nplacement: SPREAD\nmax_failures: 1\noutputs: [model.pt]\n"
                      << "checkpoint: {storage: s3://ckpts/run1}\noutputs_storage: s3://models/run1\n";
  RunResult r = cluster.Ctl({"submit", yaml, "--follow", "--json"}, 180s);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const std::string id = SubmittedJobId(r);
  JobInfo job = ParseJson<JobInfo>(cluster.Ctl({"job", id, "--json"}));
  REQUIRE(job.state() == SUCCEEDED);
  REQUIRE(job.attempts_size() == 2);
  REQUIRE(Slurp(dir / "model.pt") == "weights of " + id + "\n");

  // Attempt 1 resumed from a checkpoint attempt 0 stored (the newest that
  // got there before the folder went): it ran only the epochs after it.
  const std::string restored = job.attempts(1).restored_checkpoint();
  REQUIRE(restored.rfind("checkpoint_00000", 0) == 0);
  const int resumed_epoch = std::stoi(restored.substr(restored.size() - 1));
  MetricsReply metrics = ParseJson<MetricsReply>(cluster.Ctl({"metrics", id, "--json"}));
  int attempt1_reports = 0;
  for (const MetricRecord& record : metrics.records()) attempt1_reports += record.attempt() == 1 && record.rank() == 0;
  REQUIRE(attempt1_reports == 3 - (resumed_epoch + 1));

  // The bytes are in the job's own buckets, not in the head's store.
  REQUIRE(job.stored_checkpoints_size() >= 1);
  const std::string checkpoint_manifest = job.stored_checkpoints().rbegin()->manifest_id();
  auto ckpts = OpenS3Storage("s3://ckpts/run1", ceph->endpoint(), 0, true);
  auto models = OpenS3Storage("s3://models/run1", ceph->endpoint(), 0, true);
  REQUIRE(ckpts.ok());
  REQUIRE(models.ok());
  REQUIRE((*ckpts)->Stat(checkpoint_manifest)->present());
  REQUIRE((*models)->Stat(job.outputs_manifest())->present());
  const fs::path head_blobs = fs::path(cluster.temp_dir()) / "state" / "store" / "blobs";
  for (const std::string& manifest : {checkpoint_manifest, job.outputs_manifest()}) {
    CHECK_FALSE(fs::exists(head_blobs / manifest.substr(0, 2) / manifest));
  }
  fs::path later = fs::path(cluster.temp_dir()) / "later";
  RunResult fetched = cluster.Ctl({"fetch", id, "--checkpoint", "--out", later.string()});
  INFO(fetched.err);
  REQUIRE(fetched.exit_code == 0);
  REQUIRE(fs::exists(later / "checkpoint_000002" / "model.pt"));
  REQUIRE(cluster.Ctl({"fetch", id, "--out", later.string()}).exit_code == 0);
  REQUIRE(Slurp(later / "model.pt") == "weights of " + id + "\n");

  // A bucket that is not there fails the submit in one line that names the
  // key, the bucket and the endpoint; no job is made.
  fs::path bad = fs::path(cluster.temp_dir()) / "bad.yaml";
  std::ofstream(bad) << "entrypoint: ./run.sh\nworking_dir: " << dir.string()
                     << "\noutputs: [model.pt]\noutputs_storage: s3://no-such-bucket/x\n";
  RunResult refused = cluster.Ctl({"submit", bad.string()});
  INFO(refused.err);
  REQUIRE(refused.exit_code != 0);
  CHECK(refused.err.find("outputs_storage") != std::string::npos);
  CHECK(refused.err.find("no-such-bucket") != std::string::npos);
  CHECK(refused.err.find(ceph->endpoint()) != std::string::npos);
  CHECK(std::count(refused.err.begin(), refused.err.end(), '\n') == 1);
  CHECK(ParseJson<ListJobsReply>(cluster.Ctl({"jobs", "--json"})).jobs_size() == 1);
}

TEST_CASE("radosgw killed while a job checkpoints to S3 and restarted: uploads retry, the job goes on, fetch is complete",
          "[ceph][s3][results]") {
  REQUIRE_CEPH(ceph);
  REQUIRE(ceph->CreateBucket("results"));
  UseCeph(*ceph);
  Cluster cluster;
  StartS3Cluster(cluster, *ceph, {"--num-cpus", "0", "--num-gpus", "0"});
  fs::path dir = JobFolder(cluster, "long", "--epochs 400 --samples 20000");
  RunResult submitted = cluster.Ctl({"submit", dir.string() + ".yaml", "--json"});
  INFO(submitted.err);
  REQUIRE(submitted.exit_code == 0);
  std::string id = SubmittedJobId(submitted);
  JobInfo job = WaitForStoredCheckpoint(cluster, id, 120s);
  const int64_t before = job.stored_checkpoints().rbegin()->epoch();

  // The job checkpoints every epoch: with the gateway gone for 3 s, uploads
  // under way fail and retry with backoff until it is back.
  ceph->KillGateway();
  std::this_thread::sleep_for(3s);
  REQUIRE(ceph->RestartGateway());
  REQUIRE(WaitFor([&] {
    job = ParseJson<JobInfo>(cluster.Ctl({"job", id, "--json"}));
    return job.stored_checkpoints().rbegin()->epoch() > before + 1;
  }, 120s, 200ms));
  INFO(job.reason());
  REQUIRE(job.state() == RUNNING);
  REQUIRE(job.attempts_size() == 1);  // no restart: the outage only delayed uploads

  fs::path out = fs::path(cluster.temp_dir()) / "fetched";
  RunResult fetched = cluster.Ctl({"fetch", id, "--checkpoint", "--out", out.string()});
  INFO(fetched.err);
  REQUIRE(fetched.exit_code == 0);
  int complete = 0;
  for (const auto& e : fs::directory_iterator(out)) {
    complete += e.path().filename().string().rfind("checkpoint_", 0) == 0 && fs::exists(e.path() / "meta.json") &&
                fs::exists(e.path() / "model.pt");
  }
  REQUIRE(complete == 1);
  REQUIRE(cluster.Ctl({"stop", id}).exit_code == 0);
}
