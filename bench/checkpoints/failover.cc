#include "failover.h"

#include <time.h>

#include <regex>

#include <fmt/format.h>

#include "ckpt_jobs.h"
#include "daemon_logs.h"

namespace clusterd::bench {

using namespace std::chrono_literals;

namespace {

int64_t RealtimeNs() {
  timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

// Splits the trial by the daemons' log lines (false if one is missing).
bool FindParts(SimCluster& cluster, const std::string& job_id, const std::string& victim,
               const std::vector<testing::Machine*>& nodes, FailoverTimes* t) {
  std::vector<LogLine> head = ReadDaemonLogs(cluster.head, "head");
  std::string job = "job " + RegexQuote(job_id) + " ";
  auto dead = FirstLogged(head, std::regex("node " + RegexQuote(victim) + " .* -> DEAD"), t->kill_ns);
  auto ended = FirstLogged(head, std::regex(job + ".*RUNNING -> RESTARTING"), t->kill_ns);
  auto placed = FirstLogged(head, std::regex(job + ".*RESTARTING -> RUNNING"), t->kill_ns);
  std::optional<int64_t> restored;
  for (testing::Machine* node : nodes) {
    auto at = FirstLogged(ReadDaemonLogs(*node, "worker"), std::regex(job + "attempt 1: restored "), t->kill_ns);
    if (!at) return false;
    restored = std::max(restored.value_or(0), *at);
  }
  if (!dead || !ended || !placed || !restored) return false;
  t->dead_ns = *dead;
  t->ended_ns = *ended;
  t->placed_ns = *placed;
  t->restored_ns = *restored;
  return true;
}

}  // namespace

bool RunFailover(SimCluster& cluster, int mib, int index, bool power_loss, FailoverTimes* times, std::string* error) {
  std::string tag = fmt::format("failover-{}-{}{}", mib, index, power_loss ? "-power" : ""), job_id;
  JobShape shape{"failover", mib, 2, 1};
  if (!SubmitJob(cluster, shape, tag, &job_id, error)) return false;
  struct Clear {
    SimCluster& cluster;
    std::string job_id, tag;
    ~Clear() { ClearJob(cluster, job_id, tag); }
  } clear{cluster, job_id, tag};

  // Rank 0 saved and reported; the upload is done once the head lists it.
  std::optional<JobInfo> job;
  bool stored = testing::WaitFor(
      [&] {
        job = cluster.Job(job_id);
        return job && job->stored_checkpoints_size() > 0 && job->attempts_size() == 1 &&
               FindStart(cluster, tag, 0, 1).has_value();
      },
      300s, 250ms);
  if (!stored) {
    *error = tag + ": the checkpoint never reached the head's store (job " + job_id + " " +
             cluster.JobState(job_id) + ")";
    return false;
  }
  const uint64_t expect_bytes = static_cast<uint64_t>(job->stored_checkpoints(0).bytes());
  std::string victim_name = job->attempts(0).ranks(0).node_name();
  testing::Machine* victim = cluster.Worker(victim_name);
  if (!victim) {
    *error = tag + ": rank 0 runs on unknown node " + victim_name;
    return false;
  }

  times->kill_ns = RealtimeNs();
  if (power_loss) victim->CutLink();
  victim->KillAll();
  std::optional<RankStart> r0, r1;
  bool running = testing::WaitFor(
      [&] {
        if (!r0) r0 = FindStart(cluster, tag, 1, 0, victim);
        if (!r1) r1 = FindStart(cluster, tag, 1, 1, victim);
        return r0 && r1;
      },
      120s, 1ms);
  std::string restart_error;
  if (power_loss) victim->RestoreLink();
  bool restarted = cluster.StartWorker(*victim, &restart_error);
  if (!running) {
    *error = tag + ": attempt 1 never ran both ranks (job " + job_id + " " + cluster.JobState(job_id) + ")";
    return false;
  }
  times->running_ns = std::max(r0->ns, r1->ns);
  for (const RankStart* r : {&*r0, &*r1}) {
    if (r->found != "checkpoint_000001" || r->bytes != expect_bytes) {
      *error = fmt::format("{}: a rank of attempt 1 on {} found {} ({} bytes), not checkpoint_000001 ({} bytes)", tag,
                           r->machine->name(), r->found, r->bytes, expect_bytes);
      return false;
    }
  }
  times->bytes = r0->bytes;
  times->parts = FindParts(cluster, job_id, victim_name, {r0->machine, r1->machine}, times);
  if (!restarted) {
    *error = tag + ": " + restart_error;
    return false;
  }
  return true;
}

}  // namespace clusterd::bench
