// The working folders a node makes for the attempts that ship their code:
// each attempt runs in a fresh copy of its own (a retry on the same node
// does not find what the failed attempt left, only the checkpoint the head
// restored), and each copy is removed, with its hash caches, once the
// attempt's ranks have exited and its checkpoints and outputs are stored.
// What this guards against: a finished job's folder kept until the agent
// stops (a worker that runs for months would fill its disk), and a retry on
// the same node resuming from checkpoints its failed attempt left, newer
// than the one the head restored.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "harness.h"
#include "job_json.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// A folder with the linear example and run.sh, which writes the folder it
// runs in to cwd.<attempt> in this folder (not its copy), lists the
// checkpoints it starts with, trains two epochs, writes model.pt and exits
// with `attempt_0_exit` in attempt 0, 0 after. A leftover of an earlier
// attempt in its copy fails it (exit 3).
fs::path ShippedFolder(Cluster& cluster, const std::string& name, int attempt_0_exit, const std::string& extra = "") {
  fs::path dir = fs::path(cluster.temp_dir()) / name;
  fs::create_directories(dir);
  fs::copy_file(LINEAR_BIN, dir / "linear");
  std::ofstream(dir / "run.sh") << "#!/bin/sh\nset -e\necho \"$PWD\" > " << dir.string() << "/cwd.$CLUSTER_ATTEMPT\n"
                                << "if [ -e leftover ]; then echo 'found a leftover'; exit 3; fi\ntouch leftover\n"
                                << "echo \"starts with: $(ls \"$CLUSTER_CHECKPOINT_DIR\" 2>/dev/null | tr '\\n' ' ')\"\n"
                                << "./linear --epochs 2\necho weights > model.pt\n"
                                << "if [ \"$CLUSTER_ATTEMPT\" = 0 ]; then exit " << attempt_0_exit << "; fi\n";
  fs::permissions(dir / "run.sh", fs::perms(0755));
  std::ofstream(dir.string() + ".yaml") << "name: " << name << "\nentrypoint: ./run.sh\nworking_dir: " << dir.string()
                                        << "\noutputs: [model.pt]\n" << extra;
  return dir;
}

std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

// The node agent's hash caches: one file per folder it sent from.
size_t HashCacheFiles(Cluster& cluster) {
  fs::path dir = fs::path(cluster.temp_dir()) / "hashes";
  if (!fs::exists(dir)) return 0;
  return static_cast<size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

}  // namespace

TEST_CASE("a node removes an attempt's working folder and its hash caches once its results are stored",
          "[results][shipping]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "1"}).exit_code == 0);
  fs::path dir = ShippedFolder(cluster, "done", 0);
  std::ofstream(dir / "model.pt") << "old weights\n";  // shipped, and written again in place by the job
  RunResult r = cluster.Ctl({"submit", dir.string() + ".yaml", "--follow", "--json"}, 120s);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const std::string copy = FirstLine(Slurp(dir / "cwd.0"));
  REQUIRE(copy.rfind(cluster.temp_dir() + "/work/", 0) == 0);
  REQUIRE(copy != dir.string());
  // Gone soon after the job's end (its results were stored before it).
  REQUIRE(WaitFor([&] { return !fs::exists(copy); }, 10s));
  REQUIRE(WaitFor([&] { return HashCacheFiles(cluster) == 0; }, 10s));

  JobInfo job = ParseJson<JobInfo>(cluster.Ctl({"job", SubmittedJobId(r), "--json"}));
  REQUIRE(job.state() == SUCCEEDED);
  REQUIRE(Slurp(dir / "model.pt") == "weights\n");
  // The output was the job's own copy: the node's package still holds the
  // shipped one, for the other jobs of the same code.
  REQUIRE(Slurp(fs::path(cluster.temp_dir()) / "packages" / job.spec().package_id() / "model.pt") == "old weights\n");
  REQUIRE(job.stored_checkpoints_size() >= 1);
  fs::path later = fs::path(cluster.temp_dir()) / "later";
  RunResult checkpoint = cluster.Ctl({"fetch", job.job_id(), "--checkpoint", "--out", later.string()});
  INFO(checkpoint.err);
  REQUIRE(checkpoint.exit_code == 0);
  REQUIRE(fs::exists(later / job.stored_checkpoints().rbegin()->name() / "meta.json"));
}

TEST_CASE("a retry on the same node starts in a fresh copy with only the checkpoint the head restored",
          "[results][shipping]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "1"}).exit_code == 0);
  fs::path dir = ShippedFolder(cluster, "retried", 1, "max_failures: 1\n");
  RunResult r = cluster.Ctl({"submit", dir.string() + ".yaml", "--follow", "--json"}, 120s);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.out.find("found a leftover") == std::string::npos);
  JobInfo job = ParseJson<JobInfo>(cluster.Ctl({"job", SubmittedJobId(r), "--json"}));
  REQUIRE(job.state() == SUCCEEDED);
  REQUIRE(job.attempts_size() == 2);
  // Attempt 0 kept two checkpoints in its copy; attempt 1 starts with the
  // one the head restored, and nothing else.
  const std::string restored = job.attempts(1).restored_checkpoint();
  REQUIRE_FALSE(restored.empty());
  REQUIRE(r.out.find("starts with: \n") != std::string::npos);  // attempt 0
  REQUIRE(r.out.find("starts with: " + restored + " \n") != std::string::npos);

  const std::string first = FirstLine(Slurp(dir / "cwd.0"));
  const std::string second = FirstLine(Slurp(dir / "cwd.1"));
  REQUIRE(first != second);
  REQUIRE(WaitFor([&] { return !fs::exists(first) && !fs::exists(second); }, 10s));
}

TEST_CASE("a shared-mode job's folder is left as it is and its checkpoints' hash caches go", "[results][shipping]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "1"}).exit_code == 0);
  fs::path dir = ShippedFolder(cluster, "shared", 0);
  std::ofstream(dir.string() + ".yaml", std::ios::app) << "working_dir_mode: shared\n";
  RunResult r = cluster.Ctl({"submit", dir.string() + ".yaml", "--follow", "--json"}, 120s);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(FirstLine(Slurp(dir / "cwd.0")) == dir.string());
  JobInfo job = ParseJson<JobInfo>(cluster.Ctl({"job", SubmittedJobId(r), "--json"}));
  REQUIRE(job.stored_checkpoints_size() >= 1);
  // One cache per checkpoint folder, a folder per job: they would pile up.
  // The outputs' cache is of the user's folder, one for all its jobs.
  REQUIRE(WaitFor([&] { return HashCacheFiles(cluster) <= 1; }, 10s));
  CHECK(fs::exists(dir / "run.sh"));
  CHECK(fs::exists(dir / "leftover"));
  CHECK(fs::exists(dir / "model.pt"));
  CHECK(fs::exists(dir / "checkpoints" / job.job_id() / job.stored_checkpoints().rbegin()->name()));
}
