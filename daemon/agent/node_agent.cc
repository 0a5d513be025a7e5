#include "daemon/agent/node_agent.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include <fmt/format.h>

#include "common/logging.h"
#include "common/resources.h"
#include "common/file_util.h"
#include "common/session.h"
#include "daemon/agent/resource_probe.h"

namespace clusterd {

namespace {
std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "node";
  return name;
}
}  // namespace

NodeAgent::NodeAgent(NodeAgentOptions options, std::function<void(const std::string&)> on_stop)
    : options_(std::move(options)), on_stop_(std::move(on_stop)) {
  ProbedResources probed = ProbeResources();
  RegisterNode& r = registration_;
  r.set_name(options_.node_name.empty() ? HostName() : options_.node_name);
  r.set_name_given(!options_.node_name.empty());
  r.set_address(options_.node_ip);
  r.set_is_head(options_.is_head);
  r.set_instance_id(fmt::format("{}-{}-{}", HostName(), getpid(), NewToken().substr(0, 8)));
  auto& total = *r.mutable_total()->mutable_amounts();
  total = options_.custom.amounts();
  total[kCpu] = options_.num_cpus >= 0 ? options_.num_cpus : probed.cpus;
  total[kMemory] = options_.memory_bytes >= 0 ? options_.memory_bytes : probed.memory_bytes;
  // --num-gpus N names devices 0..N-1 (also how tests fake GPUs); else what nvidia-smi lists.
  std::vector<int> gpus = probed.gpu_indexes;
  if (options_.num_gpus >= 0) {
    gpus.clear();
    for (int i = 0; i < static_cast<int>(options_.num_gpus); ++i) gpus.push_back(i);
  }
  if (!gpus.empty()) total[kGpu] = static_cast<double>(gpus.size());
  for (int gpu : gpus) r.add_gpu_indexes(gpu);
}

NodeAgent::~NodeAgent() { Stop(); }

RegisterNode NodeAgent::BuildRegistration() {
  RegisterNode r = registration_;
  if (runner_) {
    for (const LiveRank& live : runner_->LiveRanks()) *r.add_live_ranks() = live;
  }
  return r;
}

Status NodeAgent::ForwardReport(MetricsReport report, pid_t peer) {
  std::optional<LiveRank> rank = runner_ ? runner_->RankOfProcess(peer) : std::nullopt;
  if (!rank) {
    return Status::FailedPrecondition(fmt::format("process {} is not a rank this node agent runs", peer));
  }
  report.set_job_id(rank->job_id());
  report.set_attempt(rank->attempt());
  report.set_rank(rank->rank());
  AgentMessage message;
  *message.mutable_metrics() = report;
  if (!link_ || !link_->Send(message)) return Status::Unavailable("the head is not reachable right now");
  if (rank_zero_) rank_zero_->OnReport(report);
  return Status::Ok();
}

bool NodeAgent::SendFromRunner(const AgentMessage& message) {
  if (rank_zero_ && rank_zero_->TakeExit(message)) return true;  // reported once the outputs are stored
  return link_ && link_->Send(message);
}

void NodeAgent::Launch(const LaunchRanks& launch) {
  rank_zero_->Remember(launch);
  runner_->LaunchPrepared(launch);
}

namespace {

// Working folders of agents that are gone (a crash, a SIGKILL) hold nothing
// anyone will use again: <parent>/<pid>/ for pids that no longer run.
void RemoveStaleWorkDirs(const std::string& work_dir) {
  std::string parent = work_dir.substr(0, work_dir.rfind('/'));
  DIR* dir = opendir(parent.c_str());
  if (!dir) return;
  while (dirent* entry = readdir(dir)) {
    char* end = nullptr;
    long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0' || pid == getpid()) continue;
    if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) RemoveTree(parent + "/" + entry->d_name);
  }
  closedir(dir);
}

}  // namespace

