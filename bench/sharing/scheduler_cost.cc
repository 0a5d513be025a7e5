#include "scheduler_cost.h"

#include <chrono>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "fake_cluster.h"
#include "stats.h"

namespace clusterd::bench {
namespace {

using SteadyClock = std::chrono::steady_clock;

struct RunningRank {
  size_t link = 0;
  std::string job_id;
  int attempt = 0;
};

// Plays the agents: each launch since the last call has its rank
// started and kept running (the decisions end them one at a time); each
// kill (a preemption's SIGTERM) ends the ranks it names at once.
// Returns the launches it answered.
int AnswerAgents(FakeCluster& cluster, std::deque<RunningRank>* running) {
  int launches = 0;
  for (size_t i = 0; i < cluster.links.size(); ++i) {
    auto& link = *cluster.links[i];
    for (; cluster.answered[i] < link.sent.size(); ++cluster.answered[i]) {
      const HeadMessage sent = link.sent[cluster.answered[i]];
      if (sent.has_kill()) {
        for (auto it = running->begin(); it != running->end();) {
          if (it->link != i || it->job_id != sent.kill().job_id() || it->attempt != sent.kill().attempt()) {
            ++it;
            continue;
          }
          AgentMessage exited;
          exited.mutable_rank_exited()->set_job_id(it->job_id);
          exited.mutable_rank_exited()->set_attempt(it->attempt);
          exited.mutable_rank_exited()->set_rank(0);
          exited.mutable_rank_exited()->set_signal(15);
          it = running->erase(it);
          cluster.head.OnAgentMessage(cluster.links[i], exited);
        }
        continue;
      }
      if (!sent.has_launch()) continue;
      ++launches;
      const LaunchRanks& launch = sent.launch();
      for (const RankLaunch& rank : launch.ranks()) {
        AgentMessage started;
        started.mutable_rank_started()->set_job_id(launch.job_id());
        started.mutable_rank_started()->set_attempt(launch.attempt());
        started.mutable_rank_started()->set_rank(rank.rank());
        started.mutable_rank_started()->set_pid(1);
        started.mutable_rank_started()->set_master_port(1000);
        cluster.head.OnAgentMessage(cluster.links[i], started);
        running->push_back({i, launch.job_id(), launch.attempt()});
      }
    }
  }
  return launches;
}

}  // namespace

SchedulerCost MeasureSchedulerCost(const SchedulerCostOptions& options, bool mixed) {
  SchedulerCost cost;
  // The fake agents send no heartbeats: the head's ticks must not take
  // that for their death.
  Config config;
  config.node_timeout_ms = 1'000'000'000;
  FakeCluster cluster(config);
  cluster.Register(options.nodes);
  std::deque<RunningRank> running;
  // Every CPU taken by a job that runs until a decision ends it.
  for (int i = 0; i < options.nodes * 2; ++i) {
    SubmitJobRequest request;
    *request.mutable_spec() = OneRank(1, 0);
    if (!cluster.head.jobs().Submit(request, "filler").ok()) return cost;
  }
  AnswerAgents(cluster, &running);
  // The pending jobs: from `users` users at four priorities, in a random
  // order (mixed), or the baseline: one user, one priority (strict FIFO).
  std::mt19937 random(7);
  for (int i = 0; i < options.pending; ++i) {
    SubmitJobRequest request;
    *request.mutable_spec() = OneRank(1 + static_cast<int>(random() % 2), 0);
    std::string owner = "user-0";
    if (mixed) {
      request.mutable_spec()->set_priority(static_cast<int>(random() % 4));
      owner = fmt::format("user-{}", random() % options.users);
    }
    auto submitted = cluster.head.jobs().Submit(request, owner);
    if (!submitted.ok()) {
      cost.error = submitted.status().ToString();
      return cost;
    }
  }
  // Each decision: a running rank exits, its job ends, and the head picks
  // and places what comes next from the pending jobs. Only that is timed.
  Samples samples;
  for (int decision = 0; decision < options.decisions && !running.empty(); ++decision) {
    RunningRank ending = running.front();
    running.pop_front();
    AgentMessage exited;
    exited.mutable_rank_exited()->set_job_id(ending.job_id);
    exited.mutable_rank_exited()->set_attempt(ending.attempt);
    exited.mutable_rank_exited()->set_rank(0);
    cluster.clock.AdvanceMillis(1000);  // usage accrues between decisions, and preemption deadlines pass
    auto start = SteadyClock::now();
    cluster.head.OnAgentMessage(cluster.links[ending.link], exited);
    samples.Add(std::chrono::duration<double, std::milli>(SteadyClock::now() - start).count());
    // Untimed: the head's timers (a preemption's deadline sends SIGTERM)
    // and the agents' answers, which may place more.
    cost.placed += AnswerAgents(cluster, &running);
    cluster.head.Tick();
    cost.placed += AnswerAgents(cluster, &running);
  }
  cost.median_ms = samples.Median();
  cost.p99_ms = samples.P99();
  cost.measured = true;
  return cost;
}

}  // namespace clusterd::bench
