// scheduler_scale_bench: what placing one job costs the head as the cluster
// grows. A HeadCore with N fake nodes of 2 CPUs each (in-process: fake
// clock, in-memory journal, recording agent connections) takes 1-rank
// jobs; each submit is placed at once (JobManager::Schedule -> TryStart ->
// PlaceGang -> StartAttempt), and only the submit call is timed: the
// driver then starts and ends the rank, untimed, so the job gives its CPU
// back. Also timed: N nodes registering while one job that no node can
// hold waits INFEASIBLE (each registration looks at the queue again).
// N = 3 is the baseline in the same run.
// With --history H, also N registrations on a head that ran H jobs first.
//   scheduler_scale_bench [--jobs 2000] [--nodes 1000,10000] [--history H]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/logging.h"
#include "daemon/head/head_core.h"
#include "tests/unit/fake_agent_connection.h"

using namespace clusterd;

namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

JobSpec OneRank(double cpus, double gpus) {
  JobSpec spec;
  spec.set_name("scale");
  spec.add_entrypoint("/bin/true");
  spec.set_working_dir("/work");
  spec.set_working_dir_mode(SHARED);
  spec.set_num_workers(1);
  (*spec.mutable_resources_per_worker()->mutable_amounts())["CPU"] = cpus;
  if (gpus > 0) (*spec.mutable_resources_per_worker()->mutable_amounts())["GPU"] = gpus;
  return spec;
}

// A head and its fake nodes.
struct Cluster {
  FakeClock clock;
  MemoryJobStore store, sweep_store;
  LogStore logs{""};
  Config config;
  HeadCore head{&clock, config, &store, &logs, nullptr, &sweep_store};
  std::vector<std::shared_ptr<testing::FakeAgentConnection>> links;
  std::vector<size_t> answered;  // per link: messages the driver has looked at

  // Registers nodes PREFIX-0 .. PREFIX-(count-1) at 10.SUBNET.x.y; returns
  // the seconds it took.
  double Register(int count, const std::string& prefix = "n", int subnet = 0) {
    double seconds = 0;
    for (int i = 0; i < count; ++i) {
      auto link = std::make_shared<testing::FakeAgentConnection>();
      AgentMessage reg;
      auto* r = reg.mutable_register_();
      r->set_name(prefix + "-" + std::to_string(i));
      r->set_address(fmt::format("10.{}.{}.{}", subnet, i / 250, i % 250 + 1));
      r->set_instance_id(prefix + "-instance-" + std::to_string(i));
      (*r->mutable_total()->mutable_amounts())["CPU"] = 2;
      auto start = Clock::now();
      head.OnAgentMessage(link, reg);
      seconds += SecondsSince(start);
      links.push_back(link);
      answered.push_back(link->sent.size());
    }
    return seconds;
  }

  // Plays the agents' part for whatever the head sent since the last call:
  // a port for each reservation, then the rank started and exited 0.
  void AnswerAgents(std::vector<std::string>* placed_on_some_node) {
    for (size_t i = 0; i < links.size(); ++i) {
      auto& link = *links[i];
      for (; answered[i] < link.sent.size(); ++answered[i]) {
        const HeadMessage& sent = link.sent[answered[i]];
        if (!sent.has_reserve_port()) continue;
        const std::string& job = sent.reserve_port().job_id();
        placed_on_some_node->push_back(job);
        AgentMessage port;
        port.mutable_port_reserved()->set_job_id(job);
        port.mutable_port_reserved()->set_port(1000);
        head.OnAgentMessage(links[i], port);
        AgentMessage started;
        started.mutable_rank_started()->set_job_id(job);
        started.mutable_rank_started()->set_pid(1);
        head.OnAgentMessage(links[i], started);
        AgentMessage exited;
        exited.mutable_rank_exited()->set_job_id(job);
        head.OnAgentMessage(links[i], exited);
      }
    }
  }
};

struct Row {
  int nodes = 0;
  double submit_us = 0;          // per submit, placement included
  double register_s = 0;         // all N registrations, nothing queued
  double register_waiting_s = 0; // the same with one INFEASIBLE job queued
  int placed = 0;
};

// Registers `nodes` nodes on a head that has run `history` jobs to the end
// on 3 nodes first: what a restarted head with a long past costs per join.
double RegisterAfterHistory(int nodes, int history) {
  Cluster cluster;
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
    Cluster cluster;
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
    Cluster cluster;
    SubmitJobRequest request;
    *request.mutable_spec() = OneRank(1, 1);  // a GPU: no node has one
    (void)cluster.head.jobs().Submit(request);
    row.register_waiting_s = cluster.Register(nodes);
  }
  return row;
}

std::vector<int> ParseList(const char* text) {
  std::vector<int> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::atoi(item.c_str()));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int jobs = 2000, history = 0;
  std::vector<int> sizes = {1000, 10000};
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--jobs")) jobs = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--history")) history = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--nodes")) sizes = ParseList(argv[i + 1]);
  }
  SetLogLevel(LogLevel::kError);
  Row base = Measure(3, jobs);
  std::printf("| nodes | submit + placement, per job (us) | x 3 nodes | jobs placed | %s | %s | x no job waiting |\n",
              "registering every node (s)", "the same, one INFEASIBLE job queued (s)");
  std::printf("| --- | --- | --- | --- | --- | --- | --- |\n");
  std::vector<Row> rows = {base};
  for (int nodes : sizes) rows.push_back(Measure(nodes, jobs));
  for (const Row& row : rows) {
    std::printf("| %d | %.1f | %.1fx | %d | %.3f | %.3f | %.1fx |\n", row.nodes, row.submit_us,
                row.submit_us / base.submit_us, row.placed, row.register_s, row.register_waiting_s,
                row.register_s > 0 ? row.register_waiting_s / row.register_s : 0.0);
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