Result<Registered> NodeAgent::Start(int timeout_ms) {
  RemoveStaleWorkDirs(options_.work_dir);
  HeadLink::Options link_options;
  link_options.head_address = options_.head_address;
  link_options.token = options_.token;
  link_options.heartbeat_ms = options_.config.heartbeat_ms;
  link_options.reconnect_initial_ms = options_.config.reconnect_initial_ms;
  link_options.reconnect_max_ms = options_.config.reconnect_max_ms;
  RankRunner::Options runner_options;
  runner_options.logs_dir = options_.session_dir + "/logs/jobs";
  runner_options.ranks_dir = options_.session_dir + "/ranks";
  runner_options.socket_path = options_.socket_path;
  runner_options.node_ip = options_.node_ip;
  runner_options.log_tail_lines = options_.config.log_tail_lines;
  runner_ = std::make_unique<RankRunner>(runner_options, [this](const AgentMessage& m) { return SendFromRunner(m); });
  // The head's store, or S3 when the head says so (asked at first use).
  blobs_ = std::make_unique<ClusterStorage>(
      grpc::CreateChannel(options_.head_address, grpc::InsecureChannelCredentials()), options_.token,
      options_.head_address);
  PackageCache::Options cache_options;
  cache_options.dir = options_.package_dir;
  cache_options.capacity_bytes = options_.config.package_cache_mb * (int64_t{1} << 20);
  packages_ = std::make_unique<PackageCache>(
      cache_options, [this](const std::string& id, int64_t size) { return blobs_->OpenDownload(id, size); });
  uploader_ = std::make_unique<ResultsUploader>(
      blobs_.get(), options_.hash_dir, [this](const AgentMessage& m) { link_ && link_->Send(m); },
      [this](const AgentMessage& m) { runner_->ReportExit(m); });
  rank_zero_ = std::make_unique<RankZeroResults>(uploader_.get());
  preparer_ = std::make_unique<LaunchPreparer>(
      options_.work_dir, packages_.get(), blobs_.get(), [this](const LaunchRanks& launch) { Launch(launch); },
      [this](const LaunchRanks& launch, const std::string& error) { runner_->FailLaunch(launch, error); });
  reports_ = std::make_unique<ReportServer>(options_.socket_path,
                                            [this](const MetricsReport& r, pid_t peer) { return ForwardReport(r, peer); });
  Status listening = reports_->Start();
  if (!listening.ok()) return listening;
  link_ = std::make_unique<HeadLink>(
      link_options, [this] { return BuildRegistration(); }, [] { return ReadUsage(); },
      [this](const HeadMessage& message) { OnCommand(message); },
      [this](const Registered&) { runner_->FlushUnreported(); });
  return link_->Start(timeout_ms);
}

void NodeAgent::Stop() {
  // Ranks first, while the head can still hear how they ended; then what
  // is being prepared or uploaded.
  if (runner_) runner_->StopAll(options_.config.stop_grace_ms);
  if (preparer_) preparer_->Stop();
  if (uploader_) uploader_->Stop();
  if (!options_.work_dir.empty()) RemoveTree(options_.work_dir);
  if (reports_) reports_->Stop();
  if (link_) link_->Stop();
}

void NodeAgent::OnCommand(const HeadMessage& message) {
  switch (message.kind_case()) {
    case HeadMessage::kLaunch:
      if (NeedsPreparing(message.launch())) {
        runner_->ExpectLaunch(message.launch());
        preparer_->Add(message.launch());
      } else {
        Launch(message.launch());
      }
      return;
    case HeadMessage::kKill: runner_->Kill(message.kill()); return;
    case HeadMessage::kReservePort: runner_->ReservePort(message.reserve_port()); return;
    default: break;
  }
  if (message.has_stop()) {
    LOG_INFO("the head asked this node agent to stop: {}", message.stop().reason());
    if (on_stop_) on_stop_(message.stop().reason());
    return;
  }
  LOG_WARN("ignoring a command this agent does not know (case {})", static_cast<int>(message.kind_case()));
}

}  // namespace clusterd
