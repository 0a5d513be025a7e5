// scheduler_scale_bench: what placing one job costs the head as the cluster
// grows. A HeadCore with N fake nodes of 2 CPUs each (in-process: fake
// clock, in-memory journal, recording agent connections) takes 1-rank
// jobs; each submit is placed at once (JobPlacement::Schedule -> TryStart ->
// PlaceGang -> JobAttempts::Start), and only the submit call is timed: the
// driver then starts and ends the rank, untimed, so the job gives its CPU
// back. Also timed: N nodes registering while one job that no node can
// hold waits INFEASIBLE (each registration looks at the queue again).
// And J jobs submitted to a full cluster, as one array and one by one
// (every one waits behind the first). N = 3 is the baseline in the same run.
// With --history H, also N registrations on a head that ran H jobs first.
//   scheduler_scale_bench [--jobs 2000] [--nodes 1000,10000] [--history H]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/logging.h"
#include "fake_cluster.h"
#include "flags.h"

using namespace clusterd;
using clusterd::bench::FakeCluster;
using clusterd::bench::OneRank;

namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

struct Row {
  int nodes = 0;
  double submit_us = 0;          // per submit, placement included
  double register_s = 0;         // all N registrations, nothing queued
  double register_waiting_s = 0; // the same with one INFEASIBLE job queued
  double array_full_us = 0;      // per job of an array submitted to a full cluster
  double submit_full_us = 0;     // per job submitted alone to a full cluster
  int placed = 0;
};

// Registers `nodes` nodes on a head that has run `history` jobs to the end
// on 3 nodes first: what a restarted head with a long past costs per join.
double RegisterAfterHistory(int nodes, int history) {
  FakeCluster cluster;
  cluster.Register(3);
  std::vector<std::string> placed;
  for (int i = 0; i < history; ++i) {
    SubmitJobRequest request;
    *request.mutable_spec() = OneRank(1, 0);
    (void)cluster.head.jobs().Submit(request);
    cluster.AnswerAgents(&placed);
  }
  return cluster.Register(nodes, "late", 1);
}

Row Measure(int nodes, int jobs) {
  Row row;
  row.nodes = nodes;
  {
    FakeCluster cluster;
    row.register_s = cluster.Register(nodes);
    double seconds = 0;
    std::vector<std::string> placed;
    for (int i = 0; i < jobs; ++i) {
      SubmitJobRequest request;
      *request.mutable_spec() = OneRank(1, 0);
      auto start = Clock::now();
      auto id = cluster.head.jobs().Submit(request);
      seconds += SecondsSince(start);
      if (!id.ok()) {
        std::fprintf(stderr, "submit failed: %s\n", id.status().ToString().c_str());
        std::exit(1);
      }
      cluster.AnswerAgents(&placed);
    }
    row.submit_us = seconds / jobs * 1e6;
    row.placed = static_cast<int>(placed.size());
  }
  {
    FakeCluster cluster;
    SubmitJobRequest request;
    *request.mutable_spec() = OneRank(1, 1);  // a GPU: no node has one
    (void)cluster.head.jobs().Submit(request);
    row.register_waiting_s = cluster.Register(nodes);
  }
  {
    FakeCluster cluster;
    cluster.Register(nodes);
    for (int i = 0; i < nodes; ++i) {  // each node's 2 CPUs taken, and never given back
      SubmitJobRequest request;
      *request.mutable_spec() = OneRank(2, 0);
      (void)cluster.head.jobs().Submit(request);
    }
    SubmitJobRequest array;
    *array.mutable_spec() = OneRank(1, 0);
    array.mutable_spec()->mutable_array()->set_count(jobs);
    auto start = Clock::now();
    if (!cluster.head.jobs().Submit(array).ok()) {
      std::fprintf(stderr, "the array was refused\n");
      std::exit(1);
    }
    row.array_full_us = SecondsSince(start) / jobs * 1e6;
    start = Clock::now();
    for (int i = 0; i < jobs; ++i) {
      SubmitJobRequest request;
      *request.mutable_spec() = OneRank(1, 0);
      (void)cluster.head.jobs().Submit(request);
    }
    row.submit_full_us = SecondsSince(start) / jobs * 1e6;
  }
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  int jobs = 2000, history = 0;
  std::vector<int> sizes = {1000, 10000};
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--jobs")) jobs = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--history")) history = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--nodes")) sizes = clusterd::bench::ParseNumberList(argv[i + 1]);
  }
  SetLogLevel(LogLevel::kError);
  Row base = Measure(3, jobs);
  std::printf("| nodes | submit + placement, per job (us) | x 3 nodes | jobs placed | %s | %s | x no job waiting | %s | x 3 nodes | one by one (us) | x 3 nodes |\n",
              "registering every node (s)", "the same, one INFEASIBLE job queued (s)",
              "into a full cluster, per job: an array (us)");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  std::vector<Row> rows = {base};
  for (int nodes : sizes) rows.push_back(Measure(nodes, jobs));
  for (const Row& row : rows) {
    std::printf("| %d | %.1f | %.1fx | %d | %.3f | %.3f | %.1fx | %.1f | %.1fx | %.1f | %.1fx |\n", row.nodes,
                row.submit_us,
                row.submit_us / base.submit_us, row.placed, row.register_s, row.register_waiting_s,
                row.register_s > 0 ? row.register_waiting_s / row.register_s : 0.0, row.array_full_us,
                row.array_full_us / base.array_full_us, row.submit_full_us, row.submit_full_us / base.submit_full_us);
  }
  if (history > 0) {
    std::printf("\n| nodes | registering every node (s) | the same after %d finished jobs (s) | x no history |\n",
                history);
    std::printf("| --- | --- | --- | --- |\n");
    for (const Row& row : rows) {
      double after = RegisterAfterHistory(row.nodes, history);
      std::printf("| %d | %.3f | %.3f | %.1fx |\n", row.nodes, row.register_s, after,
                  row.register_s > 0 ? after / row.register_s : 0.0);
    }
  }
  return 0;
}
