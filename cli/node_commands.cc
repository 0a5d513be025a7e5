#include "cli/node_commands.h"

#include <chrono>
#include <functional>
#include <iostream>

#include "cli/colour.h"
#include "cli/command_line.h"
#include "cli/status_printer.h"

namespace po = boost::program_options;

namespace clusterd::cli {

namespace {

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch()).count();
}

po::options_description JsonFlag(CommandLine* line) {
  po::options_description flags("output");
  flags.add_options()("json", po::bool_switch(&line->json), "print JSON, for scripts");
  return flags;
}

// status and nodes: the same call, printed two ways.
int ShowCluster(const std::string& command, const std::vector<std::string>& args,
                const std::function<std::string(const ClusterStatus&, int64_t, bool)>& format) {
  CommandLine line;
  bool all_nodes = false;
  po::options_description flags = JsonFlag(&line);
  std::string usage = command + " [--json]";
  if (command == "status") {
    flags.add_options()("all", po::bool_switch(&all_nodes), "list every node, however many");
    usage = command + " [--all] [--json]";
  }
  int code = ParseCommandLine(command, usage, args, flags, 0, 0, &line);
  if (code >= 0) return code;
  auto client = HeadClient::Connect(line.client);
  if (!client.ok()) return Fail(client.status());
  ClusterStatus status;
  Status st = (*client)->Call(&HeadService::Stub::GetStatus, StatusRequest(), &status);
  if (!st.ok()) return Fail(st);
  std::cout << (line.json ? ToJson(status) + "\n" : ForStdout(format(status, NowUnixMs(), all_nodes)));
  return 0;
}

int NodeAction(const std::string& command, const std::vector<std::string>& args,
               grpc::Status (HeadService::Stub::*method)(grpc::ClientContext*, const NodeRequest&, NodeReply*),
               const char* done) {
  CommandLine line;
  int code = ParseCommandLine(command, command + " NODE [--json]", args, JsonFlag(&line), 1, 1, &line);
  if (code >= 0) return code;
  auto client = HeadClient::Connect(line.client);
  if (!client.ok()) return Fail(client.status());
  NodeRequest request;
  request.set_node(line.positional[0]);
  NodeReply reply;
  Status st = (*client)->Call(method, request, &reply);
  if (!st.ok()) return Fail(st);
  if (line.json) {
    std::cout << ToJson(reply.node()) << "\n";
  } else {
    std::cout << "Node " << reply.node().name() << " (" << reply.node().node_id() << ") " << done << ".\n";
  }
  return 0;
}

}  // namespace

int StatusCommand(const std::vector<std::string>& args) { return ShowCluster("status", args, FormatClusterStatus); }
int NodesCommand(const std::vector<std::string>& args) {
  return ShowCluster("nodes", args, [](const ClusterStatus& status, int64_t now, bool) {
    return FormatNodeTable(status, now);
  });
}
int DrainCommand(const std::vector<std::string>& args) {
  return NodeAction("drain", args, &HeadService::Stub::DrainNode, "is DRAINING: it gets no new work");
}
int StopNodeCommand(const std::vector<std::string>& args) {
  return NodeAction("stop-node", args, &HeadService::Stub::StopNode, "was asked to stop");
}

}  // namespace clusterd::cli
