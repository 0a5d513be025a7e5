#include "preemption_trial.h"

#include <time.h>

#include <algorithm>
#include <fstream>
#include <regex>

#include <fmt/format.h>

#include "ckpt_jobs.h"
#include "daemon_logs.h"
#include "rank_checkpoints.h"

namespace clusterd::bench {

namespace {

using namespace std::chrono_literals;

int64_t NowNs() {
  timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

// A 2-rank STRICT_SPREAD job of ckpt_rank `mode`, max_failures 0, from the client.
bool Submit(SimCluster& cluster, const std::string& tag, const std::string& mode, int priority,
            const std::vector<std::string>& sets, std::string* job_id, std::string* error) {
  JobShape shape;
  shape.mode = mode;
  shape.mib = 1;
  shape.workers = 2;
  shape.priority = priority;
  shape.sets = sets;
  return SubmitJob(cluster, shape, tag, job_id, error);
}

// What the victim's rank 0 wrote after its last step of `attempt` (-1: none yet).
int64_t Progress(SimCluster& cluster, const std::string& tag, int attempt) {
  for (testing::Machine* w : cluster.workers) {
    std::ifstream in(w->HostPath(fmt::format("{}/{}/progress-a{}", kOutRoot, tag, attempt)));
    int64_t steps = -1;
    if (in >> steps) return steps;
  }
  return -1;
}

// The steps of the victim's preemption after `submitted_ns`, from the daemons' logs.
void SplitFromLogs(SimCluster& cluster, const std::string& victim_id, const std::string& urgent_id,
                   int64_t submitted_ns, PreemptionTrial* trial) {
  auto since = [&](std::optional<int64_t> at) { return at ? static_cast<double>(*at - submitted_ns) / 1e6 : -1.0; };
  for (testing::Machine* w : cluster.workers) {
    const auto down = FirstLogged(ReadDaemonLogs(*w, "worker"),
                                  std::regex("job " + RegexQuote(victim_id) + " attempt 0 rank [0-9]+ .*(exited|killed)"),
                                  submitted_ns);
    trial->victim_down_ms = std::max(trial->victim_down_ms, since(down));
  }
  const std::vector<LogLine> head = ReadDaemonLogs(cluster.head, "head");
  trial->noticed_ms =
      since(FirstLogged(head, std::regex("job " + RegexQuote(victim_id) + ": preempted by "), submitted_ns));
  trial->deadline_ms =
      since(FirstLogged(head, std::regex("job " + RegexQuote(victim_id) + ": ending attempt 0"), submitted_ns));
  trial->victim_ended_ms =
      since(FirstLogged(head, std::regex("job " + RegexQuote(victim_id) + " .*RUNNING -> RESTARTING"), submitted_ns));
  trial->placed_ms =
      since(FirstLogged(head, std::regex("job " + RegexQuote(urgent_id) + " .*PENDING -> RUNNING"), submitted_ns));
}

bool WaitState(SimCluster& cluster, const std::string& job_id, const std::string& state, std::chrono::seconds limit) {
  return testing::WaitFor([&] { return cluster.JobState(job_id) == state; }, limit, 50ms);
}

}  // namespace

bool RunPreemptionTrial(SimCluster& cluster, const PreemptionSetup& setup, int index, PreemptionTrial* trial,
                        std::string* error) {
  const std::string victim_tag = fmt::format("victim-{}-{}", setup.victim.empty() ? "none" : setup.victim, index);
  const std::string urgent_tag = fmt::format("urgent-{}-{}", setup.victim.empty() ? "idle" : setup.victim, index);
  std::string victim_id, urgent_id;
  if (!setup.victim.empty()) {
    std::vector<std::string> sets = {"env.PREEMPT=" + setup.victim, fmt::format("env.EPOCH_STEPS={}", setup.epoch_steps),
                                     fmt::format("env.TOTAL_STEPS={}", setup.epoch_steps * 20),
                                     fmt::format("preemption_grace_s={}", setup.grace_s)};
    if (!Submit(cluster, victim_tag, "victim", 0, sets, &victim_id, error)) return false;
    // Preempted once it has stored its first checkpoint and is half into its second epoch.
    const int64_t half = setup.epoch_steps + setup.epoch_steps / 2;
    if (!testing::WaitFor([&] { return Progress(cluster, victim_tag, 0) >= half; }, 120s, 20ms)) {
      *error = victim_tag + " did not reach step " + std::to_string(half) + " (state " +
               cluster.JobState(victim_id) + ")";
      return false;
    }
  }
  const int64_t submitted_ns = NowNs();
  if (!Submit(cluster, urgent_tag, "start", 10, {}, &urgent_id, error)) return false;
  int64_t running_ns = 0;
  if (!testing::WaitFor(
          [&] {
            auto r0 = FindStart(cluster, urgent_tag, 0, 0), r1 = FindStart(cluster, urgent_tag, 0, 1);
            if (!r0 || !r1) return false;
            running_ns = std::max(r0->ns, r1->ns);
            return true;
          },
          120s, 10ms)) {
    *error = urgent_tag + "'s ranks did not start (state " + cluster.JobState(urgent_id) + ")";
    return false;
  }
  trial->submit_to_running_ms = static_cast<double>(running_ns - submitted_ns) / 1e6;
  if (!setup.victim.empty()) SplitFromLogs(cluster, victim_id, urgent_id, submitted_ns, trial);
  if (!WaitState(cluster, urgent_id, "SUCCEEDED", 60s)) {
    *error = urgent_tag + " did not succeed (" + cluster.JobState(urgent_id) + ")";
    return false;
  }
  if (!setup.victim.empty()) {
    const int64_t stopped_at = Progress(cluster, victim_tag, 0);
    if (!WaitState(cluster, victim_id, "SUCCEEDED", 180s)) {
      *error = victim_tag + " did not succeed after its preemption (" + cluster.JobState(victim_id) + ")";
      return false;
    }
    std::optional<RankStart> resumed = FindStart(cluster, victim_tag, 1, 0);
    if (!resumed) {
      *error = victim_tag + " has no second attempt: it was not preempted";
      return false;
    }
    const int64_t resumed_at = resumed->found == "-" ? 0 : EpochOf(resumed->found);
    trial->steps_lost = stopped_at - resumed_at;
    ClearJob(cluster, victim_id, victim_tag);
  }
  ClearJob(cluster, urgent_id, urgent_tag);
  return true;
}

}  // namespace clusterd::bench
