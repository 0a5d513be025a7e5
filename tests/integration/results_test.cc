// Results that survive machines, on one machine (the simulated-machines test
// shows the same across machines): a successful job's outputs and DVCLive
// files come back to the submitter's working_dir before --follow exits 0;
// a failed or stopped one brings back no outputs and --follow exits non-zero; a
// missing output is named; stored checkpoints survive a head restart and
// can be fetched; a job that ends while the head is away keeps its reports,
// checkpoints and outputs; delete forgets a job and its data.
#include <signal.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "harness.h"
#include "job_json.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// A job folder holding the linear example and run.sh (which runs it, then
// has rank 0 write model.pt and results/, then exits with `exit_code`).
// With `start_after`, each rank first writes started.RANK into this folder
// (not its copy of it) and waits for that file to appear there, and writes
// ended.RANK there last.
fs::path JobFolder(Cluster& cluster, const std::string& name, const std::string& linear_flags, int exit_code = 0,
                   const std::string& start_after = "") {
  fs::path dir = fs::path(cluster.temp_dir()) / name;
  fs::create_directories(dir);
  fs::copy_file(LINEAR_BIN, dir / "linear");
  // In the submitter's folder, not the rank's copy of it: the test waits on them.
  const std::string here = dir.string() + "/";
  const std::string wait = start_after.empty() ? ""
                           : "touch " + here + "started.$RANK\nwhile [ ! -e " + here + start_after +
                                 " ]; do sleep 0.05; done\n";
  const std::string end = start_after.empty() ? "" : "touch " + here + "ended.$RANK\n";
  std::ofstream(dir / "run.sh") << "#!/bin/sh\nset -e\n" << wait << "./linear " << linear_flags << "\n"
                                << "if [ \"$RANK\" = 0 ]; then echo \"weights of $CLUSTER_JOB_ID\" > model.pt; "
                                << "mkdir -p results; echo done > results/summary.txt; fi\n" << end << "exit "
                                << exit_code << "\n";
  fs::permissions(dir / "run.sh", fs::perms(0755));
  std::ofstream(dir.string() + ".yaml") << "name: " << name << "\nentrypoint: ./run.sh\nworking_dir: " << dir.string()
                                        << "\nnum_workers: 2\nplacement: SPREAD\n"
                                        << "outputs: [model.pt, results/, absent.txt]\ndvclive: dvclive\n";
  return dir;
}

void StartCluster(Cluster& cluster, const std::vector<std::string>& head_flags = {"--num-cpus", "1"}) {
  REQUIRE(cluster.StartHead(head_flags).exit_code == 0);
  REQUIRE(cluster.StartWorker("w1", {"--num-cpus", "1"}).exit_code == 0);
  REQUIRE(cluster.StartWorker("w2", {"--num-cpus", "1"}).exit_code == 0);
}

}  // namespace

