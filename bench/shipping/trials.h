// One measurement each of the shipping benchmark's four kinds, on a started
// ShipCluster whose client holds the working_dir at kFolder:
//   Submit: `stamp_run T clusterctl submit JOB --set env.OUT_DIR=D` on the
//           client; the clock starts in stamp_run right before it spawns
//           clusterctl, and stops at the time the rank (bin/noop_rank, run
//           from the job's working folder on w1) read for itself before its
//           main(). Then waits for the job to be SUCCEEDED.
//   Tar:    `tar -C kFolder -cf - . | nc -N W1 PORT` on the client into
//           `nc -l PORT | tar -C DEST -xf -` on w1; from right before the
//           client's sh is spawned until w1's tar has exited (stamped by a
//           static stamp_run that sh starts after it).
#pragma once

#include <cstdint>
#include <string>

#include "ship_cluster.h"

namespace clusterd::bench {

inline const std::string kFolder = "/tmp/ship/src";             // client (and w1, for shared)
inline const std::string kShipJob = "/tmp/ship/job-ship.yaml";  // working_dir_mode: ship
inline const std::string kSharedJob = "/tmp/ship/job-shared.yaml";

struct Times {
  int64_t start_ns = 0;     // right before clusterctl (or the tar pipeline) was spawned
  int64_t returned_ns = 0;  // clusterctl exited (Submit only)
  int64_t done_ns = 0;      // the rank started, or w1's tar exited
  std::string job_id;
  double Ms() const { return static_cast<double>(done_ns - start_ns) / 1e6; }
  double ReturnMs() const { return static_cast<double>(returned_ns - start_ns) / 1e6; }
};

class Trials {
 public:
  // stamp_run: path of the stamp_run program (visible on every machine).
  // scratch: a folder of this process for the tar listener's output.
  Trials(ShipCluster* cluster, std::string stamp_run, std::string scratch);

  // Writes both job files on the client and copies the client's folder to
  // the same path on w1 (for `shared`).
  bool Setup(std::string* error);
  // What a first submit faces: one file of the folder changed (a marker
  // with the round in it, so the package id is new to the head and to w1)
  // and no hash cache on the client.
  bool MakeFirstSubmit(int round, std::string* error);
  bool Submit(const std::string& kind, int round, const std::string& job_file, Times* times, std::string* error);
  bool Tar(int round, Times* times, std::string* error);

 private:
  ShipCluster* c_;
  std::string stamp_run_;
  std::string scratch_;
};

}  // namespace clusterd::bench
