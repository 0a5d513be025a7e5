// The submit request the head's unit tests send: a job of `workers` ranks of
// `cpus` CPUs each, running /bin/true in a shared working_dir.
#pragma once

#include "cluster.pb.h"
#include "common/resources.h"

namespace clusterd::testing {

inline SubmitJobRequest SubmitRequestFor(int workers, double cpus = 1) {
  SubmitJobRequest request;
  JobSpec* spec = request.mutable_spec();
  spec->set_name("train");
  spec->add_entrypoint("/bin/true");
  spec->set_working_dir("/work");
  spec->set_working_dir_mode(SHARED);
  spec->set_num_workers(workers);
  (*spec->mutable_resources_per_worker()->mutable_amounts())[kCpu] = cpus;
  return request;
}

}  // namespace clusterd::testing
