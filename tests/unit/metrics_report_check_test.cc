// What a rank may report through ctrain::report(): names a DVCLive file and
// a terminal can take, and a bounded number of values a report.
#include <catch2/catch.hpp>

#include "daemon/agent/report_server.h"

using namespace clusterd;

namespace {

std::string ErrorOf(const std::map<std::string, double>& values) {
  MetricsReport report;
  for (const auto& [name, value] : values) (*report.mutable_values())[name] = value;
  return CheckMetricsReport(report).message();
}

}  // namespace

TEST_CASE("a report's metric names must make DVCLive files and show on a terminal", "[report]") {
  CHECK(ErrorOf({{"loss", 1}, {"train/loss", 2}, {"val/acc@1", 3}, {"step", 4}, {"caf\xc3\xa9", 5}}).empty());
  CHECK(ErrorOf({{std::string(128, 'x'), 1}}).empty());
  CHECK(ErrorOf({{std::string(300, 'x'), 1}}) == "metric name \"" + std::string(64, 'x') +
                                                   "\"... is 300 bytes, more than the 128 a metric name may be");
  CHECK(ErrorOf({{"a\x1b[31m", 1}}) == "metric name \"a\\u001b[31m\" holds a control character");
  CHECK(ErrorOf({{"a\xe2\x80\xae" "b", 1}}) == "metric name \"a\\u202eb\" holds a control character");  // shown, not obeyed
  for (const std::string name : {"", ".", "..", "a/", "/a", "a//b", "a/../b"}) {
    INFO(name);
    CHECK(ErrorOf({{name, 1}}).find("has an empty, '.' or '..' part") != std::string::npos);
  }
}

TEST_CASE("a report holds at most 1000 metrics", "[report]") {
  std::map<std::string, double> values;
  for (int i = 0; i < 1000; ++i) values["m" + std::to_string(i)] = i;
  CHECK(ErrorOf(values).empty());
  values["one-more"] = 0;
  CHECK(ErrorOf(values) == "a report of 1001 metrics is more than the 1000 one report may hold");
}

TEST_CASE("a report's checkpoint path shows on a terminal as it is", "[report]") {
  MetricsReport report;
  report.set_checkpoint("/work/checkpoints/job-1/checkpoint_000003");
  CHECK(CheckMetricsReport(report).ok());
  report.set_checkpoint("/work/ckpt/checkpoint_000007 forged\n  stored:       checkpoint_000099\x1b[31m");
  CHECK(CheckMetricsReport(report).message() ==
        "checkpoint path \"/work/ckpt/checkpoint_000007 forged\\u000a  stored:       checkpoint_000099\\u001b[31m\" "
        "holds a control character");
  report.set_checkpoint("/" + std::string(5000, 'c'));
  CHECK(CheckMetricsReport(report).message().find("is 5001 bytes, more than the 4096 a path may be") !=
        std::string::npos);
}
