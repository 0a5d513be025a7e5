#include "report.h"

#include <fmt/format.h>

#include <cmath>

namespace clusterd::bench {

namespace {

std::string Amount(double value, const std::string& unit) {
  if (unit.empty()) return fmt::format("{:.0f}", value);
  // Small percentages need more digits to be seen at all (an idle head).
  int digits = unit == "%" ? (value < 1 ? 3 : 2) : unit == "MiB" ? 1 : (value < 10 ? 2 : 1);
  return fmt::format("{:.{}f} {}", value, digits, unit);
}

std::string Limit(double limit, const std::string& unit, bool at_least) {
  return std::string(at_least ? ">= " : "< ") + Amount(limit, unit);
}

}  // namespace

void Report::Check(const std::string& metric, double value, const std::string& unit, double limit,
                   std::optional<double> baseline, const std::string& baseline_what, bool at_least) {
  bool met = at_least ? value >= limit : value < limit;
  rows_.push_back({metric, value, unit, Limit(limit, unit, at_least), met, baseline, baseline_what});
}

void Report::Info(const std::string& metric, double value, const std::string& unit,
                  std::optional<double> baseline, const std::string& baseline_what) {
  rows_.push_back({metric, value, unit, "", std::nullopt, baseline, baseline_what});
}

void Report::Failed(const std::string& section, const std::string& why) {
  failures_.push_back(section + ": " + why);
}

int Report::missed() const {
  int count = 0;
  for (const Row& row : rows_) count += row.met && !*row.met;
  return count;
}

std::string Report::Format() const {
  std::string out = "| metric | value | target | baseline | ratio | result |\n|---|---|---|---|---|---|\n";
  for (const Row& row : rows_) {
    std::string baseline = "-", ratio = "-";
    if (row.baseline) {
      baseline = Amount(*row.baseline, row.unit) + (row.baseline_what.empty() ? "" : " (" + row.baseline_what + ")");
      if (*row.baseline > 0) ratio = fmt::format("{:.2f}x", row.value / *row.baseline);
    }
    std::string result = !row.met ? "info" : *row.met ? "pass" : "MISSED";
    out += fmt::format("| {} | {} | {} | {} | {} | {} |\n", row.metric, Amount(row.value, row.unit),
                       row.target.empty() ? "-" : row.target, baseline, ratio, result);
  }
  for (const std::string& failure : failures_) out += "\nFAILED TO MEASURE: " + failure + "\n";
  return out;
}

}  // namespace clusterd::bench
