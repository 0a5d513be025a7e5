#include "cli/node_commands.h"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <limits>

#include <fmt/format.h>

#include "cli/colour.h"
#include "cli/command_line.h"
#include "cli/heads_status.h"
#include "cli/node_printer.h"
#include "cli/status_printer.h"

namespace po = boost::program_options;

namespace clusterd::cli {

namespace {

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

int StatusCommand(const std::vector<std::string>& args) {
  CommandLine line;
  bool all_nodes = false;
  po::options_description flags = JsonFlag(&line);
  flags.add_options()("all", po::bool_switch(&all_nodes), "list every node, however many");
  int code = ParseCommandLine("status", "status [--all] [--json]", args, flags, 0, 0, &line);
  if (code >= 0) return code;
  auto client = HeadClient::Connect(line.client);
  if (!client.ok()) return Fail(client.status());
  // The text lists up to kNodesListed of a state, so one more tells it there
  // are others; a large cluster's summary then costs the head no copy of
  // its node table. --json and --all ask for every node.
  StatusRequest request;
  if (!line.json && !all_nodes) request.set_nodes_per_state(kNodesListed + 1);
  ClusterStatus status;
  Status st = (*client)->Call(&HeadService::Stub::GetStatus, request, &status);
  if (!st.ok()) return Fail(st);
  const int64_t now = (*client)->HeadNowUnixMs();
  // Heads in HA: which one leads, and the standbys; in the JSON as its
  // ha_heads, after the rest in the text.
  if (line.json) {
    auto heads = FetchHeads(**client);
    if (!heads.ok()) return Fail(heads.status());
    std::cout << StatusJson(std::move(status), *heads) << "\n";
    return 0;
  }
  std::cout << ForStdout(FormatClusterStatus(status, now, all_nodes));
  auto heads = FetchHeads(**client);
  if (!heads.ok()) return Fail(heads.status());
  if (heads->has_value()) std::cout << ForStdout(FormatHeads(**heads, now));
  return 0;
}

int NodesCommand(const std::vector<std::string>& args) {
  CommandLine line;
  int64_t limit = 0;
  int page_size = 1000;
  po::options_description flags = JsonFlag(&line);
  flags.add_options()("limit", po::value(&limit), "list at most this many nodes (the head first, then by name)")(
      "page-size", po::value(&page_size), "nodes per call to the head (default 1000)");
  int code = ParseCommandLine("nodes", "nodes [--limit N] [--page-size N] [--json]", args, flags, 0, 0, &line);
  if (code >= 0) return code;
  if (limit < 0) return Fail(Status::InvalidArgument("--limit must not be negative"));
  if (page_size <= 0) return Fail(Status::InvalidArgument("--page-size must be positive"));
  auto client = HeadClient::Connect(line.client);
  if (!client.ok()) return Fail(client.status());
  // Page by page, so that neither side holds a 10,000-node message.
  ListNodesReply all;
  ListNodesRequest request;
  do {
    int64_t left = limit > 0 ? limit - all.nodes_size() : page_size;
    request.set_page_size(static_cast<int32_t>(std::min<int64_t>(page_size, left)));
    ListNodesReply page;
    Status st = (*client)->Call(&HeadService::Stub::ListNodes, request, &page);
    if (!st.ok()) return Fail(st);
    for (auto& node : *page.mutable_nodes()) *all.add_nodes() = std::move(node);
    *all.mutable_counts() = page.counts();
    request.set_page_token(page.next_page_token());
  } while (!request.page_token().empty() && (limit == 0 || all.nodes_size() < limit));
  all.set_next_page_token(request.page_token());
  if (line.json) {
    std::cout << ToJson(all) << "\n";
    return 0;
  }
  std::string table = FormatNodeTable(all.nodes(), (*client)->HeadNowUnixMs());
  const NodeCounts& counts = all.counts();
  const int64_t total = int64_t{counts.alive()} + counts.draining() + counts.dead();
  if (all.nodes_size() < total) table += fmt::format("({} of {} nodes; --limit 0 lists all)\n", all.nodes_size(), total);
  std::cout << ForStdout(table);
  return 0;
}

int NodeCommand(const std::vector<std::string>& args) {
  CommandLine line;
  constexpr int kNotGiven = std::numeric_limits<int>::min();
  int reset_gpu = kNotGiven;
  po::options_description flags = JsonFlag(&line);
  flags.add_options()("reset-gpu", po::value(&reset_gpu),
                      "put GPU N, out of the offer for a fault, back into it (admins; docs/OPERATIONS.md, GPU health)");
  int code = ParseCommandLine("node", "node NODE [--reset-gpu N] [--json]", args, flags, 1, 1, &line);
  if (code >= 0) return code;
  if (reset_gpu != kNotGiven && reset_gpu < 0) {
    return Fail(Status::InvalidArgument(fmt::format("--reset-gpu takes a GPU index, 0 or more, not {}", reset_gpu)));
  }
  auto client = HeadClient::Connect(line.client);
  if (!client.ok()) return Fail(client.status());
  const std::string& wanted = line.positional[0];
  if (reset_gpu != kNotGiven) {
    ResetGpuRequest request;
    request.set_node(wanted);
    request.set_gpu(reset_gpu);
    ResetGpuReply reply;
    Status st = (*client)->Call(&HeadService::Stub::NodeResetGpu, request, &reply);
    if (!st.ok()) return Fail(st);
    if (line.json) {
      std::cout << ToJson(reply) << "\n";
    } else {
      std::cout << fmt::format("GPU {} of node {} is back in the offer (it was out for: {}).\n", reset_gpu,
                               reply.node().name(), reply.fault());
      if (reply.node().state() == DRAINING) {
        std::cout << fmt::format("The node is still DRAINING: {}\n", reply.node().state_reason());
      }
    }
    return 0;
  }
  // The whole status, as `clusterctl status --json` gets it: the head has
  // no call for one node, and names and ids are both accepted here.
  ClusterStatus status;
  Status st = (*client)->Call(&HeadService::Stub::GetStatus, StatusRequest(), &status);
  if (!st.ok()) return Fail(st);
  for (const NodeInfo& node : status.nodes()) {
    if (node.name() != wanted && node.node_id() != wanted) continue;
    std::cout << (line.json ? ToJson(node) + "\n" : ForStdout(FormatNodeDetail(node, (*client)->HeadNowUnixMs())));
    return 0;
  }
  return Fail(Status::NotFound(fmt::format("no node named or with id '{}'", wanted)));
}

int DrainCommand(const std::vector<std::string>& args) {
  return NodeAction("drain", args, &HeadService::Stub::DrainNode, "is DRAINING: it gets no new work");
}
int StopNodeCommand(const std::vector<std::string>& args) {
  return NodeAction("stop-node", args, &HeadService::Stub::StopNode, "was asked to stop");
}

}  // namespace clusterd::cli