TEST_CASE("a successful job's outputs and DVCLive files come back before --follow exits 0, a missing one is named",
          "[results]") {
  Cluster cluster;
  StartCluster(cluster);
  fs::path dir = JobFolder(cluster, "ok", "--epochs 3");
  RunResult r = cluster.Ctl({"submit", dir.string() + ".yaml", "--follow", "--json"}, 120s);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  JobInfo job = ParseJson<JobInfo>(cluster.Ctl({"job", SubmittedJobId(r), "--json"}));
  REQUIRE(job.state() == SUCCEEDED);
  REQUIRE(job.reason() == "all 2 ranks exited 0 (attempt 0); rank 0 did not write output absent.txt");
  REQUIRE(Slurp(dir / "model.pt") == "weights of " + job.job_id() + "\n");
  REQUIRE(Slurp(dir / "results" / "summary.txt") == "done\n");
  REQUIRE_FALSE(fs::exists(dir / "absent.txt"));
  // DVCLive's layout, one row per epoch.
  std::string loss = Slurp(dir / "dvclive" / "plots" / "metrics" / "loss.tsv");
  REQUIRE(loss.rfind("timestamp\tstep\tloss\n", 0) == 0);
  REQUIRE(std::count(loss.begin(), loss.end(), '\n') == 4);
  REQUIRE(Slurp(dir / "dvclive" / "metrics.json").find("\"step\": 2") != std::string::npos);
  // The newest checkpoint is in the store, and at most two (checkpoint.keep
  // defaults to 2); an older one still waiting when a newer came was skipped.
  REQUIRE(job.stored_checkpoints_size() >= 1);
  REQUIRE(job.stored_checkpoints_size() <= 2);
  REQUIRE(job.stored_checkpoints().rbegin()->name() == "checkpoint_000002");

  // Later, elsewhere: fetch brings the same back.
  fs::path later = fs::path(cluster.temp_dir()) / "later";
  RunResult fetched = cluster.Ctl({"fetch", job.job_id(), "--out", later.string()});
  INFO(fetched.err);
  REQUIRE(fetched.exit_code == 0);
  REQUIRE(Slurp(later / "model.pt") == Slurp(dir / "model.pt"));
  REQUIRE(Slurp(later / "dvclive" / "plots" / "metrics" / "loss.tsv") == loss);
  RunResult checkpoint = cluster.Ctl({"fetch", job.job_id(), "--checkpoint", "--out", later.string()});
  INFO(checkpoint.err);
  REQUIRE(checkpoint.exit_code == 0);
  REQUIRE(fs::exists(later / "checkpoint_000002" / "meta.json"));
  REQUIRE(fs::exists(later / "checkpoint_000002" / "model.pt"));
  RunResult again = cluster.Ctl({"fetch", job.job_id(), "--checkpoint", "--out", later.string()});
  REQUIRE(again.exit_code == 1);
  REQUIRE(again.err.find("exists already") != std::string::npos);

  // Deleted: forgotten, data and all.
  REQUIRE(cluster.Ctl({"delete", job.job_id()}).exit_code == 0);
  RunResult gone = cluster.Ctl({"fetch", job.job_id()});
  REQUIRE(gone.exit_code == 1);
  REQUIRE(gone.err == "clusterctl: no job '" + job.job_id() + "'\n");
}

TEST_CASE("a failed job brings back no outputs and --follow exits non-zero", "[results]") {
  Cluster cluster;
  StartCluster(cluster);
  fs::path dir = JobFolder(cluster, "fails", "--epochs 2", /*exit_code=*/3);
  RunResult r = cluster.Ctl({"submit", dir.string() + ".yaml", "--follow", "--json"}, 120s);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 1);
  REQUIRE_FALSE(fs::exists(dir / "model.pt"));
  REQUIRE_FALSE(fs::exists(dir / "results"));
  // Its DVCLive files do come: they show how far it got.
  REQUIRE(fs::exists(dir / "dvclive" / "plots" / "metrics" / "loss.tsv"));
  // And fetch brings them again later, elsewhere, though no outputs.
  const std::string id = SubmittedJobId(r);
  fs::path later = fs::path(cluster.temp_dir()) / "later";
  RunResult fetched = cluster.Ctl({"fetch", id, "--out", later.string()});
  INFO(fetched.err);
  CHECK(fetched.exit_code == 1);
  CHECK(fetched.err.find("has no outputs: it is FAILED") != std::string::npos);
  CHECK(fs::exists(later / "dvclive" / "metrics.json"));
  CHECK(fs::exists(later / "dvclive" / "plots" / "metrics" / "loss.tsv"));
  CHECK_FALSE(fs::exists(later / "model.pt"));
}

TEST_CASE("a stopped job brings back no outputs and --follow exits non-zero", "[results]") {
  Cluster cluster;
  StartCluster(cluster);
  fs::path dir = fs::path(cluster.temp_dir()) / "stopped";
  fs::create_directories(dir);
  const std::string started = (dir / "started").string();  // in the submitter's folder, not the rank's copy
  std::ofstream(dir / "run.sh") << "#!/bin/sh\necho weights > model.pt\ntouch " << started << "\nexec sleep 600\n";
  fs::permissions(dir / "run.sh", fs::perms(0755));
  std::ofstream(dir.string() + ".yaml") << "name: stopped\nentrypoint: ./run.sh\nworking_dir: " << dir.string()
                                        << "\noutputs: [model.pt]\n";
  RunResult followed;
  std::thread follow([&] { followed = cluster.Ctl({"submit", dir.string() + ".yaml", "--follow", "--json"}, 120s); });
  const bool running = WaitFor([&] { return fs::exists(started); }, 60s, 50ms);
  const ListJobsReply jobs = ParseJson<ListJobsReply>(cluster.Ctl({"jobs", "--json"}));
  if (running && jobs.jobs_size() == 1) cluster.Ctl({"stop", jobs.jobs(0).job_id()});
  follow.join();
  REQUIRE(running);
  REQUIRE(jobs.jobs_size() == 1);
  INFO(followed.out << followed.err);
  CHECK(followed.exit_code == 1);
  CHECK(ParseJson<JobInfo>(cluster.Ctl({"job", jobs.jobs(0).job_id(), "--json"})).state() == STOPPED);
  CHECK_FALSE(fs::exists(dir / "model.pt"));  // rank 0 wrote it, in its own folder: never brought back
}

