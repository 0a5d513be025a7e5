// The run itself: one thread, one loop. Every ~100 ms it submits the next
// job when due, injects the next fault when due, undoes faults whose time is
// up (restarting what was killed, as a user would), stops the jobs meant to
// be stopped, checks that no daemon died unasked, and every 3 s lists the
// jobs (where their ranks run, the head's state size). Faults come in
// shuffled rounds of every kind, so a short run still sees each kind. A
// fault on a worker marks the jobs it could have touched: those with ranks
// there then, those not placed yet, and, at the end, any whose attempt had
// a rank there while the fault lasted; only untouched jobs are held to
// their kind's plain outcome. Killing the head touches nothing: the head
// must take its jobs back as they were.
#include "chaos_run.h"

#include <signal.h>

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <thread>

#include <fmt/format.h>

#include "daemon_logs.h"
#include "proc_marks.h"

namespace clusterd::bench {

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

int64_t UnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

const std::vector<std::string> kFaultKinds = {"rank_kill", "agent_kill", "agent_stop", "link_cut",
                                              "head_kill", "bad_rpc",    "bad_job_file"};

// A fault on a worker, from its start to when the worker was back (ALIVE).
struct NodeWindow {
  std::string node, kind;
  int64_t start_ms = 0, end_ms = INT64_MAX;
};

struct OpenFault {
  std::string kind;
  testing::Machine* machine = nullptr;  // null: the head
  int64_t restore_at_ms = 0;
  size_t window = 0;
};

class Chaos {
 public:
  Chaos(const ChaosOptions& options, SimCluster& cluster, ChaosResult* result)
      : o_(options), c_(cluster), r_(result), rng_(options.seed), mark_(fmt::format("CHAOS_MARK=chaos-{}", options.seed)) {}
  ~Chaos() {
    // Never leave a machine stopped or unplugged behind, whatever happened.
    for (const OpenFault& f : open_) {
      if (f.kind == "agent_stop" && f.machine) {
        if (auto pid = ClusterdPid(*f.machine)) kill(*pid, SIGCONT);
      }
      if (f.kind == "link_cut" && f.machine) f.machine->RestoreLink();
    }
  }

  bool Setup();
  void Loop();
  void Drain();
  void Check();

 private:
  void Note(const std::string& line) {
    std::cerr << fmt::format("[{:6.1f}s] {}", (UnixMs() - start_ms_) / 1000.0, line) << std::endl;
  }
  void Finding(const std::string& line) {
    r_->findings.push_back(line);
    Note("FINDING: " + line);
  }
  int Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  std::optional<ListJobsReply> ListJobs();
  void Poll();
  void SubmitOne();
  void SendStops(bool all);
  void Health();
  bool InjectFault(const std::string& kind);
  void Restore(const OpenFault& fault);
  bool RestartHead(const std::string& why);
  bool RestartAgent(testing::Machine& worker);
  void TouchForNode(const std::string& node, const std::string& what);
  testing::Machine* FreeWorker();
  bool Busy(const testing::Machine* m) const {
    for (const OpenFault& f : open_) {
      if (f.machine == m) return true;
    }
    return false;
  }
  std::map<std::string, std::string> Snapshot(const ListJobsReply& list);
  void CompareReplay(const std::string& how);

