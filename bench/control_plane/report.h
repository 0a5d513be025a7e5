// The benchmark's table: metric | value | target | baseline | ratio | result.
// Every measured number sits next to a baseline taken in the same run,
// because these machines are shared and noisy; a missed target is printed
// as MISSED, never turned into a failing exit code.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace clusterd::bench {

struct Row {
  std::string metric;
  double value = 0;
  std::string unit;                // "ms", "%", "MiB", "" for counts
  std::string target;              // "< 300 ms"; empty for information rows
  std::optional<bool> met;         // nullopt: no target, printed as "info"
  std::optional<double> baseline;  // same unit as value
  std::string baseline_what;       // what the baseline is, shown beside it
};

class Report {
 public:
  void Add(Row row) { rows_.push_back(std::move(row)); }
  // A row with a target: met when value < limit (or >= limit when at_least).
  void Check(const std::string& metric, double value, const std::string& unit, double limit,
             std::optional<double> baseline, const std::string& baseline_what, bool at_least = false);
  void Info(const std::string& metric, double value, const std::string& unit,
            std::optional<double> baseline = std::nullopt, const std::string& baseline_what = "");
  // A section that could not measure: printed, and makes the exit code 1.
  void Failed(const std::string& section, const std::string& why);

  bool any_failed() const { return !failures_.empty(); }
  int missed() const;
  // Markdown table (pastes into docs/BENCHMARKS.md as is), then failures.
  std::string Format() const;

 private:
  std::vector<Row> rows_;
  std::vector<std::string> failures_;
};

}  // namespace clusterd::bench
