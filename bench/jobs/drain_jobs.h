// One throughput part of jobs_bench: `jobs` single-rank jobs through a fresh
// three-node cluster (bench/jobs/three_nodes.h), submitted either as
// separate unary submits from several threads or as one array, waited for
// until every one has ended; what it cost the cluster's processes on the way.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "report.h"
#include "sections.h"
#include "three_nodes.h"

namespace clusterd::bench {

class EtcdUsageWindow;

// What one part measured.
struct Part {
  bool as_array = false;
  double submit_s = 0, total_s = 0;
  int succeeded = 0;
  uint64_t journal_bytes = 0;  // the head's local journal; 0 for a head in HA
  std::optional<double> head_cpu_percent, head_rss_mib;
  double cpu_ms = 0, ranks_cpu_ms = 0;  // per job: clusterd's own, its ranks'
  double bench_cpu_ms = 0;              // per job: this process's (its submitting threads, mostly gRPC)
  double etcd_cpu_ms = 0;               // per job: etcd's members' (a head in HA)
  double etcd_disk_bytes = 0;           // per job: what they wrote to the block layer
};

// The jobs through a fresh cluster whose head starts as `head` says,
// either as `options.jobs` separate submits from `submit_threads` threads
// or as one array, into *part. With `etcd` (a head in HA), etcd's own cost
// over the same window too. False when it could not measure (reported).
// `nodes` is the caller's, so that its folders (10,000 jobs' files) are
// removed after every part has run: ext4 skips the inodes freed in the last
// minutes when it makes new ones, and a part run right after the removal
// of the last part's files would pay for that removal in every file it makes.
bool DrainJobs(const JobsOptions& options, bool as_array, const HeadChoice& head,
               EtcdUsageWindow* etcd, ThreeNodes& nodes, Report* report, Part* part);

// CPU seconds so far of this process's reaped children (RUSAGE_CHILDREN)
// or of this process itself (RUSAGE_SELF).
double UsedCpu(int who);

}  // namespace clusterd::bench
