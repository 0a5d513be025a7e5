#include "cli/dvclive_writer.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/file_util.h"

namespace clusterd {

namespace {

// Metric names come from training code: each '/'-separated part must be a
// plain name, never "..", so nothing is written outside `dir`.
std::vector<std::string> NameParts(const std::string& name) {
  std::vector<std::string> parts;
  std::string part;
  for (size_t i = 0; i <= name.size(); ++i) {
    if (i < name.size() && name[i] != '/') {
      part += name[i] == '\0' ? '_' : name[i];
      continue;
    }
    if (part.empty() || part == "." || part == "..") part = "_";
    parts.push_back(part);
    part.clear();
  }
  return parts;
}

// JSON has no NaN or infinity: null, as Python's DVCLive cannot write
// either. A whole number is written as one ("epoch": 3), as it was logged.
nlohmann::json JsonNumber(double value) {
  if (!std::isfinite(value)) return nullptr;
  constexpr double kExactIntegers = 9007199254740992.0;  // 2^53
  if (value == std::trunc(value) && std::fabs(value) < kExactIntegers) return static_cast<int64_t>(value);
  return value;
}
// A TSV cell writes them as Python (DVCLive) does.
std::string TsvNumber(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return fmt::format("{}", value);
}

int64_t StepOf(const MetricRecord& record) {
  for (const char* key : {"step", "epoch"}) {
    auto it = record.values().find(key);
    if (it != record.values().end() && std::isfinite(it->second)) return static_cast<int64_t>(it->second);
  }
  return record.index();
}

// Sets `value` at the path of a '/'-separated name: {"train": {"loss": 0.2}}
// for "train/loss". A name under one that holds a value ("a/b" after "a")
// leaves that value as it is.
void SetNested(nlohmann::json* root, const std::string& name, nlohmann::json value) {
  nlohmann::json* node = root;
  const std::vector<std::string> parts = NameParts(name);
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    auto [child, made] = node->emplace(parts[i], nlohmann::json::object());
    if (!made && !child->is_object()) return;
    node = &*child;
  }
  (*node)[parts.back()] = std::move(value);
}

}  // namespace

std::vector<DvcLiveStep> DvcLiveHistory(const MetricsReply& metrics) {
  std::vector<MetricRecord> records(metrics.records().begin(), metrics.records().end());
  std::stable_sort(records.begin(), records.end(), [](const MetricRecord& a, const MetricRecord& b) {
    return a.attempt() != b.attempt() ? a.attempt() < b.attempt() : a.index() < b.index();
  });
  std::map<int64_t, DvcLiveStep> steps;
  for (size_t i = 0; i < records.size();) {
    size_t end = i;
    int64_t first = StepOf(records[i]);
    while (end < records.size() && records[end].attempt() == records[i].attempt()) {
      first = std::min(first, StepOf(records[end]));
      ++end;
    }
    steps.erase(steps.lower_bound(first), steps.end());
    for (; i < end; ++i) {
      DvcLiveStep& step = steps[StepOf(records[i])];
      step.step = StepOf(records[i]);
      step.unix_ms = records[i].unix_ms();
      // Training and validation metrics of one epoch often come in two
      // calls: both are kept. DVCLive logs each metric at its step; the
      // step's "step" is its number.
      for (const auto& [name, value] : records[i].values()) {
        if (name != "step") step.values[name] = value;
      }
    }
  }
  std::vector<DvcLiveStep> out;
  for (auto& [number, step] : steps) out.push_back(std::move(step));
  return out;
}

namespace {

// DVCLive starts a run by clearing what an earlier one left (Live()'s
// cleanup): a metric this job never reported must not plot beside its own.
void RemoveStaleTables(const std::string& folder, const std::set<std::string>& written) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<fs::path> stale;
  for (auto it = fs::recursive_directory_iterator(folder, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_regular_file(ec) && it->path().extension() == ".tsv" && !written.count(it->path().string())) {
      stale.push_back(it->path());
    }
  }
  for (const fs::path& path : stale) fs::remove(path, ec);
}

}  // namespace

Status WriteDvcLive(const std::string& dir, const MetricsReply& metrics) {
  std::vector<DvcLiveStep> history = DvcLiveHistory(metrics);
  RETURN_IF_ERROR(MakeDirs(dir + "/plots/metrics"));
  std::map<std::string, std::string> tables;  // metric name -> TSV text
  for (const DvcLiveStep& step : history) {
    for (const auto& [name, value] : step.values) {
      std::string& table = tables[name];
      if (table.empty()) table = fmt::format("timestamp\tstep\t{}\n", NameParts(name).back());
      table += fmt::format("{}\t{}\t{}\n", step.unix_ms, step.step, TsvNumber(value));
    }
  }
  std::set<std::string> written;
  for (const auto& [name, table] : tables) {
    std::vector<std::string> parts = NameParts(name);
    std::string path = dir + "/plots/metrics";
    for (size_t i = 0; i + 1 < parts.size(); ++i) path += "/" + parts[i];
    RETURN_IF_ERROR(MakeDirs(path));
    RETURN_IF_ERROR(WriteFileAtomic(path + "/" + parts.back() + ".tsv", table));
    written.insert(path + "/" + parts.back() + ".tsv");
  }
  RemoveStaleTables(dir + "/plots/metrics", written);
  // The latest value of every metric, as DVCLive's summary keeps it, and
  // the last step.
  nlohmann::json summary = nlohmann::json::object();
  for (const DvcLiveStep& step : history) {
    for (const auto& [name, value] : step.values) SetNested(&summary, name, JsonNumber(value));
  }
  if (!history.empty()) summary["step"] = history.back().step;
  // Laid out as DVCLive writes it (json.dump with indent=4, then a newline).
  const std::string text = summary.dump(4, ' ', false, nlohmann::json::error_handler_t::replace);
  return WriteFileAtomic(dir + "/metrics.json", text + "\n");
}

}  // namespace clusterd