// Code already on every machine (an installed package, say): no working_dir,
// nothing to bring back, and --follow must not look for a folder to put it in.
TEST_CASE("a job with no working_dir and no outputs: --follow exits 0 with nothing to fetch", "[results]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "1"}).exit_code == 0);
  const std::string file = cluster.temp_dir() + "/installed.yaml";
  std::ofstream(file) << "name: installed\nentrypoint: echo trained\n";
  RunResult r = cluster.Ctl({"submit", file, "--follow"}, 60s);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.out.find("trained") != std::string::npos);
  REQUIRE(r.err.find("SUCCEEDED") != std::string::npos);
  REQUIRE(r.err.find("clusterctl:") == std::string::npos);  // no error, no warning
}

// The second job's outputs must evict the first job's, not their own first
// pieces (held by nobody until the manifest is pinned), which would leave it
// with "manifest ... names blob ..., which the store lacks".
TEST_CASE("outputs that fill a capped store push out a finished job's outputs and not their own pieces",
          "[results]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "1", "--store-capacity-mb", "40"}).exit_code == 0);
  const fs::path dir = fs::path(cluster.temp_dir()) / "big";
  fs::create_directories(dir);
  std::ofstream(dir.string() + ".yaml") << "name: big\nworking_dir: " << dir.string()
                                        << "\nexcludes: [out]\noutputs: [out]\n"
                                        << "entrypoint: mkdir -p out; head -c 25000000 /dev/urandom > out/b.bin\n";
  std::vector<std::string> ids;
  for (int i = 0; i < 2; ++i) {
    fs::remove_all(dir / "out");
    RunResult r = cluster.Ctl({"submit", dir.string() + ".yaml", "--follow", "--json"}, 120s);
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    REQUIRE(fs::file_size(dir / "out" / "b.bin") == 25000000);
    ids.push_back(SubmittedJobId(r));
  }
  RunResult first = cluster.Ctl({"job", ids[0]});
  INFO(first.out);
  REQUIRE(first.out.find("the head's store evicted its outputs at ") != std::string::npos);
  RunResult fetched = cluster.Ctl({"fetch", ids[0], "--out", cluster.temp_dir() + "/again"});
  CHECK(fetched.exit_code != 0);
}

TEST_CASE("stored checkpoints survive a head restart, and can be fetched after it", "[results]") {
  Cluster cluster;
  // Ranks on workers only: they live on while the head is away.
  StartCluster(cluster, {"--num-cpus", "0", "--num-gpus", "0"});
  fs::path dir = JobFolder(cluster, "long", "--epochs 400 --samples 20000");
  RunResult submitted = cluster.Ctl({"submit", dir.string() + ".yaml", "--json"});
  REQUIRE(submitted.exit_code == 0);
  std::string id = SubmittedJobId(submitted);
  JobInfo job = WaitForStoredCheckpoint(cluster, id, 120s);
  const CheckpointRef before = *job.stored_checkpoints().rbegin();

  cluster.KillHead();
  RunResult restarted = cluster.StartHead({"--num-cpus", "0", "--num-gpus", "0"});
  INFO(restarted.out << restarted.err);
  REQUIRE(restarted.exit_code == 0);

  // The job runs on meanwhile and may store newer ones (keep 2 rotates the
  // oldest out); what was stored before the head died is never lost.
  JobInfo after = ParseJson<JobInfo>(cluster.Ctl({"job", id, "--json"}));
  REQUIRE(after.stored_checkpoints_size() >= 1);
  REQUIRE(after.stored_checkpoints().rbegin()->epoch() >= before.epoch());
  bool kept = false;
  for (const auto& c : after.stored_checkpoints()) kept = kept || c.manifest_id() == before.manifest_id();
  REQUIRE((kept || after.stored_checkpoints(0).epoch() > before.epoch()));
  fs::path out = fs::path(cluster.temp_dir()) / "fetched";
  RunResult fetched = cluster.Ctl({"fetch", id, "--checkpoint", "--out", out.string()});
  INFO(fetched.err);
  REQUIRE(fetched.exit_code == 0);
  // Whichever is newest by now: a complete checkpoint folder.
  int complete = 0;
  for (const auto& e : fs::directory_iterator(out)) {
    complete += e.path().filename().string().rfind("checkpoint_", 0) == 0 && fs::exists(e.path() / "meta.json");
  }
  REQUIRE(complete == 1);
  REQUIRE(cluster.Ctl({"stop", id}).exit_code == 0);
}

