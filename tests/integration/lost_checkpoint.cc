// A stored checkpoint whose bytes go bad on the head's disk: the node that
// is to restore it finds it fails its hash, has the head check and drop its
// copy, and says so; the head takes the checkpoint off the job's stored
// ones, and the next attempt restores the one before it and finishes.
// The two ways it can go wrong that this guards against: the bad checkpoint
// staying the newest stored (every later attempt fails to restore it until
// the job runs out of retries), and the failed restore counting as one of
// the job's retries (max_failures: 1 would end FAILED).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <set>

#include "common/sha256.h"
#include "harness.h"
#include "job_json.h"
#include "store.pb.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

fs::path BlobPath(Cluster& cluster, const std::string& id) {
  return fs::path(cluster.temp_dir()) / "state" / "store" / "blobs" / id.substr(0, 2) / id;
}

// Flips one byte of the blob's file, keeping its size.
void Damage(const fs::path& blob) {
  std::fstream f(blob, std::ios::in | std::ios::out | std::ios::binary);
  char c = 0;
  f.seekg(0);
  f.get(c);
  f.seekp(0);
  f.put(static_cast<char>(c ^ 0x5a));
}

}  // namespace

TEST_CASE("a stored checkpoint gone bad on the head is dropped and the retry resumes from the one before",
          "[results][bad_input]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "1"}).exit_code == 0);
  fs::path dir = fs::path(cluster.temp_dir()) / "proj";
  fs::create_directories(dir);
  fs::copy_file(LINEAR_BIN, dir / "linear");
  // Attempt 0 trains 3 epochs, waits for the test, then loses its local
  // checkpoints and fails, so that the next attempt must restore one.
  const std::string go = (dir / "go").string();
  std::ofstream(dir / "run.sh") << "#!/bin/sh\nset -e\n./linear --epochs 3\n"
                                << "if [ \"$CLUSTER_ATTEMPT\" = 0 ]; then\n"
                                << "  while [ ! -e " << go << " ]; do sleep 0.05; done\n"
                                << "  rm -rf \"$CLUSTER_CHECKPOINT_DIR\"\n  exit 3\nfi\n";
  fs::permissions(dir / "run.sh", fs::perms(0755));
  std::ofstream(dir / "job.yaml") << "name: lost\nentrypoint: ./run.sh\nworking_dir: " << dir.string()
                                  << "\nmax_failures: 1\n";
  RunResult submitted = cluster.Ctl({"submit", (dir / "job.yaml").string(), "--json"});
  INFO(submitted.err);
  REQUIRE(submitted.exit_code == 0);
  const std::string id = SubmittedJobId(submitted);
  JobInfo job;
  REQUIRE(WaitFor([&] {
    job = ParseJson<JobInfo>(cluster.Ctl({"job", id, "--json"}));
    return job.stored_checkpoints_size() == 2 && job.stored_checkpoints(1).name() == "checkpoint_000002";
  }, 120s, 100ms));
  const std::string before = job.stored_checkpoints(0).name();  // checkpoint_000001, or _000000 if 1 was skipped

  // The newest one's model.pt goes bad on the head's disk: its pieces are
  // its own (each epoch's weights differ), the other's stay intact.
  Manifest manifest;
  {
    std::ifstream in(BlobPath(cluster, job.stored_checkpoints(1).manifest_id()), std::ios::binary);
    REQUIRE(manifest.ParseFromIstream(&in));
  }
  std::set<std::string> damaged;
  for (const ManifestEntry& entry : manifest.entries()) {
    if (fs::path(entry.path()).filename() != "model.pt") continue;
    for (const std::string& piece : entry.chunks()) {
      Damage(BlobPath(cluster, piece));
      damaged.insert(piece);
    }
  }
  REQUIRE_FALSE(damaged.empty());
  std::ofstream(go) << "\n";

  job = WaitUntilFinal(cluster, id, 120s);
  INFO(job.reason());
  REQUIRE(job.state() == SUCCEEDED);
  REQUIRE(job.attempts_size() == 3);  // attempt 0's failure counts, attempt 1's does not
  CHECK(job.uncounted_failures() == 1);
  INFO(job.attempts(1).failure_reason());
  // Which piece's failure is told depends on the race between the restore's
  // streams: the damaged one's hash check, or a sibling piece that the head
  // let go of with it (the checkpoint is lost whole).
  const std::string& why = job.attempts(1).failure_reason();
  CHECK((why.find("failed its hash check") != std::string::npos || why.find("no blob ") != std::string::npos));
  CHECK(job.attempts(1).failure_reason().find("checkpoint_000002 is gone from the store and no longer offered (a "
                                              "retry restores " + before + "; this failure does not count against max_failures)") != std::string::npos);
  CHECK(job.attempts(2).restored_checkpoint() == before);
  // The bad copies went; the same bytes may have come back with the last
  // attempt's own checkpoint_000002 (training here is deterministic), whole.
  for (const std::string& piece : damaged) {
    if (fs::exists(BlobPath(cluster, piece))) CHECK(*Sha256OfFile(BlobPath(cluster, piece).string()) == piece);
  }
  // The last attempt stored its own checkpoints again.
  REQUIRE(job.stored_checkpoints_size() >= 1);
  CHECK(job.stored_checkpoints().rbegin()->name() == "checkpoint_000002");
  CHECK(job.stored_checkpoints().rbegin()->attempt() == 2);
}
