// The checkpoints benchmark (docs/BENCHMARKS.md, "checkpoints"), in one run
// on five simulated machines (head, w1-w3, client; sim_cluster.h):
//   failover: SIGKILL of rank 0's machine -> both ranks of the next attempt
//             running with the checkpoint restored (failover.h), for a
//             small and a large checkpoint, trials interleaved;
//   power_loss: the same for the large one with the machine's cable cut
//             first, so the head learns of it only by its node timeout;
//   upload:   step time of a training rank while its checkpoints upload
//             at the default checkpoint.upload_rate, against its steps
//             without (upload_cost.h), after the same at full speed; then the
//             re-upload of the unchanged last checkpoint (ckpt_upload.cc)
//             and the plain-tool baselines on the same folder: cp -r and
//             tar | nc to another worker, both synced.
#pragma once

#include <set>
#include <string>

#include "report.h"

namespace clusterd::bench {

struct CheckpointOptions {
  int trials = 3;        // failover trials per size
  int power_loss = 2;    // more failover trials of the large size, the cable pulled first
  int small_mib = 10;
  int large_mib = 500;   // also the size of the upload, re-upload and baselines
  int rounds = 3;        // checkpoints uploaded while the rank steps
  int baseline_ms = 2000;  // stepping without an upload before each save, and after the last
  int warm = 5;          // warm re-uploads
  int copies = 3;        // cp and tar | nc runs each
  int node_timeout_ms = 2000;  // the head's --node-timeout-ms (the default)
  // 1: during the upload part the rank's machine has CPU 0 to itself and
  // every other machine (the head among them) and the bench share CPU 1,
  // as separate machines would not share a CPU; 0: all share both.
  int core_per_machine = 0;
  // 0: before the upload part, the same at full speed (the job's
  // checkpoint.upload_rate: unlimited), as its baseline in the same run;
  // 1: the paced run only.
  int paced_only = 0;
  std::set<std::string> parts = {"failover", "power_loss", "upload"};
};

// Adds the rows to `report`; false (noted in the report) when some part
// could not measure.
bool RunCheckpoints(const CheckpointOptions& options, Report* report);

}  // namespace clusterd::bench