// A rank 0 that reports its last epochs and exits while the head restarts:
// its reports (not refused as "the head is not reachable right now"), their
// checkpoints and its outputs (uploads tried again until the head is back)
// all reach the head, and the job SUCCEEDS with them.
TEST_CASE("a job that ends while the head is away keeps its reports and its last checkpoint and outputs",
          "[results][journal]") {
  Cluster cluster;
  StartCluster(cluster, {"--num-cpus", "0", "--num-gpus", "0"});  // ranks on workers: they outlive the head
  fs::path dir = JobFolder(cluster, "away", "--epochs 3", 0, "go");
  RunResult submitted = cluster.Ctl({"submit", dir.string() + ".yaml", "--json"});
  REQUIRE(submitted.exit_code == 0);
  const std::string id = SubmittedJobId(submitted);
  REQUIRE(WaitFor([&] { return fs::exists(dir / "started.0") && fs::exists(dir / "started.1"); }, 60s));

  cluster.KillHead();
  std::ofstream(dir / "go") << "";
  // The whole job runs and ends with no head: three epochs reported, each
  // with a checkpoint, and rank 0's outputs written.
  REQUIRE(WaitFor([&] { return fs::exists(dir / "ended.0") && fs::exists(dir / "ended.1"); }, 120s, 100ms));
  std::this_thread::sleep_for(1500ms);  // the agents reap the ranks and try the head
  RunResult restarted = cluster.StartHead({"--num-cpus", "0", "--num-gpus", "0"});
  INFO(restarted.out << restarted.err);
  REQUIRE(restarted.exit_code == 0);

  JobInfo job = WaitUntilFinal(cluster, id, 90s);
  INFO(job.reason());
  REQUIRE(job.state() == SUCCEEDED);
  REQUIRE(job.reason() == "all 2 ranks exited 0 (attempt 0); rank 0 did not write output absent.txt");
  REQUIRE(job.stored_checkpoints_size() >= 1);
  REQUIRE(job.stored_checkpoints().rbegin()->name() == "checkpoint_000002");
  fs::path later = fs::path(cluster.temp_dir()) / "later";
  RunResult fetched = cluster.Ctl({"fetch", id, "--out", later.string()});
  INFO(fetched.err);
  REQUIRE(fetched.exit_code == 0);
  REQUIRE(Slurp(later / "model.pt") == "weights of " + id + "\n");
  // Every epoch's report, once each.
  std::string loss = Slurp(later / "dvclive" / "plots" / "metrics" / "loss.tsv");
  INFO(loss);
  REQUIRE(std::count(loss.begin(), loss.end(), '\n') == 4);
  REQUIRE(loss.find("\t2\t") != std::string::npos);
}

// Checkpoint uploads that fail while the head is away must not leave the
// node's store channel in gRPC's reconnect backoff (growing to minutes),
// where a job placed there right after the head comes back would fail:
// "downloading blob ...: cannot reach the store ... Connection refused".
TEST_CASE("a job placed on a node right after a head restart gets its code though uploads failed meanwhile",
          "[results][journal]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "0", "--num-gpus", "0"}).exit_code == 0);
  REQUIRE(cluster.StartWorker("w1", {"--num-cpus", "2"}).exit_code == 0);
  fs::path dir = JobFolder(cluster, "uploading", "--epochs 4000 --samples 2000");
  std::ofstream(dir.string() + ".yaml", std::ios::app) << "resources_per_worker: {CPU: 1}\n";
  RunResult long_job = cluster.Ctl({"submit", dir.string() + ".yaml", "--json", "--set", "num_workers=1",
                                    "--set", "placement=PACK"});
  INFO(long_job.err);
  REQUIRE(long_job.exit_code == 0);
  const std::string long_id = SubmittedJobId(long_job);
  WaitForStoredCheckpoint(cluster, long_id, 120s);

  cluster.KillHead();
  std::this_thread::sleep_for(12s);  // an epoch's checkpoint fails to upload many times over
  RunResult restarted = cluster.StartHead({"--num-cpus", "0", "--num-gpus", "0"});
  INFO(restarted.out << restarted.err);
  REQUIRE(restarted.exit_code == 0);
  // At once: a new package, placed on w1 beside the job still running there.
  const std::string file = cluster.temp_dir() + "/quick.yaml";
  fs::create_directories(cluster.temp_dir() + "/quick");
  std::ofstream(cluster.temp_dir() + "/quick/hello.txt") << "hello after the restart\n";
  std::ofstream(file) << "name: quick\nentrypoint: cat hello.txt\nworking_dir: " << cluster.temp_dir()
                      << "/quick\nresources_per_worker: {CPU: 1}\n";
  RunResult quick = cluster.Ctl({"submit", file, "--follow"}, 60s);
  INFO(quick.out << quick.err);
  REQUIRE(quick.exit_code == 0);
  REQUIRE(quick.out.find("hello after the restart") != std::string::npos);
  REQUIRE(cluster.Ctl({"stop", long_id}).exit_code == 0);
}

