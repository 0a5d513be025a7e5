// A job table on its own, for the tests of one job concern at a time: a
// fake clock, an in-memory journal, and jobs put straight into the table
// (no submit, no nodes), so that a concern is constructed alone over it.
#pragma once

#include <catch2/catch.hpp>

#include <string>

#include "common/clock.h"
#include "common/config.h"
#include "common/resources.h"
#include "agent.pb.h"
#include "daemon/head/job_store.h"
#include "daemon/head/job_table.h"

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

}  // namespace clusterd::testing
