#include "daemon/http/prometheus.h"

#include <map>

#include <fmt/format.h>

#include "common/job_state.h"

namespace clusterd {

namespace {

// Label values may hold any text; Prometheus wants \, " and newline escaped.
std::string Label(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

void Family(std::string* out, const char* name, const char* type, const char* help) {
  *out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

}  // namespace

std::string FormatPrometheus(const ClusterStatus& status, const std::vector<JobInfo>& jobs,
                             const std::vector<std::pair<std::string, MetricRecord>>& latest_metrics) {
  std::string out;
  std::map<std::string, int> nodes = {{"ALIVE", 0}, {"DRAINING", 0}, {"DEAD", 0}};
  for (const auto& node : status.nodes()) {
    ++nodes[node.state() == ALIVE ? "ALIVE" : node.state() == DRAINING ? "DRAINING" : "DEAD"];
  }
  Family(&out, "clusterd_nodes", "gauge", "Nodes by state.");
  for (const auto& [state, count] : nodes) out += fmt::format("clusterd_nodes{{state=\"{}\"}} {}\n", state, count);

  Family(&out, "clusterd_resource_total", "gauge", "Resources of live nodes, by name.");
  for (const auto& [name, value] : std::map<std::string, double>(status.total().amounts().begin(), status.total().amounts().end())) {
    out += fmt::format("clusterd_resource_total{{resource=\"{}\"}} {}\n", Label(name), value);
  }
  Family(&out, "clusterd_resource_used", "gauge", "Resources held by running ranks, by name.");
  for (const auto& [name, value] : std::map<std::string, double>(status.total().amounts().begin(), status.total().amounts().end())) {
    auto used = status.used().amounts().find(name);
    out += fmt::format("clusterd_resource_used{{resource=\"{}\"}} {}\n", Label(name),
                       used == status.used().amounts().end() ? 0.0 : used->second);
  }

  std::map<std::string, int> by_state;
  for (JobState s : {PENDING, RUNNING, RESTARTING, SUCCEEDED, FAILED, STOPPED, INFEASIBLE}) by_state[JobStateName(s)] = 0;
  for (const auto& job : jobs) ++by_state[JobStateName(job.state())];
  Family(&out, "clusterd_jobs", "gauge", "Jobs by state.");
  for (const auto& [state, count] : by_state) out += fmt::format("clusterd_jobs{{state=\"{}\"}} {}\n", state, count);

  Family(&out, "clusterd_job_metric", "gauge", "The latest value each job's rank 0 reported, by metric name.");
  for (const auto& [job_id, record] : latest_metrics) {
    std::map<std::string, double> values(record.values().begin(), record.values().end());
    for (const auto& [name, value] : values) {
      out += fmt::format("clusterd_job_metric{{job=\"{}\",attempt=\"{}\",name=\"{}\"}} {}\n", Label(job_id),
                         record.attempt(), Label(name), value);
    }
  }
  return out;
}

}  // namespace clusterd
