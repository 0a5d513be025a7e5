// The chaos run's jobs: the kinds it submits (each with the final state its
// history calls for), their job files, and the malformed job files it feeds
// clusterctl. Every job carries CHAOS_MARK=<mark> in its environment, so
// that its processes can be found on any machine through /proc.
#pragma once

#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "cluster.pb.h"

namespace clusterd::bench {

using Rng = std::mt19937_64;

enum class JobKind {
  kOk,          // sh: sleep, exit 0; max_failures 0
  kFail,        // sh: sleep, exit 3 on purpose
  kFlaky,       // sh: attempt 0 exits 1, later ones 0; max_failures 2
  kCheckpoint,  // chaos_rank: epochs of 1 s, a checkpoint each, resumes; max_failures 3
  kTimeout,     // sh: sleep 30 with timeout 1500ms
  kStop,        // sh: sleep 60, stopped by the run with clusterctl stop
  // Made by faults, not drawn by RandomKind:
  kReportFlood,  // chaos_report_flood: reports as fast as the agent lets it for 3 s
  kLogFlood,     // sh: prints ~40 MB as fast as it can under log_limit 1Mi
};
const char* KindName(JobKind kind);

struct ChaosJob {
  std::string id;
  JobKind kind = JobKind::kOk;
  int64_t submit_unix_ms = 0;
  int64_t stop_at_unix_ms = 0;     // kStop: when the run stops it
  bool stop_sent = false;
  std::vector<std::string> touches;  // the faults that could have changed its course
};

inline const std::string kWorkDir = "/tmp/chaos/work";  // client: the checkpointing job's working_dir

// A random kind (weighted) and its job file; *stop_after_ms for kStop.
JobKind RandomKind(Rng& rng);
std::string JobFile(JobKind kind, const std::string& mark, Rng& rng, int* stop_after_ms);

// Whether `info`, the job's final record, is what its kind and faults call
// for; if not, *why says what it is and what was expected.
bool FinalStateFits(const ChaosJob& job, const JobInfo& info, std::string* why);
inline bool IsFinalState(JobState s) { return s == SUCCEEDED || s == FAILED || s == STOPPED; }
// Attempts made, those summed up in older_attempts included.
int AttemptCount(const JobInfo& info);

// A malformed job file (what is wrong with it, its bytes), chosen at random.
struct BadJobFile {
  std::string what;
  std::string text;
};
BadJobFile RandomBadJobFile(Rng& rng);

}  // namespace clusterd::bench
