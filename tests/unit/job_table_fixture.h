// A job table on its own, for the tests of one job concern at a time: a
// fake clock, an in-memory journal, and jobs put straight into the table
// (no submit, no nodes), so that a concern is constructed alone over it.
// JobConcernsFixture adds the concerns that others talk to, real and cheap.
#pragma once

#include <catch2/catch.hpp>

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/config.h"
#include "common/logs/log_store.h"
#include "common/resources.h"
#include "agent.pb.h"
#include "daemon/head/infeasible_shapes.h"
#include "daemon/head/job_adoption.h"
#include "daemon/head/job_arrays.h"
#include "daemon/head/job_attempts.h"
#include "daemon/head/job_data.h"
#include "daemon/head/job_launch.h"
#include "daemon/head/job_logs.h"
#include "daemon/head/job_results.h"
#include "daemon/head/job_retention.h"
#include "daemon/head/job_retry.h"
#include "daemon/head/job_store.h"
#include "daemon/head/job_table.h"
#include "daemon/head/node_table.h"

namespace clusterd::testing {

struct JobTableFixture {
  FakeClock clock;
  Config config;
  MemoryJobStore store;
  JobTable table{&clock, config, &store};

  // A node agent's registration: `cpus` CPUs at 10.0.0.<n>.
  static RegisterNode Node(const std::string& name, double cpus, int n = 1) {
    RegisterNode node;
    node.set_name(name);
    node.set_name_given(true);
    node.set_address("10.0.0." + std::to_string(n));
    node.set_instance_id(name + "-instance");
    (*node.mutable_total()->mutable_amounts())[kCpu] = cpus;
    return node;
  }

  // A job of `workers` ranks of one CPU each, in `state`, journalled and in
  // the table (not queued); `array_id` makes it one of that array's.
  TrackedJob& Add(JobState state = PENDING, const std::string& array_id = "", int workers = 1) {
    TrackedJob job;
    job.info.set_job_id(table.NewJobId());
    JobSpec* spec = job.info.mutable_spec();
    spec->set_name("train");
    spec->add_entrypoint("/bin/true");
    spec->set_num_workers(workers);
    (*spec->mutable_resources_per_worker()->mutable_amounts())[kCpu] = 1;
    spec->set_array_id(array_id);
    job.info.set_state(state);
    job.info.set_submit_unix_ms(clock.UnixMillis());
    REQUIRE(table.journal().AddJob(job.info).ok());
    return table.Add(std::move(job));
  }
};

// The job table with the concerns that the attempts, placement, adoption
// and the interrupts talk to, each real: a node table, a log store that
// keeps nothing, no blob store, and a send that records what each node is
// told. A test constructs the concern it tests over these; the listeners
// subscribe in JobManager's order.
struct JobConcernsFixture : JobTableFixture {
  NodeTable nodes{&clock, 2'000'000};
  LogStore logs{""};
  JobData data{nullptr};
  // An array's stop and delete go through JobManager, which no test here has.
  JobArrays arrays{&table,
                   [](const std::string& id, const std::string&) -> Result<JobInfo> {
                     return Status::FailedPrecondition("no job manager to stop " + id);
                   },
                   [](const std::string& id) -> Result<JobInfo> {
                     return Status::FailedPrecondition("no job manager to delete " + id);
                   }};
  InfeasibleShapes infeasible{&table, &nodes};
  JobResults results{&clock, config, &table, &nodes, &data};
  JobRetention retention{&clock, config, &table, &arrays};
  JobLogs job_logs{&clock, config, &table, &nodes, &logs};
  std::map<std::string, std::vector<HeadMessage>> sent;  // by node id, in the order sent
  std::set<std::string> unreachable;                     // node ids without a stream
  JobLaunch launch{config, &nodes, &data, &job_logs, Send()};
  JobRetry retry{&clock, &table};

  JobConcernsFixture() {
    table.Subscribe(&arrays);
    table.Subscribe(&infeasible);
    table.Subscribe(&results);
    table.Subscribe(&retention);
    table.Subscribe(&job_logs);
  }

  JobLaunch::SendFn Send() {
    return [this](const std::string& node_id, const HeadMessage& m) {
      if (unreachable.count(node_id)) return false;
      sent[node_id].push_back(m);
      return true;
    };
  }
  JobAdoption::Parts AdoptionParts() {
    return {&store, &table, &nodes, &logs, &data, &arrays, &results, &retention, &infeasible, &launch};
  }
  JobAttempts::Parts AttemptParts(JobAdoption* adoption) {
    return {&table, &nodes, &logs, &launch, &retry, &results, &arrays, adoption};
  }

  // Registers `name` with `cpus` CPUs at 10.0.0.<n>; its node id.
  std::string AddNode(const std::string& name, double cpus, int n = 1) {
    auto node = nodes.Register(Node(name, cpus, n));
    REQUIRE(node.ok());
    return (*node)->node_id();
  }
  // The CPUs of `node_id` free now, as placement sees them.
  double FreeCpus(const std::string& node_id) {
    for (const NodeCapacity& node : nodes.SchedulableNow()) {
      if (node.node_id == node_id) {
        return Amount(node.resources, kCpu);
      }
    }
    return -1;
  }
  // How many launches, kills and port requests of the job `node_id` was sent.
  int Launches(const std::string& node_id, const std::string& job_id) const {
    return CountSent(node_id, [&](const HeadMessage& m) { return m.has_launch() && m.launch().job_id() == job_id; });
  }
  int Kills(const std::string& node_id, const std::string& job_id) const {
    return CountSent(node_id, [&](const HeadMessage& m) { return m.has_kill() && m.kill().job_id() == job_id; });
  }
  int PortRequests(const std::string& node_id, const std::string& job_id) const {
    return CountSent(node_id,
                     [&](const HeadMessage& m) { return m.has_reserve_port() && m.reserve_port().job_id() == job_id; });
  }

  static RankExited Exit(const std::string& job_id, int attempt, int rank, int exit_code = 0, int signal = 0) {
    RankExited exit;
    exit.set_job_id(job_id);
    exit.set_attempt(attempt);
    exit.set_rank(rank);
    exit.set_exit_code(exit_code);
    exit.set_signal(signal);
    return exit;
  }

 private:
  int CountSent(const std::string& node_id, const std::function<bool(const HeadMessage&)>& match) const {
    auto it = sent.find(node_id);
    if (it == sent.end()) return 0;
    int n = 0;
    for (const HeadMessage& m : it->second) n += match(m) ? 1 : 0;
    return n;
  }
};

}  // namespace clusterd::testing
