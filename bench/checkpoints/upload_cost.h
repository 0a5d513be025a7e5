// What uploading checkpoints costs training: a 1-rank job (ckpt_rank steps)
// steps a fixed matmul on one thread and records when each step ends; every
// `baseline_ms` the benchmark has it save a checkpoint of `mib` MiB (new
// pseudo-random bytes each time, so every piece is sent) and report it, and
// the node agent uploads it in the background. Steps that ran wholly inside
// an upload (from the report until the agent logs "stored") are compared
// with steps well away from any save or upload in the same run.
#pragma once

#include <string>
#include <vector>

#include "sim_cluster.h"
#include "stats.h"

namespace clusterd::bench {

struct UploadCost {
  Samples base_steps, during_steps;  // ms per step
  double base_mean_ms = 0, during_mean_ms = 0;  // wall time per step
  double base_cpu_ms = 0, during_cpu_ms = 0;    // the rank thread's CPU time per step
  std::vector<double> upload_ms;      // report -> the agent logs "stored"
  std::vector<double> save_ms;        // the rank's own save (write, sync, rename)
  std::vector<double> agent_cpu_ms;   // the node's clusterd, during each upload
  std::vector<double> agent_nice0_cpu_ms;  // of which its threads at nice 0 (not the uploader's)
  std::vector<double> head_cpu_ms;    // the head's clusterd, during each upload
  std::vector<double> head_nice0_cpu_ms;  // of which its threads at nice 0 (not the ingest threads)
  uint64_t bytes = 0;                 // one checkpoint's bytes (the agent's count)
  // Left for the re-upload and the baselines: the job (ended, not cleared),
  // the node that ran it and its last checkpoint there.
  std::string job_id, tag;
  testing::Machine* machine = nullptr;
  std::string checkpoint_dir, last_checkpoint;
};

struct UploadCostRun {
  int mib = 500;
  int rounds = 3;
  int baseline_ms = 2000;
  // The rank's machine runs on CPU 0 alone, the rest on CPU 1, for the
  // part's length (see CheckpointOptions).
  bool core_per_machine = false;
  std::string upload_rate;  // the job's checkpoint.upload_rate; "": the default
  std::string tag = "steps";
};

bool RunUploadCost(SimCluster& cluster, const UploadCostRun& run, UploadCost* result, std::string* error);

}  // namespace clusterd::bench
