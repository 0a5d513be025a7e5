// Drives HeadCore in unit tests: fake agents on fake streams, a fake clock,
// an in-memory journal. Shared by the job tests.
#pragma once

#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/logging.h"
#include "common/resources.h"
#include "daemon/head/head_core.h"
#include "fake_agent_connection.h"
#include "submit_request.h"

namespace clusterd::testing {

// Only errors are logged while it lives: job transitions log their reasons,
// and tests that quote long log tails or run thousands of attempts drown.
struct QuietLogs {
  QuietLogs() {
    while (old != LogLevel::kError && !LogEnabled(old)) old = LogLevel(static_cast<int>(old) + 1);
    SetLogLevel(LogLevel::kError);
  }
  ~QuietLogs() { SetLogLevel(old); }
  LogLevel old = LogLevel::kDebug;
};

struct Harness {
  FakeClock clock;
  MemoryJobStore store;
  LogStore logs;
  Config config;
  std::unique_ptr<HeadCore> head;
  std::map<std::string, std::shared_ptr<FakeAgentConnection>> agents;

  // `blobs` (may be null) is the head's store for jobs that ship a package;
  // `log_dir` ("": none) keeps the ranks' logs.
  explicit Harness(BlobStore* blobs = nullptr, const std::string& log_dir = "") : logs(log_dir) {
    config.node_timeout_ms = 2000;
    head = std::make_unique<HeadCore>(&clock, config, &store, &logs, blobs);
  }

  // A node at 10.0.0.<n>; `address` and `peer` (a gRPC peer string) change
  // what it claims and where its stream seems to come from.
  void AddNode(const std::string& name, double cpus, int gpus = 0, const std::string& address = "",
               const std::string& peer = "fake") {
    auto conn = std::make_shared<FakeAgentConnection>();
    conn->peer = peer;
    AgentMessage m;
    auto* r = m.mutable_register_();
    r->set_name(name);
    r->set_name_given(true);
    r->set_address(address.empty() ? "10.0.0." + std::to_string(agents.size() + 1) : address);
    r->set_instance_id(name + std::to_string(clock.NowMicros()));
    (*r->mutable_total()->mutable_amounts())[kCpu] = cpus;
    if (gpus) (*r->mutable_total()->mutable_amounts())[kGpu] = gpus;
    for (int i = 0; i < gpus; ++i) r->add_gpu_indexes(i);
    agents[name] = conn;
    head->OnAgentMessage(conn, m);
  }

  void From(const std::string& node, const AgentMessage& m) { head->OnAgentMessage(agents[node], m); }

  // Moves the clock while every node keeps beating, then runs the timers.
  void Advance(int64_t ms) {
    for (int64_t done = 0; done < ms; done += 500) {
      clock.AdvanceMillis(std::min<int64_t>(500, ms - done));
      AgentMessage beat;
      beat.mutable_heartbeat()->set_seq(1);
      for (auto& [name, conn] : agents) head->OnAgentMessage(conn, beat);
      head->Tick();
    }
  }

  // Answers each ReservePort sent to `node`, if any, with `port`.
  void AnswerPort(const std::string& node, int port) {
    // A copy: each answer sends a launch, which grows the list.
    const std::vector<HeadMessage> sent_so_far = agents[node]->sent;
    for (const auto& sent : sent_so_far) {
      if (!sent.has_reserve_port()) continue;
      AgentMessage m;
      m.mutable_port_reserved()->set_job_id(sent.reserve_port().job_id());
      m.mutable_port_reserved()->set_attempt(sent.reserve_port().attempt());
      m.mutable_port_reserved()->set_port(port);
      From(node, m);
    }
  }

  std::vector<LaunchRanks> Launches(const std::string& node) {
    std::vector<LaunchRanks> out;
    for (const auto& sent : agents[node]->sent) {
      if (sent.has_launch()) out.push_back(sent.launch());
    }
    return out;
  }

  bool GotKill(const std::string& node, int attempt) {
    for (const auto& sent : agents[node]->sent) {
      if (sent.has_kill() && sent.kill().attempt() == attempt) return true;
    }
    return false;
  }

  void Exit(const std::string& node, const std::string& job, int attempt, int rank, int code, int signal = 0) {
    AgentMessage m;
    auto* e = m.mutable_rank_exited();
    e->set_job_id(job);
    e->set_attempt(attempt);
    e->set_rank(rank);
    e->set_exit_code(code);
    e->set_signal(signal);
    e->set_log_tail("boom");
    From(node, m);
  }

  SubmitJobRequest Request(int workers, double cpus, Placement placement, int max_failures = 0, int gpus = 0) {
    SubmitJobRequest request = SubmitRequestFor(workers, cpus);
    JobSpec* spec = request.mutable_spec();
    if (gpus) (*spec->mutable_resources_per_worker()->mutable_amounts())[kGpu] = gpus;
    spec->set_placement(placement);
    spec->set_max_failures(max_failures);
    (*spec->mutable_env())["FOO"] = "bar";
    return request;
  }

  std::string Submit(int workers, double cpus, Placement placement, int max_failures = 0, int gpus = 0) {
    return Submit(Request(workers, cpus, placement, max_failures, gpus));
  }
  std::string Submit(const SubmitJobRequest& request) {
    auto id = head->jobs().Submit(request);
    REQUIRE(id.ok());
    return *id;
  }

  JobInfo Job(const std::string& id) { return *head->jobs().Get(id); }
};

// Node `name` (10.0.0.1) registering with a head that restarted, as a new
// instance of `cpus` CPUs whose agent still runs `ranks` of `job_id`'s
// attempt 0 (pid 100 + rank unless `pid` is given).
inline AgentMessage RegisterAgain(const std::string& name, double cpus, const std::string& job_id,
                                  const std::vector<int>& ranks, int pid = 0) {
  AgentMessage m;
  auto* r = m.mutable_register_();
  r->set_name(name);
  r->set_address("10.0.0.1");
  r->set_instance_id(name + "-again");
  (*r->mutable_total()->mutable_amounts())[kCpu] = cpus;
  for (int rank : ranks) {
    auto* live = r->add_live_ranks();
    live->set_job_id(job_id);
    live->set_attempt(0);
    live->set_rank(rank);
    live->set_pid(pid ? pid : 100 + rank);
  }
  return m;
}

// What rank `index` of a launch sees from the head: the launch's shared
// variables with its own on top.
inline std::map<std::string, std::string> EnvOf(const LaunchRanks& launch, int index) {
  std::map<std::string, std::string> env(launch.env().begin(), launch.env().end());
  for (const auto& [key, value] : launch.ranks(index).env()) env[key] = value;
  return env;
}


}  // namespace clusterd::testing