// With its head stopped (SIGSTOP) during a checkpoint upload, a stopping
// worker must not wait out the store call's 30 s deadline: `clusterd stop`
// would end it with SIGKILL after its grace period, losing the log line
// saying what the head never heard.
TEST_CASE("a worker stopping while its head stopped answering mid-upload ends within seconds and says what was lost",
          "[results]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "0", "--num-gpus", "0"}).exit_code == 0);
  REQUIRE(cluster.StartWorker("w1", {"--num-cpus", "1"}).exit_code == 0);
  fs::path dir = JobFolder(cluster, "stalled", "--epochs 4000 --samples 2000");
  RunResult submitted = cluster.Ctl({"submit", dir.string() + ".yaml", "--json", "--set", "num_workers=1"});
  INFO(submitted.err);
  REQUIRE(submitted.exit_code == 0);
  const std::string id = SubmittedJobId(submitted);
  WaitForStoredCheckpoint(cluster, id, 120s);
  const pid_t worker = cluster.WorkerPid("w1");
  const pid_t head = cluster.HeadPid();
  REQUIRE(head > 0);
  REQUIRE(kill(head, SIGSTOP) == 0);
  std::this_thread::sleep_for(3s);  // an epoch's checkpoint is reported, kept, and its upload waits on the head
  const auto stopping = std::chrono::steady_clock::now();
  REQUIRE(kill(worker, SIGTERM) == 0);  // what `clusterd stop` sends, before its SIGKILL 10 s later
  const bool ended = WaitFor([&] { return !ProcessAlive(worker); }, 9s, 50ms);
  const auto took_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - stopping).count();
  kill(head, SIGCONT);
  INFO("the worker took " << took_ms << " ms");
  REQUIRE(ended);
  RunResult said = Run({"/bin/sh", "-c", "grep -rh 'the head never heard or did not confirm' " + cluster.temp_dir() +
                                           "/session_*/logs/ | head -1"});
  INFO(said.out);
  REQUIRE(said.out.find("stopping with ") != std::string::npos);
}

TEST_CASE("a head that keeps one finished job deletes the older ones once a second old and says so", "[results]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "1", "--max-finished-jobs", "1", "--min-finished-job-age-s", "1"})
              .exit_code == 0);
  const std::string file = cluster.temp_dir() + "/echo.yaml";
  std::ofstream(file) << "name: echo\nentrypoint: echo hello\n";
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    RunResult r = cluster.Ctl({"submit", file, "--follow", "--json"}, 60s);
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);  // each saw how it ended
    ids.push_back(SubmittedJobId(r));
  }
  auto listed = [&] { return ParseJson<ListJobsReply>(cluster.Ctl({"jobs", "--json"})).jobs_size(); };
  REQUIRE(WaitFor([&] { return listed() == 1; }, 30s, 200ms));
  REQUIRE(ParseJson<JobInfo>(cluster.Ctl({"job", ids[2], "--json"})).state() == SUCCEEDED);
  for (const std::string& gone : {ids[0], ids[1]}) {
    RunResult r = cluster.Ctl({"logs", gone});
    CHECK(r.exit_code == 1);
    CHECK(r.err == "clusterctl: no job '" + gone +
                       "': the head keeps only the 1 finished job that ended last (--max-finished-jobs) and has "
                       "deleted older ones, with their logs and stored data\n");
  }
}

