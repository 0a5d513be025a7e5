// The sweep the sweep tests submit (sweep_harness.h), which the sweep
// scheduler's benchmark (bench/tune/scheduler_overhead.cc) submits too:
// free of Catch2, so that a program without it can include it.
#pragma once

#include "cluster.pb.h"
#include "common/resources.h"

namespace clusterd::testing {

// `samples` trials, `max_concurrent` at once, of one worker of 1 CPU over a
// shared /work; `lr` drawn log-uniformly; ASHA on accuracy per
// training_iteration (max_t 4, grace 1, reduction factor 2); seed 3.
inline SubmitJobRequest SweepSubmit(int samples, int max_concurrent) {
  SubmitJobRequest request;
  JobSpec* spec = request.mutable_spec();
  spec->set_name("mlp");
  spec->add_entrypoint("/bin/train");
  spec->add_entrypoint("--lr={lr}");
  spec->set_working_dir("/work");
  spec->set_working_dir_mode(SHARED);
  spec->set_num_workers(1);
  (*spec->mutable_resources_per_worker()->mutable_amounts())[kCpu] = 1;
  spec->set_config_json("{\"epochs\":4}");
  TuneSpec* tune = spec->mutable_tune();
  tune->set_metric("accuracy");
  tune->set_num_samples(samples);
  tune->set_max_concurrent(max_concurrent);
  tune->set_seed(3);
  SearchDimension* lr = tune->add_search_space();
  lr->set_name("lr");
  lr->set_distribution("loguniform");
  lr->set_low(1e-4);
  lr->set_high(1e-1);
  AshaSpec* asha = tune->mutable_asha();
  asha->set_time_attr("training_iteration");
  asha->set_max_t(4);
  asha->set_grace_period(1);
  asha->set_reduction_factor(2);
  return request;
}

// A sweep of `samples` trials without ASHA.
inline SubmitJobRequest PlainSweepSubmit(int samples, int max_concurrent) {
  SubmitJobRequest request = SweepSubmit(samples, max_concurrent);
  request.mutable_spec()->mutable_tune()->clear_asha();
  return request;
}

}  // namespace clusterd::testing
