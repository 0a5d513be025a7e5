// Bad job files through `clusterctl submit` against a real head: each gets a
// one-line error naming file, line, column and key, exit 2, nothing is
// submitted and the head keeps working.
#include <catch2/catch.hpp>
#include <fstream>

#include "harness.h"

using namespace clusterd;
using namespace clusterd::testing;

TEST_CASE("bad job files are refused with a clear error and the head is unharmed", "[jobs][bad_input]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "2"}).exit_code == 0);
  const std::string dir = cluster.temp_dir();
  // A folder of its own to ship: the temp dir holds the head's live state.
  REQUIRE(Run({"/bin/mkdir", dir + "/proj"}).exit_code == 0);
  const std::string ok_head = "name: t\nworking_dir: " + dir + "/proj\n";

  struct Case {
    std::string name;
    std::string body;
    std::string expected;  // the start of the error, after "clusterctl: "
  };
  std::vector<Case> cases = {
      {"malformed", ok_head + "entrypoint: [true\nnum_workers: 1\n", "malformed.yaml:"},
      {"wrong_type", ok_head + "entrypoint: 'true'\nnum_workers: [1]\n", "wrong_type.yaml:4:14: key 'num_workers'"},
      {"zero", ok_head + "entrypoint: 'true'\nnum_workers: 0\n", "zero.yaml:4:14: key 'num_workers'"},
      {"huge", ok_head + "entrypoint: 'true'\nnum_workers: 100000000\n", "huge.yaml:4:14: key 'num_workers'"},
      {"negative", ok_head + "entrypoint: 'true'\nresources_per_worker: {CPU: -1}\n",
       "negative.yaml:4:29: key 'resources_per_worker.CPU'"},
      {"empty_entry", ok_head + "entrypoint: ''\n", "empty_entry.yaml:3:13: key 'entrypoint'"},
      {"no_dir", "name: t\nworking_dir: /no/such/dir\nentrypoint: 'true'\n", "no_dir.yaml:2:14: key 'working_dir'"},
      {"typo", ok_head + "entrypoint: 'true'\nnum_worker: 2\n",
       "typo.yaml:4:1: unknown key 'num_worker' (did you mean 'num_workers'?)"},
  };
  for (const auto& c : cases) {
    std::string path = dir + "/" + c.name + ".yaml";
    std::ofstream(path) << c.body;
    RunResult r = cluster.Ctl({"submit", path});
    INFO(c.name << ": " << r.err);
    REQUIRE(r.exit_code == 2);
    REQUIRE(r.err.rfind("clusterctl: " + dir + "/" + c.expected, 0) == 0);
    REQUIRE(std::count(r.err.begin(), r.err.end(), '\n') == 1);  // one line
  }

  // 10 MB of garbage is refused quickly, by size.
  std::string garbage = dir + "/garbage.yaml";
  RunResult made = Run({"/bin/sh", "-c", "head -c 10485760 /dev/urandom > " + garbage});
  REQUIRE(made.exit_code == 0);
  auto start = std::chrono::steady_clock::now();
  RunResult big = cluster.Ctl({"submit", garbage});
  REQUIRE(big.exit_code == 2);
  REQUIRE(big.err == "clusterctl: " + garbage + ": file is 10485760 bytes, larger than the 1 MiB a job file may be\n");
  REQUIRE(MillisSince(start) < 5000);

  // Nothing was submitted, and the head still answers and runs a good job.
  RunResult jobs = cluster.Ctl({"jobs", "--json"});
  REQUIRE(jobs.exit_code == 0);
  REQUIRE(jobs.out.find("job-") == std::string::npos);
  std::string good = dir + "/good.yaml";
  std::ofstream(good) << ok_head << "entrypoint: 'true'\n";
  RunResult follow = cluster.Ctl({"submit", good, "--follow"});
  INFO(follow.err);
  REQUIRE(follow.exit_code == 0);
}