TEST_CASE("a sweep followed to its end brings back the best trial's outputs written after it reached max_t",
          "[results][sweep]") {
  Cluster cluster;
  StartCluster(cluster);
  fs::path dir = fs::path(cluster.temp_dir()) / "sweep";
  fs::create_directories(dir);
  fs::copy_file(LINEAR_BIN, dir / "linear");
  // Its last report is its last epoch, max_t: then rank 0 writes its model.
  std::ofstream(dir / "run.sh") << "#!/bin/sh\nset -e\n./linear --epochs 3 --lr \"$1\" --samples 200 --threads 1\n"
                                << "if [ \"$RANK\" = 0 ]; then echo \"lr=$1\" > model.txt; fi\n";
  fs::permissions(dir / "run.sh", fs::perms(0755));
  const std::string file = dir.string() + ".yaml";
  std::ofstream(file) << "name: sweep\nentrypoint: ./run.sh {lr}\nworking_dir: " << dir.string()
                      << "\noutputs: [model.txt]\ndvclive: dvclive\n"
                      << "tune:\n  metric: loss\n  mode: min\n  search_space: {lr: {grid: [0.001, 0.1]}}\n"
                      << "  scheduler: {asha: {max_t: 3, grace_period: 3, reduction_factor: 2}}\n"
                      << "  best_params: best.yaml\n";
  RunResult r = cluster.Ctl({"submit", file, "--follow"}, 180s);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(Slurp((dir / "best.yaml").string()) == "lr: 0.1\n");
  CHECK(Slurp((dir / "model.txt").string()) == "lr=0.1\n");
  CHECK(fs::exists(dir / "dvclive" / "plots" / "metrics" / "loss.tsv"));
}

// Issue "a job that SUCCEEDED has its last checkpoint stored": fetch
// --checkpoint waits for the one rank 0 reported last while its node is
// still storing it; --no-wait takes the newest stored now.
TEST_CASE("fetch --checkpoint waits for the checkpoint rank 0 reported last, and --no-wait takes the newest stored",
          "[results]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "1"}).exit_code == 0);
  fs::path dir = fs::path(cluster.temp_dir()) / "paced";
  fs::create_directories(dir);
  // checkpoint_000001 is 8 MiB that does not repeat, sent at 2 MiB/s while the rank lives on.
  std::ofstream(dir / "job.py") << "import os, tempfile, time\n"
                                << "from clusterd import train\n"
                                << "for size in (1024, 8 << 20):\n"
                                << "    with tempfile.TemporaryDirectory() as tmp:\n"
                                << "        with open(os.path.join(tmp, 'w.bin'), 'wb') as f:\n"
                                << "            f.write(os.urandom(size))\n"
                                << "        train.report({'size': size}, checkpoint=train.Checkpoint.from_directory(tmp))\n"
                                << "    time.sleep(1)\n"
                                << "print('reported both', flush=True)\n"
                                << "time.sleep(60)\n";
  std::ofstream(dir.string() + ".yaml") << "name: paced\nentrypoint: [/usr/bin/python3, job.py]\nworking_dir: "
                                        << dir.string() << "\ncheckpoint: {upload_rate: 2MiB/s}\n";
  RunResult submitted = cluster.Ctl({"submit", dir.string() + ".yaml", "--json"});
  INFO(submitted.out << submitted.err);
  REQUIRE(submitted.exit_code == 0);
  const std::string id = SubmittedJobId(submitted);
  REQUIRE(WaitFor([&] { return cluster.Ctl({"logs", id}).out.find("reported both") != std::string::npos; }, 60s,
                  100ms));
  const fs::path now_dir = fs::path(cluster.temp_dir()) / "now", waited_dir = fs::path(cluster.temp_dir()) / "waited";
  RunResult now = cluster.Ctl({"fetch", id, "--checkpoint", "--no-wait", "--out", now_dir.string()});
  INFO(now.out << now.err);
  REQUIRE(now.exit_code == 0);
  REQUIRE(fs::exists(now_dir / "checkpoint_000000" / "w.bin"));
  REQUIRE(now.err.find("which is not stored (yet)") != std::string::npos);
  RunResult waited = cluster.Ctl({"fetch", id, "--checkpoint", "--out", waited_dir.string()}, 60s);
  INFO(waited.out << waited.err);
  REQUIRE(waited.exit_code == 0);
  REQUIRE(waited.err.find("Waiting for checkpoint_000001, which rank 0 of " + id + " reported last") !=
          std::string::npos);
  REQUIRE(fs::file_size(waited_dir / "checkpoint_000001" / "w.bin") == (8u << 20));
  REQUIRE(cluster.Ctl({"stop", id}).exit_code == 0);
}
