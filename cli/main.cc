// clusterctl: a thin client of the head's API.
#include <grpc/support/log.h>

#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "clusterd_version.h"
#include "cli/command_line.h"
#include "cli/global_flags.h"
#include "cli/job_commands.h"
#include "cli/node_commands.h"
#include "cli/queue_commands.h"
#include "cli/result_commands.h"
#include "cli/sweep_commands.h"
#include "cli/top_command.h"
#include "cli/user_commands.h"
#include "common/scrub_token.h"

namespace {

// Takes the connection flags too (and ignores them), so that global flags
// before it (`clusterctl --address H:P version`) are no error.
int VersionCommand(const std::vector<std::string>& args) {
  clusterd::cli::CommandLine line;
  boost::program_options::options_description flags("output");
  flags.add_options()("json", boost::program_options::bool_switch(&line.json), "print JSON, for scripts");
  int code = clusterd::cli::ParseCommandLine("version", "version [--json]", args, flags, 0, 0, &line);
  if (code >= 0) return code;
  std::cout << (line.json ? std::string("{\"version\":\"") + CLUSTERD_VERSION + "\"}" : std::string("clusterctl ") + CLUSTERD_VERSION)
            << "\n";
  return 0;
}

struct Command {
  int (*run)(const std::vector<std::string>&);
  const char* summary;
};

const std::map<std::string, Command>& Commands() {
  static const std::map<std::string, Command> commands = {
      {"status", {clusterd::cli::StatusCommand, "nodes by state, resources used/total, pending demands"}},
      {"nodes", {clusterd::cli::NodesCommand, "one line per node"}},
      {"top", {clusterd::cli::TopCommand, "a live view: nodes with usage bars, running jobs with their latest metrics"}},
      {"node", {clusterd::cli::NodeCommand, "NODE: one node, its GPUs' use and health; --reset-gpu N puts a bad GPU back"}},
      {"drain", {clusterd::cli::DrainCommand, "NODE: give a node no new work"}},
      {"stop-node", {clusterd::cli::StopNodeCommand, "NODE: make a node's agent exit"}},
      {"submit", {clusterd::cli::SubmitCommand, "JOB.yaml: submit a job; --follow streams its logs to the end"}},
      {"validate", {clusterd::cli::ValidateCommand, "JOB.yaml: check a job file without submitting it"}},
      {"jobs", {clusterd::cli::JobsCommand, "one line per job, a sweep's trials under it"}},
      {"queue", {clusterd::cli::QueueCommand, "waiting jobs in the order they will start: why each waits, when it starts"}},
      {"quota", {clusterd::cli::QuotaCommand, "set NAME GPU=8 CPU=64 | remove NAME | list: a user's or group's quota"}},
      {"sweep", {clusterd::cli::SweepCommand, "SWEEP: its trials, their parameters and metric, the best so far"}},
      {"job", {clusterd::cli::JobCommand, "JOB: state, attempts, placement per rank, checkpoint"}},
      {"logs", {clusterd::cli::LogsCommand, "JOB: the ranks' output; -f follows until the job ends"}},
      {"stop", {clusterd::cli::StopJobCommand, "JOB: stop a job (SIGTERM, then SIGKILL after the grace period)"}},
      {"metrics", {clusterd::cli::MetricsCommand, "JOB: what rank 0 reported, per attempt"}},
      {"fetch", {clusterd::cli::FetchCommand, "JOB: its outputs and DVCLive files (--checkpoint: its newest checkpoint)"}},
      {"delete", {clusterd::cli::DeleteCommand, "JOB: forget a finished job and delete its stored data and logs"}},
      {"user", {clusterd::cli::UserCommand, "add NAME [--admin] | list | remove NAME | set NAME: the head's users (admins)"}},
      {"token", {clusterd::cli::TokenCommand, "create --node | list | revoke ID: tokens that register nodes (admins)"}},
      {"whoami", {clusterd::cli::WhoAmICommand, "the user this clusterctl's token belongs to"}},
      {"version", {VersionCommand, "this clusterctl's version (--json: as JSON)"}},
  };
  return commands;
}

void Usage(std::ostream& out) {
  out << "usage: clusterctl [--address H:P] [--token T] [--temp-dir D] [--timeout-ms N] [--json] <command> [flags]\n";
  for (const auto& [name, command] : Commands()) out << "  " << name << std::string(12 - name.size(), ' ') << command.summary << "\n";
  out << "Run `clusterctl <command> --help` for a command's flags.\n";
}

}  // namespace

int main(int argc, char** argv) {
  // Every failure is explained in one line of our own (HeadClient::Explain);
  // gRPC's log lines (a failed TLS handshake, say) would only add noise.
  gpr_set_log_function([](gpr_log_func_args*) {});
  if (argc < 2) {
    Usage(std::cerr);
    return 2;
  }
  std::string first = argv[1];
  if (first == "--help" || first == "-h" || first == "help") {
    Usage(std::cout);
    return 0;
  }
  if (first == "--version") return VersionCommand({});
  // `clusterctl --address H:P status` means `clusterctl status --address H:P`.
  auto line = clusterd::cli::MoveGlobalFlags(std::vector<std::string>(argv + 1, argv + argc));
  clusterd::ScrubToken(argc, argv);  // `line` holds the copy the commands parse
  if (!line.ok()) {
    std::cerr << "clusterctl: " << line.status().message() << "\n";
    Usage(std::cerr);
    return 2;
  }
  if (line->empty()) {
    Usage(std::cerr);
    return 2;
  }
  std::string name = line->front();
  auto it = Commands().find(name);
  if (it == Commands().end()) {
    std::cerr << "clusterctl: unknown command '" << name << "'\n";
    Usage(std::cerr);
    return 2;
  }
  return it->second.run(std::vector<std::string>(line->begin() + 1, line->end()));
}
