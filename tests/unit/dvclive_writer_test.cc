// DVCLive's layout written on the submitter's side from a job's reports.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
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

void Add(MetricsReply* reply, int attempt, int64_t index, std::map<std::string, double> values) {
  MetricRecord* r = reply->add_records();
  r->set_attempt(attempt);
  r->set_index(index);
  r->set_unix_ms(1000 + attempt * 100 + index);
  r->mutable_values()->insert(values.begin(), values.end());
}

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/dvclive-test-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

}  // namespace

TEST_CASE("metrics are written in DVCLive's layout: metrics.json and one TSV per metric", "[dvclive]") {
  TempDir tmp;
  std::string dir = tmp.path + "/live";
  MetricsReply reply;
  Add(&reply, 0, 0, {{"loss", 0.5}, {"accuracy", 0.8}});
  Add(&reply, 0, 1, {{"loss", 0.25}, {"accuracy", 0.875}});
  REQUIRE(WriteDvcLive(dir, reply).ok());
  REQUIRE(Slurp(dir + "/metrics.json") == "{\n    \"accuracy\": 0.875,\n    \"loss\": 0.25,\n    \"step\": 1\n}\n");
  REQUIRE(Slurp(dir + "/plots/metrics/loss.tsv") == "timestamp\tstep\tloss\n1000\t0\t0.5\n1001\t1\t0.25\n");
  REQUIRE(Slurp(dir + "/plots/metrics/accuracy.tsv") == "timestamp\tstep\taccuracy\n1000\t0\t0.8\n1001\t1\t0.875\n");
}

TEST_CASE("a resumed attempt replaces the steps its predecessor lost, so the files read as one run", "[dvclive]") {
  MetricsReply reply;
  // Attempt 0 reported epochs 0..2 and died; attempt 1 resumed from the epoch-1 checkpoint.
  for (int epoch = 0; epoch <= 2; ++epoch) Add(&reply, 0, epoch, {{"epoch", epoch}, {"loss", 1.0 - epoch * 0.1}});
  for (int epoch = 2; epoch <= 4; ++epoch) Add(&reply, 1, epoch - 2, {{"epoch", epoch}, {"loss", 0.5 - epoch * 0.01}});
  auto history = DvcLiveHistory(reply);
  REQUIRE(history.size() == 5);
  for (int step = 0; step < 5; ++step) REQUIRE(history[step].step == step);
  REQUIRE(history[1].values.at("loss") == Approx(0.9));   // attempt 0's
  REQUIRE(history[2].values.at("loss") == Approx(0.48));  // attempt 1's redo
  REQUIRE(history[2].unix_ms == 1100);
}

TEST_CASE("nested metric names nest, names cannot leave the folder", "[dvclive]") {
  TempDir tmp;
  MetricsReply reply;
  Add(&reply, 0, 0, {{"train/loss", 0.5}, {"../../escape", 1}, {"acc", NAN}});
  REQUIRE(WriteDvcLive(tmp.path, reply).ok());
  REQUIRE(Slurp(tmp.path + "/plots/metrics/train/loss.tsv") == "timestamp\tstep\tloss\n1000\t0\t0.5\n");
  REQUIRE(std::filesystem::exists(tmp.path + "/plots/metrics/_/_/escape.tsv"));
  REQUIRE(Slurp(tmp.path + "/metrics.json") ==
          "{\n    \"_\": {\n        \"_\": {\n            \"escape\": 1\n        }\n    },\n    \"acc\": null,\n"
          "    \"step\": 0,\n    \"train\": {\n        \"loss\": 0.5\n    }\n}\n");
}

TEST_CASE("a job's DVCLive files replace the tables an earlier run left, as DVCLive's own start does", "[dvclive]") {
  TempDir dir;
  MetricsReply first;
  Add(&first, 0, 0, {{"loss", 1.0}, {"train/acc", 0.5}});
  REQUIRE(WriteDvcLive(dir.path, first).ok());
  REQUIRE(std::filesystem::exists(dir.path + "/plots/metrics/train/acc.tsv"));
  std::ofstream(dir.path + "/plots/metrics/notes.txt") << "mine";
  MetricsReply second;
  Add(&second, 0, 0, {{"foo", 1.0}});
  REQUIRE(WriteDvcLive(dir.path, second).ok());
  CHECK(std::filesystem::exists(dir.path + "/plots/metrics/foo.tsv"));
  CHECK_FALSE(std::filesystem::exists(dir.path + "/plots/metrics/loss.tsv"));
  CHECK_FALSE(std::filesystem::exists(dir.path + "/plots/metrics/train/acc.tsv"));
  CHECK(Slurp(dir.path + "/plots/metrics/notes.txt") == "mine");  // not a table: not ours to remove
  CHECK(Slurp(dir.path + "/metrics.json") == "{\n    \"foo\": 1,\n    \"step\": 0\n}\n");
}

// A step's second report (validation metrics after training ones) must not
// replace its first, and metrics.json holds every metric, not only the last
// step's.
TEST_CASE("reports of one step add up and metrics.json holds every metric's latest value", "[dvclive]") {
  TempDir tmp;
  std::string dir = tmp.path + "/live";
  MetricsReply reply;
  Add(&reply, 0, 0, {{"epoch", 0}, {"train/loss", 1.5}});
  Add(&reply, 0, 1, {{"epoch", 0}, {"val/loss", 1.7}});
  Add(&reply, 0, 2, {{"epoch", 1}, {"train/loss", 1.25}, {"acc", 0.5}});
  Add(&reply, 0, 3, {{"epoch", 1}, {"val/loss", 1.3}});
  Add(&reply, 0, 4, {{"step", 2}, {"train/loss", 0.125}, {"acc", std::nan("")}});
  REQUIRE(WriteDvcLive(dir, reply).ok());
  REQUIRE(Slurp(dir + "/plots/metrics/train/loss.tsv") ==
          "timestamp\tstep\tloss\n1001\t0\t1.5\n1003\t1\t1.25\n1004\t2\t0.125\n");
  REQUIRE(Slurp(dir + "/plots/metrics/val/loss.tsv") == "timestamp\tstep\tloss\n1001\t0\t1.7\n1003\t1\t1.3\n");
  REQUIRE(Slurp(dir + "/plots/metrics/acc.tsv") == "timestamp\tstep\tacc\n1003\t1\t0.5\n1004\t2\tnan\n");
  // "step" is the step's number, not a metric of its own.
  REQUIRE_FALSE(std::filesystem::exists(dir + "/plots/metrics/step.tsv"));
  REQUIRE(Slurp(dir + "/metrics.json") ==
          "{\n    \"acc\": null,\n    \"epoch\": 1,\n    \"step\": 2,\n    \"train\": {\n        \"loss\": 0.125\n    },\n"
          "    \"val\": {\n        \"loss\": 1.3\n    }\n}\n");
}
