// clusterctl: a thin client of the head's API.
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "cli/job_commands.h"
#include "cli/node_commands.h"
#include "cli/result_commands.h"
#include "cli/sweep_commands.h"

namespace {

struct Command {
  int (*run)(const std::vector<std::string>&);
  const char* summary;
};

const std::map<std::string, Command>& Commands() {
  static const std::map<std::string, Command> commands = {
      {"status", {clusterd::cli::StatusCommand, "nodes by state, resources used/total, pending demands"}},
      {"nodes", {clusterd::cli::NodesCommand, "one line per node"}},
      {"drain", {clusterd::cli::DrainCommand, "NODE: give a node no new work"}},
      {"stop-node", {clusterd::cli::StopNodeCommand, "NODE: make a node's agent exit"}},
      {"submit", {clusterd::cli::SubmitCommand, "JOB.yaml: submit a job; --follow streams its logs to the end"}},
      {"validate", {clusterd::cli::ValidateCommand, "JOB.yaml: check a job file without submitting it"}},
      {"jobs", {clusterd::cli::JobsCommand, "one line per job, a sweep's trials under it"}},
      {"sweep", {clusterd::cli::SweepCommand, "SWEEP: its trials, their parameters and metric, the best so far"}},
      {"job", {clusterd::cli::JobCommand, "JOB: state, attempts, placement per rank, checkpoint"}},
      {"logs", {clusterd::cli::LogsCommand, "JOB: the ranks' output; -f follows until the job ends"}},
      {"stop", {clusterd::cli::StopJobCommand, "JOB: stop a job (SIGTERM, then SIGKILL after the grace period)"}},
      {"metrics", {clusterd::cli::MetricsCommand, "JOB: what rank 0 reported, per attempt"}},
      {"fetch", {clusterd::cli::FetchCommand, "JOB: its outputs and DVCLive files (--checkpoint: its newest checkpoint)"}},
      {"delete", {clusterd::cli::DeleteCommand, "JOB: forget a finished job and delete its stored data"}},
  };
  return commands;
}

void Usage(std::ostream& out) {
  out << "usage: clusterctl <command> [flags]\n";
  for (const auto& [name, command] : Commands()) out << "  " << name << std::string(12 - name.size(), ' ') << command.summary << "\n";
  out << "Run `clusterctl <command> --help` for a command's flags.\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    Usage(std::cerr);
    return 2;
  }
  std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    Usage(std::cout);
    return 0;
  }
  auto it = Commands().find(name);
  if (it == Commands().end()) {
    std::cerr << "clusterctl: unknown command '" << name << "'\n";
    Usage(std::cerr);
    return 2;
  }
  return it->second.run(std::vector<std::string>(argv + 2, argv + argc));
}
