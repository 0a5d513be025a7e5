// A cluster on loopback whose store is S3 (`clusterd start --head --store
// s3://BUCKET/PREFIX`) on a real radosgw: code packages go from clusterctl
// to S3 and from S3 to the node, an unchanged folder uploads nothing, a
// job's outputs go from the node to S3 and come back with clusterctl fetch,
// and the head's own disk holds no blob. A missing bucket, wrong
// credentials and an unreachable endpoint each fail the start in one line.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "ceph_fixture.h"
#include "common/storage/s3_client.h"
#include "harness.h"
#include "job_json.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

size_t ObjectCount(const CephFixture& ceph, const std::string& bucket) {
  auto keys = S3Client(ceph.ClientOptions()).List(bucket, "");
  REQUIRE(keys.ok());
  return keys->size();
}

std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

TEST_CASE("with --store s3:// packages and outputs go through S3, never the head, and nothing is sent twice",
          "[ceph][s3][shipping]") {
  REQUIRE_CEPH(ceph);
  REQUIRE(ceph->CreateBucket("cluster-store"));
  UseCeph(*ceph);
  Cluster cluster;
  RunResult started = cluster.StartHead({"--num-cpus", "1", "--store", "s3://cluster-store/team/run1",
                                         "--s3-endpoint", ceph->endpoint()});
  INFO(started.out << started.err);
  REQUIRE(started.exit_code == 0);

  fs::path proj = fs::path(cluster.temp_dir()) / "proj";
  fs::create_directories(proj / "data");
  std::ofstream(proj / "run.sh") << "#!/bin/sh\nset -e\ncat data/input.txt\nmkdir -p out\n"
                                 << "echo \"result of $CLUSTER_JOB_ID\" > out/result.txt\n";
  fs::permissions(proj / "run.sh", fs::perms(0755));
  std::ofstream(proj / "data" / "input.txt") << "shipped through S3\n";
  std::string file = proj.string() + ".yaml";
  std::ofstream(file) << "name: s3-shipped\nentrypoint: ./run.sh\nworking_dir: " << proj.string()
                      << "\noutputs: [out/]\n";

  RunResult first = cluster.Ctl({"submit", file, "--follow", "--json"}, 90s);
  INFO(first.out << first.err);
  REQUIRE(first.exit_code == 0);
  REQUIRE(first.err.find("), uploaded") != std::string::npos);
  REQUIRE(first.out.find("shipped through S3") != std::string::npos);
  JobInfo job = ParseJson<JobInfo>(cluster.Ctl({"job", SubmittedJobId(first), "--json"}));
  REQUIRE(job.state() == SUCCEEDED);
  REQUIRE_FALSE(job.outputs_manifest().empty());
  // The outputs came back into the folder through S3.
  REQUIRE(Slurp(proj / "out" / "result.txt") == "result of " + job.job_id() + "\n");
  size_t objects = ObjectCount(*ceph, "cluster-store");
  REQUIRE(objects >= 3);  // the package, the outputs' file and manifest

  // Unchanged: nothing is uploaded, the bucket holds the same objects.
  fs::remove_all(proj / "out");
  RunResult again = cluster.Ctl({"submit", file, "--follow"}, 90s);
  INFO(again.out << again.err);
  REQUIRE(again.exit_code == 0);
  REQUIRE(again.err.find("), already in s3://cluster-store/team/run1 at " + ceph->endpoint()) != std::string::npos);
  // The new job's result file differs (its id): one piece and one manifest more.
  CHECK(ObjectCount(*ceph, "cluster-store") == objects + 2);

  // Later, elsewhere: fetch reads S3 directly.
  fs::path later = fs::path(cluster.temp_dir()) / "later";
  RunResult fetched = cluster.Ctl({"fetch", job.job_id(), "--out", later.string()});
  INFO(fetched.err);
  REQUIRE(fetched.exit_code == 0);
  REQUIRE(Slurp(later / "out" / "result.txt") == "result of " + job.job_id() + "\n");

  // The head's disk holds metadata only: no store folder at all.
  CHECK_FALSE(fs::exists(fs::path(cluster.temp_dir()) / "state" / "store"));
}

TEST_CASE("clusterd start --store s3:// fails in one line naming bucket and endpoint", "[ceph][s3][bad_input]") {
  REQUIRE_CEPH(ceph);
  REQUIRE(ceph->CreateBucket("exists"));
  UseCeph(*ceph);

  SECTION("a missing bucket") {
    Cluster cluster;
    RunResult r = cluster.StartHead({"--store", "s3://absent/x", "--s3-endpoint", ceph->endpoint()});
    REQUIRE(r.exit_code != 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK_THAT(r.err, Catch::Contains("bucket absent does not exist at " + ceph->endpoint()));
  }
  SECTION("wrong credentials") {
    setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret", 1);
    Cluster cluster;
    RunResult r = cluster.StartHead({"--store", "s3://exists/x", "--s3-endpoint", ceph->endpoint()});
    REQUIRE(r.exit_code != 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK_THAT(r.err, Catch::Contains("refused the credentials for bucket exists") &&
                          Catch::Contains(ceph->endpoint()));
    CHECK(r.err.find("wrong-secret") == std::string::npos);
  }
  SECTION("an unreachable endpoint") {
    Cluster cluster;
    std::string nowhere = "http://127.0.0.1:" + std::to_string(FreePort());
    RunResult r = cluster.StartHead({"--store", "s3://exists/x", "--s3-endpoint", nowhere});
    REQUIRE(r.exit_code != 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK_THAT(r.err, Catch::Contains("cannot reach S3 at " + nowhere) && Catch::Contains("bucket exists"));
  }
  SECTION("not an S3 location") {
    Cluster cluster;
    RunResult r = cluster.StartHead({"--store", "/some/dir"});
    REQUIRE(r.exit_code != 0);
    CHECK(FirstLine(r.err) == "clusterd start: --store: '/some/dir' is not an S3 location (s3://BUCKET/PREFIX)");
  }
  setenv("AWS_SECRET_ACCESS_KEY", ceph->secret_key().c_str(), 1);
}
