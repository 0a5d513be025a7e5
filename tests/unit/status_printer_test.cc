// What `clusterctl status` prints for a large cluster: counts by state
// instead of a line per node past kNodesListed, unless --all; small
// groups are listed as before.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "cli/status_printer.h"

using namespace clusterd;
using namespace clusterd::cli;

namespace {

ClusterStatus Nodes(int alive, int dead) {
  ClusterStatus status;
  status.set_head_address("10.0.0.1:6379");
  for (int i = 0; i < alive + dead; ++i) {
    NodeInfo* node = status.add_nodes();
    node->set_name(fmt::format("node-{:03}", i));
    node->set_node_id(fmt::format("id{}", i));
    node->set_state(i < alive ? ALIVE : DEAD);
    node->set_last_heartbeat_unix_ms(1000);
  }
  return status;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("clusterctl status counts a state's nodes past the listing limit, and --all lists them", "[cli][status]") {
  ClusterStatus status = Nodes(kNodesListed + 5, 2);
  const std::string summary = FormatClusterStatus(status, 2000);
  CHECK(summary.find("Alive (25):\n (25 alive nodes: `clusterctl status --all` or `clusterctl nodes` lists them)\n") !=
        std::string::npos);
  CHECK(summary.find("Dead (2):\n node-025 (id25") != std::string::npos);  // few: listed
  CHECK(Count(summary, " node-") == 2);

  const std::string all = FormatClusterStatus(status, 2000, /*all_nodes=*/true);
  CHECK(Count(all, " node-") == kNodesListed + 7);
  CHECK(all.find("alive nodes:") == std::string::npos);

  // At the limit, every node is still listed.
  CHECK(Count(FormatClusterStatus(Nodes(kNodesListed, 0), 2000), " node-") == kNodesListed);
}

TEST_CASE("clusterctl status takes its counts from the head when the head lists only a few", "[cli][status]") {
  ClusterStatus status = Nodes(kNodesListed + 1, 0);  // what nodes_per_state = kNodesListed + 1 brings back
  status.mutable_node_counts()->set_alive(10000);
  status.mutable_node_counts()->set_dead(3);
  const std::string summary = FormatClusterStatus(status, 2000);
  CHECK(summary.find("Alive (10000):\n (10000 alive nodes: `clusterctl status --all` or `clusterctl nodes` lists them)\n") !=
        std::string::npos);
  // Counted but not listed: the line says where to see them, not an empty list.
  CHECK(summary.find("Dead (3):\n (3 dead nodes: `clusterctl status --all`") != std::string::npos);
}

TEST_CASE("clusterctl status shows the demands of one shape as one line, counted, whatever their names",
          "[cli][status]") {
  ClusterStatus status = Nodes(1, 0);
  for (int i = 0; i < 4; ++i) {
    PendingDemand* d = status.add_pending();
    d->set_job_id(fmt::format("job-{:04}", i + 1));
    d->set_job_name(i < 3 ? "array" : "other");
    d->set_num_workers(1);
    d->set_reason("waiting: array job-0001 runs at most 2 of its jobs at once (max_concurrent)");
  }
  PendingDemand* gpus = status.add_pending();
  gpus->set_job_id("job-0005");
  gpus->set_num_workers(2);
  (*gpus->mutable_per_worker()->mutable_amounts())["GPU"] = 1;
  gpus->set_infeasible(true);
  gpus->set_reason("cannot fit even on an idle cluster");
  const std::string demands =
      "Demands:\n"
      " 4 jobs of 1 x {}: waiting: array job-0001 runs at most 2 of its jobs at once (max_concurrent) (first: "
      "job-0001, array)\n"
      " 1 job of 2 x {1 GPU}: INFEASIBLE: cannot fit even on an idle cluster (first: job-0005)\n";
  CHECK(FormatClusterStatus(status, 2000).find(demands) != std::string::npos);

  // The head counted alike jobs (more_like_it): added up, with those listed
  // (an older head sent them in a row, or one each).
  status.mutable_pending(0)->set_more_like_it(99996);
  status.mutable_pending(2)->set_more_like_it(1);
  CHECK(FormatClusterStatus(status, 2000).find(" 100,001 jobs of 1 x {}: waiting") != std::string::npos);

  // The head's sum of the shapes it did not list closes the section.
  PendingDemand* rest = status.add_pending();
  rest->set_reason("4,000 more jobs of 3,000 other shapes, not listed");
  CHECK(FormatDemands(status.pending()).find("\n ... 4,000 more jobs of 3,000 other shapes, not listed\n") !=
        std::string::npos);
}