  const ChaosOptions& o_;
  SimCluster& c_;
  ChaosResult* r_;
  Rng rng_;
  const std::string mark_;
  int64_t start_ms_ = UnixMs();
  std::vector<ChaosJob> jobs_;
  std::map<std::string, JobInfo> seen_;  // the latest listing, by id
  std::vector<NodeWindow> windows_;
  std::vector<OpenFault> open_;
  std::vector<std::string> round_;  // fault kinds still due in this round
  bool head_down_ = false;
  std::optional<pid_t> head_pid_;
  std::map<std::string, pid_t> agent_pids_;
  int file_serial_ = 0;
  std::set<std::string> list_errors_;
};

bool Chaos::Setup() {
  std::error_code ec;
  fs::create_directories(c_.client.HostPath(kWorkDir), ec);
  fs::create_directories(c_.client.HostPath("/tmp/chaos/jobs"), ec);
  fs::copy_file(o_.rank_program, c_.client.HostPath(kWorkDir + "/chaos_rank"), fs::copy_options::overwrite_existing,
                ec);
  if (ec) {
    r_->setup_error = "cannot copy " + o_.rank_program + " to the client: " + ec.message();
    return false;
  }
  fs::permissions(c_.client.HostPath(kWorkDir + "/chaos_rank"), fs::perms(0755), ec);
  std::string error;
  if (!c_.Start(&error, {"--num-cpus", std::to_string(o_.cpus_per_worker), "--num-gpus", "0"})) {
    r_->setup_error = error;
    return false;
  }
  head_pid_ = ClusterdPid(c_.head);
  for (testing::Machine* w : c_.workers) {
    if (auto pid = ClusterdPid(*w)) agent_pids_[w->name()] = *pid;
  }
  if (!head_pid_ || agent_pids_.size() != c_.workers.size()) {
    r_->setup_error = "cannot find the daemons' pids";
    return false;
  }
  start_ms_ = UnixMs();
  return true;
}

std::optional<ListJobsReply> Chaos::ListJobs() {
  testing::RunResult listed = c_.Ctl({"jobs", "--json"}, 30s);
  ListJobsReply reply;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  if (listed.exit_code != 0 || !google::protobuf::util::JsonStringToMessage(listed.out, &reply, options).ok()) {
    std::string error = listed.err.substr(0, 200);
    Note("clusterctl jobs failed: " + error);
    // With the head up, a listing that fails is a finding (once per error).
    if (!head_down_ && list_errors_.insert(error).second) Finding("clusterctl jobs failed: " + error);
    return std::nullopt;
  }
  return reply;
}

void Chaos::Poll() {
  if (auto list = ListJobs()) {
    for (const JobInfo& job : list->jobs()) seen_[job.job_id()] = job;
  }
  int64_t journal = 0;
  int64_t bytes = FolderBytes(c_.head.HostPath("/tmp/state/clusterd"), &journal);
  r_->max_state_bytes = std::max(r_->max_state_bytes, bytes);
  r_->max_journal_bytes = std::max(r_->max_journal_bytes, journal);
}

void Chaos::SubmitOne() {
  JobKind kind = RandomKind(rng_);
  int stop_after_ms = 0;
  std::string file = fmt::format("/tmp/chaos/jobs/{}.yaml", ++file_serial_);
  std::ofstream(c_.client.HostPath(file)) << JobFile(kind, mark_.substr(mark_.find('=') + 1), rng_, &stop_after_ms);
  testing::RunResult submit = c_.Ctl({"submit", file}, 60s);
  static const std::regex submitted("Submitted job (\\S+)");
  std::smatch match;
  if (submit.exit_code != 0 || !std::regex_search(submit.out, match, submitted)) {
    Finding(fmt::format("submit of a {} job failed with the head up (exit {}): {}", KindName(kind), submit.exit_code,
                        submit.err.substr(0, 200)));
    return;
  }
  ChaosJob job;
  job.id = match[1];
  job.kind = kind;
  job.submit_unix_ms = UnixMs();
  if (kind == JobKind::kStop) job.stop_at_unix_ms = job.submit_unix_ms + stop_after_ms;
  // Submitted while a worker is out: it may be placed there.
  for (const OpenFault& f : open_) {
    if (f.machine) job.touches.push_back(f.kind + " on " + f.machine->name() + " (open at submit)");
  }
  ++r_->submitted;
  ++r_->submitted_by_kind[KindName(kind)];
  jobs_.push_back(std::move(job));
}

void Chaos::SendStops(bool all) {
  int64_t now = UnixMs();
  for (ChaosJob& job : jobs_) {
    if (job.kind != JobKind::kStop || job.stop_sent || (!all && job.stop_at_unix_ms > now)) continue;
    testing::RunResult stopped = c_.Ctl({"stop", job.id}, 30s);
    if (stopped.exit_code == 0) {
      job.stop_sent = true;
    } else {
      Note("clusterctl stop " + job.id + " failed: " + stopped.err.substr(0, 200));
    }
  }
}

// A daemon that died without being killed is a crash: noted, and restarted
// as a user would, so the run goes on.
void Chaos::Health() {
  if (!head_down_ && (!head_pid_ || !testing::ProcessAlive(*head_pid_))) {
    ++r_->unexpected_head_deaths;
    Finding("the head died without being killed");
    RestartHead("after its crash");
  }
  for (testing::Machine* w : c_.workers) {
    if (Busy(w)) continue;
    auto it = agent_pids_.find(w->name());
    if (it != agent_pids_.end() && testing::ProcessAlive(it->second)) continue;
    ++r_->unexpected_agent_deaths;
    Finding("the agent on " + w->name() + " died without being killed");
    windows_.push_back({w->name(), "agent crash", UnixMs() - 1000});
    TouchForNode(w->name(), "agent crash");
    RestartAgent(*w);
    windows_.back().end_ms = UnixMs();
  }
}

bool Chaos::RestartHead(const std::string& why) {
  for (int tries = 0; tries < 3; ++tries) {
    int64_t began = UnixMs();
    testing::RunResult started =
        c_.head.Run({"clusterd", "start", "--head", "--num-cpus", "0", "--num-gpus", "0"}, {}, 60s);
    Note(fmt::format("clusterd start --head took {} ms", UnixMs() - began));
    if (started.exit_code == 0 && started.out.find("CLUSTER_TOKEN=" + c_.token) != std::string::npos) {
      head_pid_ = ClusterdPid(c_.head);
      head_down_ = false;
      std::vector<std::string> names;
      for (testing::Machine* w : c_.workers) names.push_back(w->name());
      int64_t restarted = UnixMs();
      if (!c_.WaitAlive(names, 30s)) Finding("after the head restarted " + why + ", not every worker came back ALIVE in 30 s");
      if (getenv("CHAOS_VERBOSE") && UnixMs() - restarted > 4000) {
        for (const LogLine& line : ReadDaemonLogs(*c_.workers[0], "worker")) {
          if (line.ns / 1000000 > began - 8000) Note(c_.workers[0]->name() + " log: " + line.text);
        }
        for (const LogLine& line : ReadDaemonLogs(c_.head, "head")) {
          if (line.ns / 1000000 > began - 1000) Note("head log: " + line.text);
        }
      }
      return true;
    }
    Finding(fmt::format("the head did not restart {} (exit {}): {}", why, started.exit_code,
                        (started.err + started.out).substr(0, 300)));
    std::this_thread::sleep_for(2s);
  }
  return false;
}

bool Chaos::RestartAgent(testing::Machine& worker) {
  std::string error;
  bool started = c_.StartWorker(worker, &error);
  if (!started) Finding("restarting the agent on " + worker.name() + ": " + error);
  if (auto pid = ClusterdPid(worker)) agent_pids_[worker.name()] = *pid;
  return started;
}

void Chaos::TouchForNode(const std::string& node, const std::string& what) {
  std::string touch = fmt::format("{} on {} at {:.1f}s", what, node, (UnixMs() - start_ms_) / 1000.0);
  for (ChaosJob& job : jobs_) {
    auto it = seen_.find(job.id);
    if (it == seen_.end()) {
      job.touches.push_back(touch);
      continue;
    }
    const JobInfo& info = it->second;
    if (IsFinalState(info.state())) continue;
    bool there = info.state() != RUNNING || info.attempts_size() == 0;
    if (info.attempts_size() > 0) {
      for (const RankInfo& rank : info.attempts().rbegin()->ranks()) there = there || rank.node_name() == node;
    }
    if (there) job.touches.push_back(touch);
  }
}

testing::Machine* Chaos::FreeWorker() {
  std::vector<testing::Machine*> free;
  for (testing::Machine* w : c_.workers) {
    if (!Busy(w)) free.push_back(w);
  }
  return free.empty() ? nullptr : free[Uniform(0, static_cast<int>(free.size()) - 1)];
}

// False when the fault cannot be made now (nothing to hit, or the machine
// it needs is already out); the loop tries again shortly.
bool Chaos::InjectFault(const std::string& kind) {
  int64_t now = UnixMs();
  if (kind == "rank_kill") {
    Poll();  // short jobs come and go between the loop's listings
    std::vector<std::pair<std::string, pid_t>> ranks;
    for (const auto& [id, info] : seen_) {
      if (info.state() != RUNNING || info.attempts_size() == 0) continue;
      for (const RankInfo& rank : info.attempts().rbegin()->ranks()) {
        if (!rank.exited() && rank.pid() > 1 && HasVariable(rank.pid(), mark_)) ranks.emplace_back(id, rank.pid());
      }
    }
    if (ranks.empty()) return false;
    auto [id, pid] = ranks[Uniform(0, static_cast<int>(ranks.size()) - 1)];
    kill(pid, SIGKILL);
    for (ChaosJob& job : jobs_) {
      if (job.id == id) job.touches.push_back(fmt::format("rank_kill of pid {}", pid));
    }
    Note(fmt::format("rank_kill: SIGKILL of pid {} of {}", pid, id));
    return true;
  }
  if (kind == "agent_kill" || kind == "agent_stop" || kind == "link_cut") {
    testing::Machine* w = FreeWorker();
    if (!w) return false;
    auto pid = ClusterdPid(*w);
    if (!pid) return false;
    TouchForNode(w->name(), kind);
    windows_.push_back({w->name(), kind, now});
    int hold_ms = kind == "agent_kill" ? Uniform(300, 3000) : Uniform(500, 4000);
    if (kind == "agent_kill") kill(*pid, SIGKILL);
    if (kind == "agent_stop") kill(*pid, SIGSTOP);
    if (kind == "link_cut") w->CutLink();
    open_.push_back({kind, w, now + hold_ms, windows_.size() - 1});
    Note(fmt::format("{} on {} for {} ms", kind, w->name(), hold_ms));
    return true;
  }
  if (kind == "head_kill") {
    if (!open_.empty() || !head_pid_) return false;
    kill(*head_pid_, SIGKILL);
    head_down_ = true;
    int hold_ms = Uniform(300, 3000);
    open_.push_back({kind, nullptr, now + hold_ms, 0});
    Note(fmt::format("head_kill: SIGKILL of the head, restarted in {} ms", hold_ms));
    return true;
  }
  if (kind == "bad_rpc") {
    int calls = Uniform(20, 60);
    std::vector<std::string> argv = {o_.rpc_program, c_.address, c_.token, std::to_string(rng_()),
                                     std::to_string(calls)};
    // A few real jobs, for GetLogs with absurd offsets and GetJob/GetMetrics with bad pages.
    for (size_t i = jobs_.size() >= 5 ? jobs_.size() - 5 : 0; i < jobs_.size(); ++i) argv.push_back(jobs_[i].id);
    testing::RunResult sent = c_.client.Run(argv, {}, 120s);
    r_->rpc_calls += calls;
    std::string out = sent.out;
    Note("bad_rpc: " + out.substr(0, 400));
    if (sent.exit_code != 0) Finding(fmt::format("chaos_rpc exited {}: {}", sent.exit_code, sent.err.substr(0, 200)));
    for (size_t at = out.find("ACCEPTED"); at != std::string::npos; at = out.find("ACCEPTED", at + 1)) {
      Finding("the head accepted a nonsense SubmitJob: " + out.substr(at, out.find('\n', at) - at));
    }
    return true;
  }
  if (kind == "bad_job_file") {
    BadJobFile bad = RandomBadJobFile(rng_);
    std::string file = fmt::format("/tmp/chaos/jobs/bad-{}.yaml", ++file_serial_);
    std::ofstream(c_.client.HostPath(file), std::ios::binary) << bad.text;
    testing::RunResult submit = c_.Ctl({"submit", file}, 60s);
    std::string err = submit.err;
    while (!err.empty() && err.back() == '\n') err.pop_back();
    Note(fmt::format("bad_job_file ({}): exit {}: {}", bad.what, submit.exit_code, err.substr(0, 200)));
    if (submit.exit_code == 0 || submit.out.find("Submitted job") != std::string::npos) {
      Finding("clusterctl submitted a malformed job file (" + bad.what + "): " + submit.out.substr(0, 200));
    } else if (submit.exit_code >= 128 || err.empty() || err.find('\n') != std::string::npos) {
      Finding(fmt::format("a malformed job file ({}) got no clear one-line error (exit {}): {}", bad.what,
                          submit.exit_code, err.substr(0, 300)));
    } else {
      ++r_->bad_files_refused;
    }
    return true;
  }
  return false;
}

void Chaos::Restore(const OpenFault& fault) {
  int64_t began = UnixMs();
  if (fault.kind == "head_kill") {
    RestartHead("after head_kill");
    Note(fmt::format("head restarted, workers ALIVE after {} ms", UnixMs() - began));
    return;
  }
  testing::Machine& w = *fault.machine;
  if (fault.kind == "agent_kill") {
    RestartAgent(w);
  } else {
    if (fault.kind == "agent_stop") kill(agent_pids_[w.name()], SIGCONT);
    if (fault.kind == "link_cut") w.RestoreLink();
    if (!c_.WaitAlive({w.name()}, 30s)) Finding(fault.kind + " on " + w.name() + ": not ALIVE again 30 s after it ended");
    // A node the head declared DEAD may have been told to go, or gone.
    if (!testing::ProcessAlive(agent_pids_[w.name()])) {
      Finding("the agent on " + w.name() + " exited after " + fault.kind);
      RestartAgent(w);
    }
  }
  windows_[fault.window].end_ms = UnixMs();
  Note(fmt::format("{} on {} undone, ALIVE after {} ms", fault.kind, w.name(), UnixMs() - began));
}

void Chaos::Loop() {
  const int64_t duration_ms = int64_t{o_.duration_s} * 1000;
  const int64_t submit_until = start_ms_ + duration_ms * 85 / 100;  // the last jobs end before the faults do
  const int64_t fault_until = start_ms_ + duration_ms * 95 / 100;
  const double fault_gap_ms = std::clamp(o_.duration_s / 75.0, 3.0, 8.0) * 1000;
  std::exponential_distribution<double> submit_gap(1 / 1500.0), fault_gap(1 / fault_gap_ms);
  int64_t next_submit = start_ms_ + 500, next_fault = start_ms_ + 3000, next_poll = start_ms_, next_health = start_ms_;
  int deferrals = 0;
  while (UnixMs() < start_ms_ + duration_ms) {
    int64_t now = UnixMs();
    for (size_t i = 0; i < open_.size();) {
      if (open_[i].restore_at_ms > now) {
        ++i;
        continue;
      }
      OpenFault fault = open_[i];
      open_.erase(open_.begin() + static_cast<long>(i));
      Restore(fault);
    }
    if (head_down_) {
      std::this_thread::sleep_for(50ms);
      continue;
    }
    if (now >= next_submit && now < submit_until) {
      SubmitOne();
      next_submit = now + std::max<int64_t>(300, static_cast<int64_t>(submit_gap(rng_)));
    }
    if (now >= next_fault && now < fault_until) {
      if (round_.empty()) {
        round_ = kFaultKinds;
        std::shuffle(round_.begin(), round_.end(), rng_);
      }
      if (InjectFault(round_.back())) {
        ++r_->faults[round_.back()];
        round_.pop_back();
        deferrals = 0;
        next_fault = UnixMs() + std::max<int64_t>(500, static_cast<int64_t>(fault_gap(rng_)));
      } else if (++deferrals > 20) {
        round_.pop_back();  // nothing to hit for 10 s: on to the next kind
        deferrals = 0;
      } else {
        next_fault = now + 500;
      }
    }
    if (now >= next_poll && !head_down_) {
      Poll();
      SendStops(false);
      next_poll = UnixMs() + 3000;
    }
    if (now >= next_health && !head_down_) {
      Health();
      next_health = UnixMs() + 1000;
    }
    std::this_thread::sleep_for(100ms);
  }
}

void Chaos::Drain() {
  Note("draining: faults end, every job must reach a final state");
  for (const OpenFault& fault : std::vector<OpenFault>(open_)) Restore(fault);
  open_.clear();
  Health();
  SendStops(true);
  std::set<std::string> ours;
  for (const ChaosJob& job : jobs_) ours.insert(job.id);
  testing::WaitFor(
      [&] {
        Poll();
        if (!list_errors_.empty()) {
          for (const ChaosJob& job : jobs_) {
            if (auto info = c_.Job(job.id)) seen_[job.id] = *info;
          }
        }
        SendStops(true);
        for (const std::string& id : ours) {
          auto it = seen_.find(id);
          if (it == seen_.end() || !IsFinalState(it->second.state())) return false;
        }
        return true;
      },
      120s, 2s);
}

std::map<std::string, std::string> Chaos::Snapshot(const ListJobsReply& list) {
  std::map<std::string, std::string> out;
  for (const JobInfo& job : list.jobs()) {
    out[job.job_id()] = fmt::format("{} attempts={} checkpoints={} reason={}", JobState_Name(job.state()),
                                    AttemptCount(job), job.stored_checkpoints_size(), job.reason().substr(0, 120));
  }
  return out;
}

// Stops the head (SIGKILL, or clusterd stop), starts it on the same state
// folder, and compares every job with what it said before.
void Chaos::CompareReplay(const std::string& how) {
  std::optional<ListJobsReply> before = ListJobs();
  if (!before) {
    r_->replay_mismatches.push_back(how + ": could not list the jobs before");
    return;
  }
  if (how == "SIGKILL") {
    if (head_pid_) kill(*head_pid_, SIGKILL);
    testing::WaitFor([&] { return !head_pid_ || !testing::ProcessAlive(*head_pid_); }, 10s, 20ms);
  } else {
    testing::RunResult stopped = c_.head.Run({"clusterd", "stop"}, {}, 60s);
    if (stopped.exit_code != 0) r_->replay_mismatches.push_back("clusterd stop failed: " + stopped.err.substr(0, 200));
  }
  head_down_ = true;
  if (!RestartHead("for the replay check (" + how + ")")) {
    r_->replay_mismatches.push_back(how + ": the head did not restart");
    return;
  }
  std::optional<ListJobsReply> after = ListJobs();
  if (!after) {
    r_->replay_mismatches.push_back(how + ": could not list the jobs after");
    return;
  }
  std::map<std::string, std::string> was = Snapshot(*before), is = Snapshot(*after);
  for (const auto& [id, line] : was) {
    auto it = is.find(id);
    if (it == is.end()) {
      r_->replay_mismatches.push_back(fmt::format("{}: {} was {}, gone after the restart", how, id, line));
    } else if (it->second != line) {
      r_->replay_mismatches.push_back(fmt::format("{}: {} was {}, is {}", how, id, line, it->second));
    }
  }
  for (const auto& [id, line] : is) {
    if (!was.count(id)) r_->replay_mismatches.push_back(fmt::format("{}: {} appeared: {}", how, id, line));
  }
  Note(fmt::format("replay after {}: {} jobs compared", how, was.size()));
}

void Chaos::Check() {
  std::optional<ListJobsReply> list = ListJobs();
  std::map<std::string, JobInfo> final_jobs;
  if (list) {
    for (const JobInfo& job : list->jobs()) final_jobs[job.job_id()] = job;
  } else {
    // The listing itself is broken (a finding already): ask for each job.
    for (const ChaosJob& job : jobs_) {
      if (auto info = c_.Job(job.id)) final_jobs[job.id] = *info;
    }
  }
  std::set<std::string> ours;
  for (ChaosJob& job : jobs_) {
    ours.insert(job.id);
    auto it = final_jobs.find(job.id);
    if (it == final_jobs.end()) {
      r_->lost.push_back(job.id + " (" + KindName(job.kind) + ")");
      continue;
    }
    const JobInfo& info = it->second;
    // Any attempt with a rank on a worker while a fault held it was touched too.
    for (const NodeWindow& w : windows_) {
      for (const AttemptInfo& attempt : info.attempts()) {
        int64_t end = attempt.end_unix_ms() ? attempt.end_unix_ms() : UnixMs();
        if (attempt.start_unix_ms() > w.end_ms + 2000 || end < w.start_ms - 2000) continue;
        for (const RankInfo& rank : attempt.ranks()) {
          if (rank.node_name() == w.node) {
            job.touches.push_back(w.kind + " on " + w.node + " during attempt " + std::to_string(attempt.attempt()));
            break;
          }
        }
      }
    }
    if (!IsFinalState(info.state())) {
      r_->stuck.push_back(fmt::format("{} ({}) still {}: {}", job.id, KindName(job.kind), JobState_Name(info.state()),
                                      info.reason().substr(0, 160)));
      continue;
    }
    std::string why;
    if (!FinalStateFits(job, info, &why)) r_->wrong.push_back(why);
    if (job.kind == JobKind::kCheckpoint && info.state() == SUCCEEDED && AttemptCount(info) > 1) {
      ++r_->checkpoint_retried;
      testing::RunResult logs =
          c_.Ctl({"logs", job.id, "--rank", "0", "--attempt", std::to_string(AttemptCount(info) - 1)}, 30s);
      static const std::regex resumed("resumes at epoch (\\d+)");
      std::smatch match;
      if (std::regex_search(logs.out, match, resumed) && std::stoi(match[1]) > 1) ++r_->checkpoint_resumed;
    }
  }
  for (const auto& [id, info] : final_jobs) {
    if (!ours.count(id)) Finding(fmt::format("a job the run did not submit is listed: {} {}", id, info.spec().name()));
  }
  // Processes of jobs: sh's children outlive a SIGKILLed sh for their sleep, so give them time.
  testing::WaitFor([&] { return PidsWithVariable(mark_).empty(); }, 15s, 500ms);
  for (pid_t pid : PidsWithVariable(mark_)) {
    std::string line = DescribePid(pid);
    for (testing::Machine* w : c_.workers) {
      std::vector<pid_t> pids = w->Pids();
      if (std::find(pids.begin(), pids.end(), pid) != pids.end()) line += " on " + w->name();
    }
    for (const ChaosJob& job : jobs_) {
      if (line.find(" of " + job.id + " ") == std::string::npos) continue;
      line += fmt::format(" ({} job; faults: ", KindName(job.kind));
      for (size_t i = 0; i < job.touches.size(); ++i) line += (i ? "; " : "") + job.touches[i];
      line += ")";
    }
    r_->leaked.push_back(line);
  }
  CompareReplay("SIGKILL");
  CompareReplay("clusterd stop");
  Poll();
}

}  // namespace

ChaosResult RunChaos(const ChaosOptions& options) {
  ChaosResult result;
  auto start = std::chrono::steady_clock::now();
  std::vector<std::string> names;
  for (int i = 1; i <= options.workers; ++i) names.push_back("w" + std::to_string(i));
  try {
    SimCluster cluster(names);
    Chaos chaos(options, cluster, &result);
    if (chaos.Setup()) {
      chaos.Loop();
      chaos.Drain();
      chaos.Check();
    }
  } catch (const std::exception& e) {
    result.setup_error = std::string("the simulated machines failed: ") + e.what();
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace clusterd::bench
