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
// must take its jobs back as they were; so do the faults on the heads' side
// in HA (chaos_control_plane.cc).
#include "chaos_run.h"

#include "chaos.h"

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

const std::vector<std::string> kFaultKinds = {"rank_kill",  "agent_kill", "agent_stop",   "link_cut",
                                              "head_kill",  "bad_rpc",    "bad_job_file", "conn_flood",
                                              "report_flood", "log_flood", "queue_burst"};

// With heads in HA, also the heads' side (chaos_control_plane.cc).
const std::vector<std::string> kHaFaultKinds = {"head_machine_kill", "etcd_kill", "head_link_cut", "etcd_link_cut"};

}  // namespace

bool Chaos::Setup() {
  std::error_code ec;
  fs::create_directories(c_.client().HostPath(kWorkDir), ec);
  fs::create_directories(c_.client().HostPath("/tmp/chaos/jobs"), ec);
  fs::copy_file(o_.rank_program, c_.client().HostPath(kWorkDir + "/chaos_rank"), fs::copy_options::overwrite_existing,
                ec);
  if (ec) {
    r_->setup_error = "cannot copy " + o_.rank_program + " to the client: " + ec.message();
    return false;
  }
  fs::permissions(c_.client().HostPath(kWorkDir + "/chaos_rank"), fs::perms(0755), ec);
  fs::copy_file(o_.report_flood_program, c_.client().HostPath(kWorkDir + "/chaos_report_flood"),
                fs::copy_options::overwrite_existing, ec);
  if (ec) {
    r_->setup_error = "cannot copy " + o_.report_flood_program + " to the client: " + ec.message();
    return false;
  }
  fs::permissions(c_.client().HostPath(kWorkDir + "/chaos_report_flood"), fs::perms(0755), ec);
  std::string error;
  if (!c_.Start(&error)) {
    r_->setup_error = error;
    return false;
  }
  head_pids_ = c_.HeadPids();
  for (testing::Machine* w : c_.workers()) {
    if (auto pid = ClusterdPid(*w)) agent_pids_[w->name()] = *pid;
  }
  if (head_pids_.size() != c_.HeadMachines().size() || agent_pids_.size() != c_.workers().size()) {
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
    if (!head_down_ && !ServiceMayBeOut() && list_errors_.insert(error).second) {
      Finding("clusterctl jobs failed: " + error);
    }
    return std::nullopt;
  }
  return reply;
}

void Chaos::Poll() {
  if (auto list = ListJobs()) {
    for (const JobInfo& job : list->jobs()) seen_[job.job_id()] = job;
  }
  if (std::optional<std::string> folder = c_.StateFolder()) {
    int64_t journal = 0;
    int64_t bytes = FolderBytes(*folder, &journal);
    r_->max_state_bytes = std::max(r_->max_state_bytes, bytes);
    r_->max_journal_bytes = std::max(r_->max_journal_bytes, journal);
  }
}

void Chaos::SubmitOne() { SubmitKind(RandomKind(rng_)); }

