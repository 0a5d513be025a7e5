#include "cli/sweep_printer.h"

#include <set>
#include <vector>

#include <fmt/format.h>

#include "cli/job_printer.h"
#include "common/text.h"

namespace clusterd::cli {

namespace {

std::vector<std::string> ParamNames(const SweepInfo& sweep) {
  std::vector<std::string> names;
  for (const auto& d : sweep.spec().tune().search_space()) names.push_back(d.name());
  return names;
}

std::string Param(const TrialInfo& trial, const std::string& name) {
  auto it = trial.params().find(name);
  if (it == trial.params().end()) return "";
  std::string v = it->second;
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
  return v;
}

// A parameter in the table: short, so the columns stay readable.
std::string ShortParam(const TrialInfo& trial, const std::string& name) {
  std::string v = Param(trial, name);
  try {
    size_t used = 0;
    double x = std::stod(v, &used);
    if (used == v.size() && v.find_first_of(".eE") != std::string::npos) return fmt::format("{:.4g}", x);
  } catch (...) {
  }
  return Truncate(v, 16);
}

std::vector<std::vector<std::string>> Rows(const SweepInfo& sweep) {
  const std::string& metric = sweep.spec().tune().metric();
  std::vector<std::string> header = {"TRIAL", "JOB", "STATE"};
  for (const auto& name : ParamNames(sweep)) header.push_back(name);
  header.push_back("ITER");
  header.push_back(metric);
  header.push_back("REASON");
  std::vector<std::vector<std::string>> rows = {header};
  for (const auto& t : sweep.trials()) {
    std::vector<std::string> row = {std::to_string(t.index()) + (t.index() == sweep.best_trial() ? "*" : ""),
                                    t.job_id(), TrialStateText(t.state())};
    for (const auto& name : ParamNames(sweep)) row.push_back(ShortParam(t, name));
    row.push_back(t.iterations() ? std::to_string(t.iterations()) : "");
    row.push_back(t.has_metric() ? fmt::format("{:.4f}", t.metric()) : "");
    row.push_back(Truncate(t.reason(), 70));
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace

const char* TrialStateText(TrialState state) {
  switch (state) {
    case TRIAL_WAITING: return "WAITING";
    case TRIAL_ACTIVE: return "RUNNING";
    case TRIAL_DONE: return "DONE";
    case TRIAL_EARLY_STOPPED: return "EARLY_STOPPED";
    case TRIAL_FAILED: return "FAILED";
    case TRIAL_CANCELLED: return "CANCELLED";
    default: return "UNKNOWN";
  }
}

const char* SweepStateText(SweepState state) {
  switch (state) {
    case SWEEP_RUNNING: return "RUNNING";
    case SWEEP_SUCCEEDED: return "SUCCEEDED";
    case SWEEP_FAILED: return "FAILED";
    case SWEEP_STOPPED: return "STOPPED";
    default: return "UNKNOWN";
  }
}

std::string FormatSweepTable(const SweepInfo& sweep) {
  const TuneSpec& tune = sweep.spec().tune();
  std::string out = fmt::format("Sweep {} ({}): {}{}\n", sweep.sweep_id(), sweep.spec().name(),
                                SweepStateText(sweep.state()), sweep.reason().empty() ? "" : ": " + sweep.reason());
  std::string best = "none yet";
  if (sweep.best_trial() >= 0 && sweep.best_trial() < sweep.trials_size()) {
    const TrialInfo& b = sweep.trials(sweep.best_trial());
    std::vector<std::string> params;
    for (const auto& name : ParamNames(sweep)) params.push_back(name + "=" + ShortParam(b, name));
    best = fmt::format("trial {} {} {:.4f} ({})", b.index(), tune.metric(), b.metric(), fmt::join(params, ", "));
  }
  out += fmt::format("  metric {} ({}), {} trials, best so far: {}\n", tune.metric(), tune.mode_min() ? "min" : "max",
                     sweep.trials_size(), best);
  std::string table = FormatTable(Rows(sweep));
  for (size_t start = 0; start < table.size();) {
    size_t end = table.find('\n', start);
    if (end == std::string::npos) end = table.size();
    out += "  " + table.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return out;
}

std::string BestParamsYaml(const SweepInfo& sweep) {
  if (sweep.best_trial() < 0 || sweep.best_trial() >= sweep.trials_size()) return "";
  const TrialInfo& best = sweep.trials(sweep.best_trial());
  std::string out;
  // JSON values are YAML: numbers stay numbers, strings stay quoted.
  for (const auto& name : ParamNames(sweep)) {
    auto it = best.params().find(name);
    if (it != best.params().end()) out += name + ": " + it->second + "\n";
  }
  return out.empty() ? "{}\n" : out;  // an empty search space: still a file for DVC to find
}

std::string TrialsCsv(const SweepInfo& sweep) {
  std::vector<std::string> header = {"trial", "job_id", "state"};
  for (const auto& name : ParamNames(sweep)) header.push_back(name);
  header.push_back("iterations");
  header.push_back(sweep.spec().tune().metric());
  header.push_back("reason");
  std::string out;
  for (size_t i = 0; i < header.size(); ++i) out += (i ? "," : "") + CsvField(header[i]);
  out += "\n";
  for (const auto& t : sweep.trials()) {
    std::vector<std::string> row = {std::to_string(t.index()), t.job_id(), TrialStateText(t.state())};
    for (const auto& name : ParamNames(sweep)) row.push_back(Param(t, name));
    row.push_back(std::to_string(t.iterations()));
    row.push_back(t.has_metric() ? fmt::format("{}", t.metric()) : "");
    row.push_back(t.reason());
    for (size_t i = 0; i < row.size(); ++i) out += (i ? "," : "") + CsvField(row[i]);
    out += "\n";
  }
  return out;
}

}  // namespace clusterd::cli
