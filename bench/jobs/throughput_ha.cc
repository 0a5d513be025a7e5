// 3. Throughput through a head in HA: the throughput part's 10,000
// single-rank jobs (drain_jobs.h), as separate submits and as one array,
// through a head started with --ha on three real etcd members and --store
// on a radosgw (bench/control_plane/ha_backing.h), against a single head
// (its local journal) in the same run; both heads run no agent, and the
// same three workers w0, w1, w2 run the ranks. Each HA part
// runs between two single-head parts and is held against their mean, as
// the throughput part holds its parts against the floor runs around them:
// this machine's speed drifts within minutes. Beside the rates: each
// head's CPU, clusterd's CPU per job, and etcd's own CPU and bytes written
// per job over the HA part.
#include <cmath>
#include <iostream>
#include <memory>

#include "drain_jobs.h"
#include "ha_backing.h"
#include "sections.h"

namespace clusterd::bench {

namespace {

double Rate(const Part& part) { return part.succeeded / part.total_s; }

void ReportHaPart(const JobsOptions& options, const Part& ha, const Part& before, const Part& after, Report* report) {
  const std::string how = ha.as_array ? "one array" : "separate submits";
  const std::string n = std::to_string(options.jobs);
  const double single = (Rate(before) + Rate(after)) / 2;
  const std::string runs = "single head: the mean of " + std::to_string(std::lround(Rate(before))) + " before and " +
                           std::to_string(std::lround(Rate(after))) + " after";
  report->Info(n + " x 1-rank jobs (" + how + ") through a head in HA, first submit -> last SUCCEEDED, jobs/s",
               Rate(ha), "", single, runs);
  report->Check("  the same, HA / single head", Rate(ha) / single, "x", 0.5, std::nullopt, "", true);
  report->Info("  submit rate, jobs/s", options.jobs / ha.submit_s, "",
               (options.jobs / before.submit_s + options.jobs / after.submit_s) / 2, "single head");
  if (ha.head_cpu_percent && before.head_cpu_percent && after.head_cpu_percent) {
    report->Info("  head CPU during the run, % of one core", *ha.head_cpu_percent, "%",
                 (*before.head_cpu_percent + *after.head_cpu_percent) / 2, "single head");
  }
  report->Info("  clusterd's CPU per job (the head, 3 workers, their launchers and keepers), ms", ha.cpu_ms, "ms",
               (before.cpu_ms + after.cpu_ms) / 2, "single head");
  report->Info("  etcd's CPU per job (its 3 members), ms", ha.etcd_cpu_ms, "ms");
  report->Info("  etcd's bytes to disk per job (its 3 members' write_bytes)", ha.etcd_disk_bytes, "",
               static_cast<double>((before.journal_bytes + after.journal_bytes) / 2) / options.jobs,
               "single head's journal bytes per job");
}

}  // namespace

bool RunThroughputHa(const JobsOptions& options, Report* report) {
  std::string why;
  std::cerr << "jobs_bench:   starting three etcd members and a radosgw" << std::endl;
  std::unique_ptr<HaBacking> backing = HaBacking::Start(&why);
  if (!backing) {
    report->Failed("throughput_ha", "cannot start what a head in HA needs: " + why);
    return false;
  }
  // Every cluster's folders go at the end (see DrainJobs); each HA head
  // has a prefix of its own in etcd and the bucket.
  ThreeNodes clusters[6];
  Part parts[6];
  bool ok = true;
  int next = 0;
  auto drain = [&](bool as_array, bool ha, Part* part) {
    ThreeNodes& nodes = clusters[next];
    // Both heads run no agent of their own, as heads in HA are run (and a
    // head in HA's own agent dials it before it leads): three workers.
    HeadChoice head;
    head.runs_agent = false;
    std::unique_ptr<EtcdUsageWindow> etcd;
    if (ha) {
      head.flags = backing->HeadFlags("tput-" + std::to_string(next));
      etcd = std::make_unique<EtcdUsageWindow>(*backing);
    }
    ++next;
    std::cerr << "jobs_bench:   " << (ha ? "head in HA" : "single head") << std::endl;
    const bool drained = DrainJobs(options, as_array, head, etcd.get(), nodes, report, part);
    nodes.cluster.Stop({"--force"});
    return drained;
  };
  for (bool as_array : {false, true}) {
    Part* three = &parts[as_array ? 3 : 0];  // single, HA, single
    const bool before_ok = drain(as_array, /*ha=*/false, &three[0]);
    const bool ha_ok = drain(as_array, /*ha=*/true, &three[1]);
    const bool after_ok = drain(as_array, /*ha=*/false, &three[2]);
    if (before_ok && ha_ok && after_ok) ReportHaPart(options, three[1], three[0], three[2], report);
    ok = ok && before_ok && ha_ok && after_ok;
  }
  return ok;
}

}  // namespace clusterd::bench
