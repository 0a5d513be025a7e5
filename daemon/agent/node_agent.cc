#include "daemon/agent/node_agent.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "common/logging.h"
#include "common/resources.h"
#include "common/file_util.h"
#include "common/session.h"
#include "common/net/head_channel.h"
#include "common/net/heartbeat_datagram.h"
#include "daemon/agent/agent_part_options.h"
#include "daemon/agent/cpu_utilization.h"
#include "daemon/agent/followed_head_channel.h"
#include "daemon/agent/launcher_client.h"
#include "daemon/agent/node_registration.h"
#include "daemon/agent/preemption_notice.h"
#include "daemon/agent/resource_probe.h"
#include "daemon/agent/transfer_stop.h"

namespace clusterd {

NodeAgent::NodeAgent(NodeAgentOptions options, std::function<void(const std::string&)> on_stop)
    : options_(std::move(options)),
      on_stop_(std::move(on_stop)),
      registration_(DescribeNode(options_, ProbeResources())),
      clock_(options_.clock ? options_.clock : SystemWaitableClock::Shared()) {}

NodeAgent::~NodeAgent() { Stop(); }

RegisterNode NodeAgent::BuildRegistration() {
  RegisterNode r = registration_;
  std::vector<LiveRank> live = loop_.Call<std::vector<LiveRank>>([this] { return runner_->LiveRanks(); });
  for (const LiveRank& rank : live) *r.add_live_ranks() = rank;
  // A rank 0 that exited 0 is not over for the head until its outputs are
  // stored: it is still live, or a head that restarted meanwhile would take
  // it for lost.
  if (uploader_) {
    for (const LiveRank& rank : uploader_->HeldRanks()) *r.add_live_ranks() = rank;
  }
  return r;
}

Status NodeAgent::ForwardReport(MetricsReport report, pid_t peer) {
  // On the loop, in order with the rank's exit: kept while the head is
  // away, so a report made then (a last epoch's, say) is not lost.
  Status taken = loop_.Call<Status>([this, &report, peer] {
    Status status = runner_->TakeReport(&report, peer);
    if (status.ok()) ++reports_under_way_;
    return status;
  });
  if (!taken.ok()) return taken;
  if (rank_zero_) rank_zero_->OnReport(report);  // off the loop: it snapshots the checkpoint
  --reports_under_way_;
  return Status::Ok();
}

bool NodeAgent::SendFromRunner(const AgentMessage& message) {
  if (!link_) return false;
  if (!corked_) {
    // The rest of this turn's messages go with this one, in one write,
    // once the loop has run what is ready (a task posted from the loop
    // itself queues without a wake-up).
    corked_ = true;
    link_->Cork();
    loop_.Post([this] {
      corked_ = false;
      link_->Uncork();
    });
  }
  return link_->Send(message);
}

void NodeAgent::Launch(const LaunchRanks& launch) {
  rank_zero_->Remember(launch);
  runner_->LaunchPrepared(launch);
}

Result<Registered> NodeAgent::Start(int timeout_ms) {
  AttemptFiles::RemoveStaleWorkDirs(options_.work_dir);
  if (options_.launcher) {
    launcher_ = options_.launcher;
  } else {
    std::string containment, limits;
    auto launcher = StartLauncherClient(options_.config, &containment, &limits);
    if (!launcher.ok()) return launcher.status();
    (*registration_.mutable_labels())["clusterd.containment"] = containment;
    (*registration_.mutable_labels())["clusterd.limits"] = limits;
    launcher_ = launcher->get();
    own_launcher_ = std::move(*launcher);
  }
  runner_ = std::make_unique<RankRunner>(RankRunnerOptionsOf(options_), clock_, launcher_,
                                         [this](const AgentMessage& m) { return SendFromRunner(m); });
  // Launches start once the commands already on the loop are handled: a
  // burst of them starts as one batch (RankRunner::SetStartScheduler).
  runner_->SetStartScheduler([this] { loop_.Post([this] { runner_->StartQueued(); }); });
  // The head's store, or S3 when the head says so (asked at first use).
  // Given several heads (HA), where the store is is asked of the head the
  // link follows, the leader; the first head is the store only of a
  // single-head cluster (HA needs S3).
  const std::string store_head = options_.head_address.substr(0, options_.head_address.find(','));
  auto location_head = std::make_shared<FollowedHeadChannel>(FollowedHeadChannel::Options{
      [this] { return link_ ? link_->followed_head() : std::string(); }, store_head, options_.tls,
      options_.config.reconnect_initial_ms, options_.config.reconnect_max_ms, options_.config.connect_timeout_ms});
  blobs_ = std::make_unique<ClusterStorage>(
      DialHeadAgain(store_head, options_.tls, options_.config.reconnect_initial_ms,
                    options_.config.reconnect_max_ms, options_.config.connect_timeout_ms),
      options_.token, store_head, [location_head] { return location_head->Now(); });
  packages_ = std::make_unique<PackageCache>(
      PackageCacheOptionsOf(options_),
      [this](const std::string& id, int64_t size) { return blobs_->OpenDownload(id, size); });
  // Both a stored checkpoint and an exit amended with its outputs are kept
  // by the runner until the head hears them.
  auto report_kept = [this](const AgentMessage& m) { loop_.Post([this, m] { runner_->ReportKept(m); }); };
  // What is still being stored for an exit that waits goes as it is: a later word says it again.
  auto report_progress = [this](const AgentMessage& m) { loop_.Post([this, m] { SendFromRunner(m); }); };
  uploader_ = std::make_unique<ResultsUploader>(blobs_.get(), options_.hash_dir, report_kept, report_kept,
                                                options_.config.final_checkpoint_wait_ms, report_progress, clock_);
  rank_zero_ = std::make_unique<RankZeroResults>(uploader_.get());
  // Rank 0's clean exit is reported once its outputs and last checkpoint are stored.
  runner_->SetExitTaker([this](const AgentMessage& m) { return rank_zero_->TakeExit(m); });
  preparer_ = std::make_unique<LaunchPreparer>(
      options_.work_dir, packages_.get(), blobs_.get(),
      [this](const LaunchRanks& launch) { loop_.Post([this, launch] { Launch(launch); }); },
      [this](const LaunchRanks& launch, const std::string& error, const std::string& unrestorable) {
        loop_.Post([this, launch, error, unrestorable] { runner_->FailLaunch(launch, error, unrestorable); });
      });
  attempt_files_ = std::make_unique<AttemptFiles>(
      options_.work_dir, options_.hash_dir,
      [this](const std::string& folder) { preparer_->RemoveWorkingFolder(folder); });
  // Everything the loop's work touches exists; the report server and the
  // link, which call onto the loop, come after it runs.
  loop_.Start();
  started_ = true;
  loop_.Post([this] {
    tick_timer_.emplace(loop_.context());
    launcher_wakeup_.emplace(loop_.context(), launcher_, [this] {
      if (stopped_) return false;
      TickRunner();  // takes all the launcher said (or sees it gone)
      return true;
    });
    ArmTick();
  });
  reports_ = std::make_unique<ReportServer>(
      options_.socket_path, [this](const MetricsReport& r, pid_t peer) { return ForwardReport(r, peer); },
      [this](pid_t peer) { return loop_.Call<Result<std::string>>([this, peer] { return runner_->ReporterOf(peer); }); },
      ReportLimitsOf(options_.config), clock_);
  Status listening = reports_->Start();
  if (!listening.ok()) return listening;
  gpu_probe_ = std::make_unique<GpuProbe>(GpuProbeOptionsOf(options_, registration_));
  gpu_probe_->Start();
  link_ = std::make_unique<HeadLink>(
      HeadLinkOptionsOf(options_, clock_), [this] { return BuildRegistration(); },
      [this, cpu_meter = std::make_shared<CpuUtilizationMeter>()] {
        NodeUsage usage = ReadUsage();
        // Busy share since the last heartbeat; unset on the first.
        if (auto busy = cpu_meter->Sample()) usage.set_cpu_utilization(*busy);
        usage.set_running_ranks(running_ranks_.load(std::memory_order_relaxed));
        // A datagram's header and signature take 53 bytes of it.
        gpu_probe_->AddTo(&usage, kMaxHeartbeatDatagram - 64);
        return usage;
      },
      [this](const HeadMessage& message) { OnCommand(message); },
      [this](const Registered&) {
        uploader_->Nudge();  // the head is back: so, most likely, is its store
        loop_.Post([this] { runner_->FlushUnreported(); });
      });
  return link_->Start(timeout_ms);
}

Micros NodeAgent::TickRunner() {
  Micros next = runner_->Tick();
  running_ranks_.store(static_cast<int>(runner_->running()), std::memory_order_relaxed);
  // In the same turn as the exits it reaped: a folder nothing holds any
  // more goes at once, not at the next poll. A report taken on the loop may
  // not have queued its checkpoint yet: its files wait for it.
  if (!attempt_files_->empty() && reports_under_way_ == 0) {
    attempt_files_->RemoveDone([this](const std::string& job_id, int attempt) {
      return runner_->Holds(job_id, attempt) || uploader_->Holds(job_id, attempt);
    });
  }
  return next;
}

void NodeAgent::ArmTick() {
  // Reaping and log shipping poll every 20 ms (exits wake the loop sooner,
  // LauncherWakeup); a SIGKILL that falls due sooner is sent on time.
  constexpr Micros kPollMicros = 20'000;
  launcher_wakeup_->Follow();
  Micros now = clock_->NowMicros();
  Micros next = TickRunner();
  Micros wait = next == 0 ? kPollMicros : std::clamp<Micros>(next - now, 1000, kPollMicros);
  tick_timer_->expires_after(std::chrono::microseconds(wait));
  tick_timer_->async_wait([this](const boost::system::error_code& error) {
    if (!error) ArmTick();
  });
}

bool NodeAgent::WaitOnLoop(const std::function<bool()>& fn, int limit_ms) {
  Micros deadline = clock_->NowMicros() + static_cast<Micros>(limit_ms) * 1000;
  while (!loop_.Call<bool>(fn)) {
    if (clock_->NowMicros() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

void NodeAgent::StopTransfers() {
  StopTransfersWithin(
      kTransferGraceMs, clock_,
      [this] {
        if (preparer_) preparer_->Stop();
        if (uploader_) uploader_->Stop();
      },
      [this] {
        if (blobs_) blobs_->CancelTransfers();
      });
}

void NodeAgent::Stop(std::optional<int> grace_ms_asked) {
  if (stopped_) return;
  stopped_ = true;
  if (started_) {
    // Ranks first, while the head can still hear how they ended; then what
    // is being prepared or uploaded.
    const int grace_ms = grace_ms_asked.value_or(options_.config.stop_grace_ms);
    loop_.Post([this, grace_ms] {
      // The head first, so it places nothing more here while the ranks
      // stop; launches already on their way are refused from now on.
      AgentMessage draining;
      {
        // Why the node drains, so that its ranks' ends name it (stop-node,
        // not a local `clusterd stop`).
        std::lock_guard<std::mutex> lock(stop_reason_mutex_);
        draining.mutable_draining()->set_reason(stop_reason_.empty() ? "clusterd stop" : stop_reason_);
      }
      if (link_) link_->Send(draining);
      runner_->StopAll(grace_ms);
    });
    // The loop's tick sends the SIGKILLs at the end of the grace period.
    if (!WaitOnLoop([this] { return runner_->idle(); }, grace_ms + 10'000)) {
      LOG_WARN("ranks still running 10 s after their SIGKILL");
    }
    // What the ranks started outside their groups (setsid, double forks)
    // is still below this process, or was handed to it as the subreaper
    // when its parent died: kill it all until nothing is left.
    int strays = 0;
    bool clean = WaitOnLoop([this, &strays] {
      int found = launcher_->KillDescendants();
      if (strays == 0) strays = found;  // later rounds count the same dying ones again
      runner_->Tick();  // reaps them
      return found == 0;
    }, 10'000);
    if (strays > 0) LOG_INFO("killed {} process(es) the ranks left outside their process groups", strays);
    if (!clean) LOG_WARN("processes the ranks started still run 10 s after SIGKILL");
  }
  StopTransfers();
  if (!options_.work_dir.empty()) RemoveTree(options_.work_dir);
  if (reports_) reports_->Stop();
  if (link_) {
    // How the ranks ended is on the queue, or waits behind their last log
    // bytes for room on it: let it reach the head.
    size_t unsent = 0;
    if (started_) {
      unsent = loop_.Call<size_t>([this] {
        runner_->FlushUnreported();
        return runner_->unreported();
      });
    }
    if (!link_->Flush(2000)) LOG_WARN("stopping before the head heard everything queued for it");
    // The head is away, or stopped answering: what it should have heard of
    // this node's ranks dies with this agent (a restarted head fails their
    // attempts as lost).
    const size_t unconfirmed = link_->WaitDelivered(1000);
    if (unsent + unconfirmed > 0) {
      LOG_WARN("stopping with {} rank exits and reports the head never heard or did not confirm (it is away)",
               unsent + unconfirmed);
    }
    link_->Stop();
  }
  gpu_probe_.reset();
  if (started_) {
    loop_.Call<bool>([this] {
      if (tick_timer_) tick_timer_->cancel();
      if (launcher_wakeup_) launcher_wakeup_->Close();  // closes its dup, on the loop that owns it
      return true;
    });
    loop_.Stop();
  }
}

void NodeAgent::OnCommand(const HeadMessage& message) {
  if (message.has_stop()) {
    LOG_INFO("the head asked this node agent to stop: {}", message.stop().reason());
    {
      std::lock_guard<std::mutex> lock(stop_reason_mutex_);
      stop_reason_ = message.stop().reason();
    }
    if (on_stop_) on_stop_(message.stop().reason());
    return;
  }
  loop_.Post([this, message] { HandleCommand(message); });
}

void NodeAgent::HandleCommand(const HeadMessage& message) {
  switch (message.kind_case()) {
    case HeadMessage::kLaunch:
      attempt_files_->Track(message.launch());
      // A stopping runner refuses it at once: nothing to fetch for that.
      if (NeedsPreparing(message.launch()) && !runner_->stopping()) {
        runner_->ExpectLaunch(message.launch());
        preparer_->Add(message.launch());
      } else {
        Launch(message.launch());
      }
      return;
    case HeadMessage::kKill: runner_->Kill(message.kill()); return;
    case HeadMessage::kReservePort: runner_->ReservePort(message.reserve_port()); return;
    case HeadMessage::kWatchRanks: runner_->Watch(message.watch_ranks()); return;
    case HeadMessage::kDiagnoseRanks: runner_->Diagnose(message.diagnose_ranks()); return;
    case HeadMessage::kPreempt: {
      // The ranks see it at their next poll; the head sends SIGTERM at the deadline.
      const std::string logs_dir = RankRunnerOptionsOf(options_).logs_dir;
      Status written = WritePreemptionNotice(logs_dir, message.preempt());
      if (!written.ok()) {
        LOG_WARN("job {}: could not give its ranks the preemption notice: {}", message.preempt().job_id(),
                 written.message());
        return;
      }
      // Removed once nothing of the attempt is left here.
      attempt_files_->TrackFile(message.preempt().job_id(), message.preempt().attempt(),
                                PreemptionNoticePath(logs_dir, message.preempt().job_id(), message.preempt().attempt()));
      return;
    }
    default: break;
  }
  LOG_WARN("ignoring a command this agent does not know (case {})", static_cast<int>(message.kind_case()));
}

}  // namespace clusterd