void Chaos::SubmitKind(JobKind kind) {
  int stop_after_ms = 0;
  std::string file = fmt::format("/tmp/chaos/jobs/{}.yaml", ++file_serial_);
  std::ofstream(c_.client().HostPath(file)) << JobFile(kind, mark_.substr(mark_.find('=') + 1), rng_, &stop_after_ms);
  testing::RunResult submit = c_.Ctl({"submit", file}, 60s);
  static const std::regex submitted("Submitted job (\\S+)");
  std::smatch match;
  if (submit.exit_code != 0 || !std::regex_search(submit.out, match, submitted)) {
    if (ServiceMayBeOut()) {
      ++r_->refused_while_down;
      Note(fmt::format("submit of a {} job refused during a fault on the heads' side: {}", KindName(kind),
                       submit.err.substr(0, 200)));
      return;
    }
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
  // A head's own fault (killed, machine down, link cut) is not a crash.
  bool head_fault = head_down_;
  for (const OpenFault& f : open_) head_fault = head_fault || f.kind.rfind("head_", 0) == 0;
  if (!head_fault) {
    for (const auto& [machine, pid] : head_pids_) {
      if (testing::ProcessAlive(pid)) continue;
      ++r_->unexpected_head_deaths;
      Finding("the head on " + machine + " died without being killed");
      RestartHead("after its crash");
      break;
    }
  }
  for (testing::Machine* w : c_.workers()) {
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
    std::string error;
    bool started = c_.RestartHeads(&error);
    Note(fmt::format("clusterd start --head took {} ms", UnixMs() - began));
    if (started) {
      head_pids_ = c_.HeadPids();
      head_down_ = false;
      int64_t restarted = UnixMs();
      if (!c_.WaitAlive(WorkersWithoutFault(), 30s)) {
        Finding("after the head restarted " + why + ", not every worker came back ALIVE in 30 s");
        Note("clusterctl status then:\n" + c_.Ctl({"status"}, 10s).out);
      }
      if (getenv("CHAOS_VERBOSE") && UnixMs() - restarted > 4000) {
        for (const LogLine& line : ReadDaemonLogs(*c_.workers()[0], "worker")) {
          if (line.ns / 1000000 > began - 8000) Note(c_.workers()[0]->name() + " log: " + line.text);
        }
        for (testing::Machine* head : c_.HeadMachines()) {
          for (const LogLine& line : ReadDaemonLogs(*head, "head")) {
            if (line.ns / 1000000 > began - 1000) Note(head->name() + " log: " + line.text);
          }
        }
      }
      return true;
    }
    Finding(fmt::format("the head did not restart {}: {}", why, error));
    // The machines' logs go with the run: what the heads said is kept here.
    for (testing::Machine* head : c_.HeadMachines()) {
      std::vector<LogLine> lines = ReadDaemonLogs(*head, "head");
      for (size_t i = lines.size() > 20 ? lines.size() - 20 : 0; i < lines.size(); ++i) {
        Note(head->name() + " log: " + lines[i].text);
      }
    }
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

std::vector<std::string> Chaos::WorkersWithoutFault() const {
  std::vector<std::string> names;
  for (testing::Machine* w : c_.workers()) {
    if (!Busy(w)) names.push_back(w->name());
  }
  return names;
}

testing::Machine* Chaos::FreeWorker() {
  std::vector<testing::Machine*> free;
  for (testing::Machine* w : c_.workers()) {
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
  if (IsControlPlane(kind)) return InjectControlPlaneFault(kind, now);
  // The requests below go to the serving head's address: not while a fault
  // on the heads' side may move it.
  if (kind == "bad_rpc") {
    if (ServiceMayBeOut()) return false;
    const std::string address = c_.ServingAddress();
    if (address.empty()) return false;
    int calls = Uniform(20, 60);
    std::vector<std::string> argv = {o_.rpc_program, address, c_.token(), std::to_string(rng_()),
                                     std::to_string(calls)};
    // A few real jobs, for GetLogs with absurd offsets and GetJob/GetMetrics with bad pages.
    for (size_t i = jobs_.size() >= 5 ? jobs_.size() - 5 : 0; i < jobs_.size(); ++i) argv.push_back(jobs_[i].id);
    testing::RunResult sent = c_.client().Run(argv, {}, 120s);
    r_->rpc_calls += calls;
    std::string out = sent.out;
    Note("bad_rpc: " + out.substr(0, 400));
    if (sent.exit_code != 0) Finding(fmt::format("chaos_rpc exited {}: {}", sent.exit_code, sent.err.substr(0, 200)));
    for (size_t at = out.find("ACCEPTED"); at != std::string::npos; at = out.find("ACCEPTED", at + 1)) {
      Finding("the head accepted a nonsense SubmitJob: " + out.substr(at, out.find('\n', at) - at));
    }
    for (size_t at = out.find("EVICTED"); at != std::string::npos; at = out.find("EVICTED", at + 1)) {
      Finding("an upload announced and never sent evicted a finished job's data: " +
              out.substr(at, out.find('\n', at) - at));
    }
    return true;
  }
  if (kind == "report_flood" || kind == "log_flood") {
    // A job that floods its node's report socket, or its output: it must
    // SUCCEED like any other, and so must the jobs beside it.
    if (head_down_) return false;
    SubmitKind(kind == "report_flood" ? JobKind::kReportFlood : JobKind::kLogFlood);
    Note(kind + ": submitted " + (jobs_.empty() ? std::string("nothing") : jobs_.back().id));
    return true;
  }
  if (kind == "queue_burst") {
    // Jobs no node holds, in bursts until the head refuses one by its
    // queue limits; it must stay responsive and sum them up by shape.
    if (head_down_ || ServiceMayBeOut()) return false;
    const std::string address = c_.ServingAddress();
    if (address.empty()) return false;
    testing::RunResult burst =
        c_.client().Run({o_.queue_burst_program, address, c_.token(), std::to_string(Uniform(1000, 5000))}, {}, 180s);
    Note("queue_burst: " + burst.out.substr(0, 300));
    if (burst.exit_code != 0) {
      Finding(fmt::format("chaos_queue_burst exited {}: {}", burst.exit_code, (burst.out + burst.err).substr(0, 300)));
    }
    return true;
  }
  if (kind == "conn_flood") {
    // A stranger's flood of both ports from the client machine; the head
    // must answer a client with the token while it is held.
    if (head_down_ || ServiceMayBeOut()) return false;
    const std::string address = c_.ServingAddress();
    if (address.empty()) return false;
    const std::string host = address.substr(0, address.rfind(':'));
    const std::string port = address.substr(address.rfind(':') + 1);
    const int connections = Uniform(500, 3000);
    testing::RunResult flood = c_.client().Run(
        {o_.flood_program, host, port, c_.token(), std::to_string(connections), std::to_string(Uniform(500, 3000))}, {},
        120s);
    Note("conn_flood: " + flood.out.substr(0, 200));
    if (flood.exit_code != 0 || flood.out.find("SERVED") == std::string::npos) {
      Finding(fmt::format("chaos_flood exited {}: {}", flood.exit_code, (flood.out + flood.err).substr(0, 200)));
    } else if (flood.out.find("UNSERVED") != std::string::npos) {
      Finding("a client with the token was not served during a connection flood: " + flood.out.substr(0, 200));
    }
    return true;
  }
  if (kind == "bad_job_file") {
    BadJobFile bad = RandomBadJobFile(rng_);
    std::string file = fmt::format("/tmp/chaos/jobs/bad-{}.yaml", ++file_serial_);
    std::ofstream(c_.client().HostPath(file), std::ios::binary) << bad.text;
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
  if (IsControlPlane(fault.kind)) {
    RestoreControlPlane(fault);
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
        if (c_.ha()) round_.insert(round_.end(), kHaFaultKinds.begin(), kHaFaultKinds.end());
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

ChaosResult RunChaos(const ChaosOptions& options) {
  ChaosResult result;
  auto start = std::chrono::steady_clock::now();
  try {
    std::unique_ptr<ChaosCluster> cluster;
    if (options.ha) {
      std::string skip_reason;
      cluster = MakeHaCluster(options.workers, options.cpus_per_worker, &skip_reason);
      if (!cluster) result.skipped = "heads in HA cannot run here: " + skip_reason;
    } else {
      cluster = MakeSingleHeadCluster(options.workers, options.cpus_per_worker);
    }
    if (cluster) {
      Chaos chaos(options, *cluster, &result);
      if (chaos.Setup()) {
        chaos.Loop();
        chaos.Drain();
        chaos.Check();
      }
    }
  } catch (const std::exception& e) {
    result.setup_error = std::string("the simulated machines failed: ") + e.what();
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace clusterd::bench
