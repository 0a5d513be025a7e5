// The chaos run on simulated machines (chaos_cluster.h: a single head, or
// with --ha two heads on three etcd members and a radosgw; workers w1..wN;
// a client):
// a stream of jobs (chaos_jobs.h) while faults are injected at random times
// from a seeded RNG, then the checks: every job final and in the state its
// history calls for, none missing, no process of any job left, and the
// journal replaying to the same state after a SIGKILL and after a clean stop.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chaos_jobs.h"
#include "machines.h"

namespace clusterd::bench {

struct ChaosOptions {
  int duration_s = 600;  // of injecting faults and submitting jobs
  uint64_t seed = 0;
  int workers = 3;
  int cpus_per_worker = 2;
  bool ha = false;  // two heads in HA (--ha); else one head
  std::string rank_program;  // chaos_rank
  std::string rpc_program;   // chaos_rpc
  std::string flood_program;  // chaos_flood
  std::string report_flood_program;  // chaos_report_flood
  std::string queue_burst_program;   // chaos_queue_burst
};

// What the run found; the table is made from it.
struct ChaosResult {
  int submitted = 0;
  std::map<std::string, int> submitted_by_kind;
  std::map<std::string, int> faults;  // by kind
  int refused_while_down = 0;         // submissions clusterctl could not make (head down, or in HA a
                                      // fault on the heads' side): not jobs
  std::vector<std::string> lost;      // submitted, not listed by the head at the end
  std::vector<std::string> wrong;     // final, but not in the state its history calls for
  std::vector<std::string> stuck;     // not final at the end
  std::vector<std::string> leaked;    // processes of jobs left at the end
  std::vector<std::string> replay_mismatches;
  std::vector<std::string> findings;  // anything else wrong: crashes, accepted nonsense, unclear errors
  int unexpected_head_deaths = 0, unexpected_agent_deaths = 0;
  int bad_files_refused = 0, rpc_calls = 0;
  int checkpoint_retried = 0, checkpoint_resumed = 0;
  int64_t max_state_bytes = 0, max_journal_bytes = 0;
  double seconds = 0;
  std::string setup_error;  // the run could not start or check: nothing else holds
  std::string skipped;      // why it cannot run here at all (--ha without etcd or Ceph)

  bool Passed() const {
    return setup_error.empty() && lost.empty() && wrong.empty() && stuck.empty() && leaked.empty() &&
           replay_mismatches.empty() && findings.empty();
  }
};

ChaosResult RunChaos(const ChaosOptions& options);
// The markdown table and the lists of what went wrong.
std::string FormatResult(const ChaosOptions& options, const ChaosResult& result);

}  // namespace clusterd::bench
