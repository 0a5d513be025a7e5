// A sweep's values through a real cluster: hostile values of a grid reach
// each trial's rank, which runs the job file's string entrypoint with
// /bin/sh, as data in a plain word, a here-document and after a comment,
// and none of them runs. The corpus of shell contexts is in
// tests/unit/sweep_shell_test.cc; this is the path from the job file to the
// rank's environment.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <fstream>
#include <string>
#include <vector>

#include "common/text.h"
#include "jobs_harness.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;

TEST_CASE("a sweep's hostile values reach a trial's shell entrypoint as data and run nothing", "[sweep_shell]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "2", "--num-gpus", "0"}).exit_code == 0);
  const std::string dir = cluster.temp_dir();
  const std::string touch = "touch " + dir + "/PWNED";
  const std::vector<std::string> values = {
      "$(" + touch + ")", "`" + touch + "`", "x\n" + touch, "'; " + touch + "; '",
      "x\nEOF\n" + touch + "\ncat <<EOF\ny", "a  b * \\ \"",
  };
  std::string grid;
  for (const std::string& value : values) grid += (grid.empty() ? "" : ", ") + JsonQuote(value);
  const std::string file = WriteJobFile(cluster, "hostile",
                                        "entrypoint: |\n"
                                        "  printf '%s' {opt} > \"word-$CLUSTER_JOB_NAME\"\n"
                                        "  cat <<EOF > \"heredoc-$CLUSTER_JOB_NAME\"\n"
                                        "  {opt}\n"
                                        "  EOF\n"
                                        "  # a comment: {opt}\n"
                                        "tune:\n"
                                        "  metric: loss\n"
                                        "  search_space: {opt: {grid: [" + grid + "]}}\n");
  const std::string id = Submit(cluster, file);
  SweepInfo sweep;
  REQUIRE(WaitFor([&] {
    sweep = ParseJson<SweepInfo>(cluster.Ctl({"sweep", id, "--json"}));
    return sweep.state() != SWEEP_RUNNING;
  }, 60s, 200ms));
  INFO(sweep.DebugString());
  REQUIRE(sweep.trials_size() == static_cast<int>(values.size()));
  for (int i = 0; i < sweep.trials_size(); ++i) {
    INFO("trial " << i << ": " << JsonQuote(values[i]));
    const JobInfo job = GetJob(cluster, sweep.trials(i).job_id());
    CHECK(job.state() == SUCCEEDED);
    CHECK(job.spec().entrypoint(2).find(values[i]) == std::string::npos);
    const std::string name = fmt::format("hostile-trial-{:03d}", i);
    CHECK(Slurp(dir + "/word-" + name) == values[i]);
    CHECK(Slurp(dir + "/heredoc-" + name) == values[i] + "\n");
  }
  CHECK(access((dir + "/PWNED").c_str(), F_OK) != 0);
}
