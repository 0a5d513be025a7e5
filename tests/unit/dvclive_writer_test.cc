#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "cli/dvclive_writer.h"

using namespace clusterd;

namespace {
std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

MetricRecord Record(int64_t index, double loss, double accuracy) {
  MetricRecord r;
  r.set_index(index);
  (*r.mutable_values())["loss"] = loss;
  (*r.mutable_values())["accuracy"] = accuracy;
  return r;
}
}  // namespace

TEST_CASE("metrics are written in DVCLive's layout: metrics.json and one TSV per metric", "[dvclive]") {
  char tmpl[] = "/tmp/dvclive-test-XXXXXX";
  std::string dir = std::string(mkdtemp(tmpl)) + "/live";
  REQUIRE(WriteDvcLive(dir, Record(0, 0.5, 0.8)).ok());
  REQUIRE(WriteDvcLive(dir, Record(1, 0.25, 0.875)).ok());

  REQUIRE(Slurp(dir + "/metrics.json") == "{\"step\": 1, \"accuracy\": 0.875, \"loss\": 0.25}\n");
  REQUIRE(Slurp(dir + "/plots/metrics/loss.tsv") == "step\tloss\n0\t0.5\n1\t0.25\n");
  REQUIRE(Slurp(dir + "/plots/metrics/accuracy.tsv") == "step\taccuracy\n0\t0.8\n1\t0.875\n");
  std::system(("rm -rf " + dir.substr(0, dir.rfind('/'))).c_str());
}
