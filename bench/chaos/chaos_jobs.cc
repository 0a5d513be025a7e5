#include "chaos_jobs.h"

#include <fmt/format.h>

namespace clusterd::bench {

namespace {

int Uniform(Rng& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

// What every job file shares: the marker, a quick retry (the default 1 s
// doubling to 5 min would outlast a short run) and its shape.
std::string Common(const std::string& name, const std::string& mark, int workers, int max_failures) {
  return fmt::format(
      "name: {}\n"
      "num_workers: {}\n"
      "placement: SPREAD\n"
      "resources_per_worker: {{CPU: 1}}\n"
      "max_failures: {}\n"
      "restart_delay: {{initial: 500ms, max: 2s}}\n"
      "env: {{CHAOS_MARK: '{}'}}\n",
      name, workers, max_failures, mark);
}

}  // namespace

const char* KindName(JobKind kind) {
  switch (kind) {
    case JobKind::kOk: return "ok";
    case JobKind::kFail: return "fail";
    case JobKind::kFlaky: return "flaky";
    case JobKind::kCheckpoint: return "checkpoint";
    case JobKind::kTimeout: return "timeout";
    case JobKind::kStop: return "stop";
    case JobKind::kReportFlood: return "report_flood";
    case JobKind::kLogFlood: return "log_flood";
  }
  return "?";
}

JobKind RandomKind(Rng& rng) {
  // Mostly short jobs; a quarter checkpointing ones.
  static const std::vector<std::pair<JobKind, int>> kWeights = {
      {JobKind::kOk, 30}, {JobKind::kFail, 12}, {JobKind::kFlaky, 15},
      {JobKind::kCheckpoint, 25}, {JobKind::kTimeout, 8}, {JobKind::kStop, 10}};
  int total = 0;
  for (const auto& [kind, weight] : kWeights) total += weight;
  int pick = Uniform(rng, 0, total - 1);
  for (const auto& [kind, weight] : kWeights) {
    if (pick < weight) return kind;
    pick -= weight;
  }
  return JobKind::kOk;
}

std::string JobFile(JobKind kind, const std::string& mark, Rng& rng, int* stop_after_ms) {
  int workers = Uniform(rng, 1, 2);
  std::string sleep = fmt::format("{}.{}", Uniform(rng, 0, 3), Uniform(rng, 1, 9));
  std::string name = std::string("chaos-") + KindName(kind);
  switch (kind) {
    case JobKind::kOk:
      return Common(name, mark, workers, 0) + fmt::format("entrypoint: 'sleep {}; echo done'\n", sleep);
    case JobKind::kFail:
      return Common(name, mark, workers, 0) +
             fmt::format("entrypoint: 'sleep {}; echo failing on purpose >&2; exit 3'\n", sleep);
    case JobKind::kFlaky:
      return Common(name, mark, workers, 2) +
             fmt::format("entrypoint: 'sleep {}; if [ \"$CLUSTER_ATTEMPT\" -lt 1 ]; then exit 1; fi'\n", sleep);
    case JobKind::kCheckpoint:
      return Common(name, mark, workers, 3) +
             fmt::format("entrypoint: [./chaos_rank, '{}', '1000']\nworking_dir: {}\n", Uniform(rng, 3, 8), kWorkDir);
    case JobKind::kTimeout:
      return Common(name, mark, workers, 0) + "entrypoint: 'sleep 30'\ntimeout: 1500ms\n";
    case JobKind::kStop:
      *stop_after_ms = Uniform(rng, 1000, 5000);
      return Common(name, mark, workers, 0) + "entrypoint: 'sleep 60'\n";
    case JobKind::kReportFlood:
      return Common(name, mark, workers, 0) +
             fmt::format("entrypoint: [./chaos_report_flood, '3', '{}']\nworking_dir: {}\n", Uniform(rng, 1, 100),
                         kWorkDir);
    case JobKind::kLogFlood:
      // ~40 MB of base64 lines; the node keeps 1 MiB of it (head and tail).
      return Common(name, mark, workers, 0) +
             "entrypoint: 'head -c 30000000 /dev/urandom | base64'\nlog_limit: 1Mi\n";
  }
  return "";
}

int AttemptCount(const JobInfo& info) { return info.attempts_size() + info.older_attempts().count(); }

bool FinalStateFits(const ChaosJob& job, const JobInfo& info, std::string* why) {
  std::set<JobState> fits;
  bool clean = job.touches.empty();
  switch (job.kind) {
    case JobKind::kFail:
    case JobKind::kTimeout: fits = {FAILED}; break;
    case JobKind::kStop: fits = clean ? std::set<JobState>{STOPPED} : std::set<JobState>{STOPPED, FAILED}; break;
    default: fits = clean ? std::set<JobState>{SUCCEEDED} : std::set<JobState>{SUCCEEDED, FAILED}; break;
  }
  bool ok = fits.count(info.state()) > 0;
  // A failure must say why.
  if (ok && info.state() == FAILED && info.reason().empty()) ok = false;
  // Without faults, the flaky job fails once by design and succeeds on its second attempt.
  if (ok && clean && job.kind == JobKind::kFlaky && AttemptCount(info) != 2) ok = false;
  if (!ok) {
    std::string expected;
    for (JobState s : fits) expected += (expected.empty() ? "" : "|") + JobState_Name(s);
    std::string reason = info.reason().substr(0, 160);
    for (char& c : reason) c = c == '\n' ? ' ' : c;
    *why = fmt::format("{} ({}, {} attempts, {}): {} expected {}; reason: {}", job.id, KindName(job.kind),
                       AttemptCount(info), clean ? "no fault" : fmt::format("{} faults", job.touches.size()),
                       JobState_Name(info.state()), expected, reason);
    // Why each earlier attempt ended, for a job that took more than it should.
    for (const AttemptInfo& attempt : info.attempts()) {
      if (attempt.failure_reason().empty()) continue;
      std::string failure = attempt.failure_reason().substr(0, 120);
      for (char& c : failure) c = c == '\n' ? ' ' : c;
      *why += fmt::format("; attempt {} failed: {}", attempt.attempt(), failure);
    }
  }
  return ok;
}

BadJobFile RandomBadJobFile(Rng& rng) {
  static const std::vector<BadJobFile> kFiles = {
      {"invalid YAML", "entrypoint: [unterminated\n"},
      {"unknown key", "entrypoint: 'true'\nnum_worker: 2\n"},
      {"negative num_workers", "entrypoint: 'true'\nnum_workers: -1\n"},
      {"num_workers over the maximum", "entrypoint: 'true'\nnum_workers: 100000\n"},
      {"lower-case resource", "entrypoint: 'true'\nresources_per_worker: {cpu: 1}\n"},
      {"empty entrypoint", "entrypoint: []\n"},
      {"no entrypoint", "name: nothing\n"},
      {"invalid UTF-8", "entrypoint: '\xff\xfe\xfd'\n"},
      {"reserved variable", "entrypoint: 'true'\nenv: {CLUSTER_TOKEN: stolen}\n"},
      {"negative timeout", "entrypoint: 'true'\ntimeout: -5\n"},
      {"restart_delay factor 1000", "entrypoint: 'true'\nrestart_delay: {factor: 1000}\n"},
      {"max_failures 1e99", "entrypoint: 'true'\nmax_failures: 1e99\n"},
      {"duplicate key", "entrypoint: 'true'\nentrypoint: 'false'\n"},
      {"two documents", "entrypoint: 'true'\n---\nentrypoint: 'false'\n"},
      {"a list, not a map", "- entrypoint\n- 'true'\n"},
      {"config .inf", "entrypoint: 'true'\nconfig: {lr: .inf}\n"},
      {"missing working_dir", "entrypoint: 'true'\nworking_dir: /no/such/folder\n"},
      {"placement nonsense", "entrypoint: 'true'\nplacement: EVERYWHERE\n"},
      {"2 MiB file", "entrypoint: 'true'\n#" + std::string(2 << 20, 'x') + "\n"},
  };
  if (rng() % 5 == 0) {
    std::string bytes(std::uniform_int_distribution<size_t>(1, 4096)(rng), '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    return {"random bytes", bytes};
  }
  return kFiles[std::uniform_int_distribution<size_t>(0, kFiles.size() - 1)(rng)];
}

}  // namespace clusterd::bench
