#include "cli/job_results.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <thread>

#include <fmt/format.h>

#include "cli/dvclive_writer.h"
#include "common/file_util.h"
#include "common/storage/s3_config.h"
#include "common/storage/tree_transfer.h"

namespace clusterd::cli {

namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool IsFolder(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

Result<MetricsReply> Metrics(HeadClient& client, const std::string& job_id) {
  JobRequest request;
  request.set_job_id(job_id);
  MetricsReply reply;
  RETURN_IF_ERROR(client.Call(&HeadService::Stub::GetMetrics, request, &reply));
  return reply;
}

// "Downloading outputs: 40.0/100.0 MiB", redrawn in place on a terminal.
TreeDownloadOptions WithProgress(const char* what, bool* drawn) {
  TreeDownloadOptions options;
  if (isatty(STDERR_FILENO)) {
    options.progress = [what, drawn](int64_t done, int64_t total) {
      std::cerr << fmt::format("\rDownloading {}: {:.1f}/{:.1f} MiB", what, done / 1048576.0, total / 1048576.0)
                << std::flush;
      *drawn = true;
    };
  }
  return options;
}

// Why a job has nothing of a kind to give, in one line.
Status Nothing(const JobInfo& job, const std::string& what) {
  std::string why = !job.data_released().empty() ? job.data_released()
                    : job.state() == SUCCEEDED  ? "none was stored"
                                                : fmt::format("it is {}", JobState_Name(job.state()));
  return Status::NotFound(fmt::format("job {} has no {}: {}", job.job_id(), what, why));
}

}  // namespace

DvcLiveFollower::DvcLiveFollower(HeadClient& client, const JobInfo& job) : client_(client), job_id_(job.job_id()) {
  if (!job.spec().dvclive_dir().empty() && !job.spec().working_dir().empty()) {
    dir_ = JoinPath(job.spec().working_dir(), job.spec().dvclive_dir());
  }
}

Status DvcLiveFollower::Write() {
  ASSIGN_OR_RETURN(MetricsReply metrics, Metrics(client_, job_id_));
  if (metrics.records_size() == records_) return Status::Ok();
  records_ = metrics.records_size();
  return WriteDvcLive(dir_, metrics);
}

void DvcLiveFollower::Poll() {
  if (dir_.empty() || NowMs() - last_ms_ < 1000) return;
  last_ms_ = NowMs();
  Status wrote = Write();
  if (!wrote.ok()) std::cerr << "clusterctl: warning: DVCLive files: " << wrote.message() << "\n";
}

Status DvcLiveFollower::Finish() {
  if (dir_.empty()) return Status::Ok();
  return Write().WithContext("DVCLive files in " + dir_);
}

bool HasResults(const JobSpec& spec) { return spec.outputs_size() > 0 || !spec.dvclive_dir().empty(); }

bool HasResults(const JobInfo& job) { return HasResults(job.spec()); }

Result<std::string> ResultsFolder(const JobInfo& job, const std::string& out) {
  if (!out.empty()) {
    if (!IsFolder(out)) RETURN_IF_ERROR(MakeDirs(out));
    return out;
  }
  if (!job.spec().working_dir().empty() && IsFolder(job.spec().working_dir())) return job.spec().working_dir();
  return Status::NotFound(fmt::format("job {}'s working_dir {} is not on this machine: pass --out DIR", job.job_id(),
                                      job.spec().working_dir().empty() ? "(none)" : job.spec().working_dir()));
}

namespace {
// The head hides the store ids of another user's job (its outputs and
// checkpoints are the owner's and the admins' to read): say so, by the rule.
constexpr char kHiddenId[] = "(hidden)";
Status OthersData(const JobInfo& job, const std::string& what) {
  return Status::PermissionDenied(fmt::format("{} belongs to {}; only they or an admin may read its {}", job.job_id(),
                                              job.owner().empty() ? "admin" : job.owner(), what));
}
}  // namespace

Status FetchOutputs(HeadClient& client, const JobInfo& job, const std::string& dir) {
  // The DVCLive files first: a job that failed or was stopped has reports
  // worth plotting (`--follow` wrote them live), but no outputs.
  if (!job.spec().dvclive_dir().empty()) {
    std::string live = JoinPath(dir, job.spec().dvclive_dir());
    ASSIGN_OR_RETURN(MetricsReply metrics, Metrics(client, job.job_id()));
    RETURN_IF_ERROR(WriteDvcLive(live, metrics).WithContext("DVCLive files in " + live));
    std::cerr << fmt::format("Wrote the DVCLive files of {} ({} reports) into {}\n", job.job_id(),
                             metrics.records_size(), live);
  }
  if (job.spec().outputs_size() == 0) return Status::Ok();
  if (job.outputs_manifest().empty()) return Nothing(job, "outputs");
  if (job.outputs_manifest() == kHiddenId) return OthersData(job, "outputs");
  std::unique_ptr<ClusterStorage> cluster = client.Store();
  ASSIGN_OR_RETURN(BlobStorage * store, cluster->At(job.spec().outputs_storage()));
  bool drawn = false;
  Status fetched = DownloadInto(*store, job.outputs_manifest(), dir, WithProgress("outputs", &drawn));
  if (drawn) std::cerr << "\n";
  RETURN_IF_ERROR(fetched.WithContext(fmt::format("job {}'s outputs", job.job_id())));
  std::cerr << fmt::format("Fetched outputs of {} into {}:", job.job_id(), dir);
  for (const std::string& path : job.spec().outputs()) {
    bool missing = std::find(job.outputs_missing().begin(), job.outputs_missing().end(), path) !=
                   job.outputs_missing().end();
    std::cerr << " " << path << (missing ? " (not written by the job)" : "");
  }
  std::cerr << "\n";
  return Status::Ok();
}

Status FetchCheckpoint(HeadClient& client, const JobInfo& job, const std::string& dir) {
  if (job.stored_checkpoints_size() == 0) {
    Status none = Nothing(job, "stored checkpoint");
    return job.checkpoint_refused().empty() ? none : Status::NotFound(none.message() + "; " + job.checkpoint_refused());
  }
  const CheckpointRef& newest = *job.stored_checkpoints().rbegin();
  if (newest.manifest_id() == kHiddenId) return OthersData(job, "checkpoints");
  std::string dest = JoinPath(dir, newest.name());
  struct stat st {};
  if (lstat(dest.c_str(), &st) == 0) {
    return Status::AlreadyExists(fmt::format("{} exists already: remove it, or pass another --out", dest));
  }
  std::unique_ptr<ClusterStorage> cluster = client.Store();
  const std::string& storage = job.spec().checkpoint().storage();
  ASSIGN_OR_RETURN(BlobStorage * store, cluster->At(IsS3Location(storage) ? storage : ""));
  bool drawn = false;
  // The manifest holds the folder under its name; restore beside, then move in.
  std::string staging = fmt::format("{}/.fetch-{}-{}", dir, newest.name(), getpid());
  Status fetched = DownloadTree(*store, newest.manifest_id(), staging, WithProgress("checkpoint", &drawn));
  if (drawn) std::cerr << "\n";
  if (fetched.ok() && rename((staging + "/" + newest.name()).c_str(), dest.c_str()) != 0) {
    fetched = Status::IOError(fmt::format("cannot move the checkpoint into {}: {}", dest, std::strerror(errno)));
  }
  RemoveTree(staging);
  RETURN_IF_ERROR(fetched.WithContext(fmt::format("job {}'s checkpoint {}", job.job_id(), newest.name())));
  std::cerr << fmt::format("Fetched {} (epoch {}, attempt {}, from {}) of {} into {}\n", newest.name(), newest.epoch(),
                           newest.attempt(), newest.node_name(), job.job_id(), dest);
  // Rank 0's node uploads in the background: the newest one it reported
  // may reach the store seconds after the job ended, or never (a checkpoint
  // reported while another uploads replaces any that waits).
  const std::string reported = job.latest_checkpoint().empty() ? "" : BaseName(job.latest_checkpoint());
  if (!job.checkpoint_refused().empty()) {
    std::cerr << "Note: " << job.checkpoint_refused() << "\n";
  } else if (!reported.empty() && reported != newest.name()) {
    std::cerr << fmt::format("Note: rank 0 reported {} last, which is not stored (yet): its upload may still be "
                             "under way (see `clusterctl job {}`)\n", reported, job.job_id());
  }
  return Status::Ok();
}

Result<JobInfo> WaitForReportedCheckpoint(HeadClient& client, JobInfo job, std::chrono::milliseconds limit) {
  const std::string reported = job.latest_checkpoint().empty() ? "" : BaseName(job.latest_checkpoint());
  // Names checkpoint_NNNNNN (ctrain's, Python's) order by their numbers.
  auto stored_or_newer = [&](const JobInfo& j) {
    for (const CheckpointRef& c : j.stored_checkpoints()) {
      if (c.name() == reported || (c.name().size() == reported.size() && c.name() > reported)) return true;
    }
    return false;
  };
  if (reported.empty() || job.spec().checkpoint().storage() == "shared" || !job.data_released().empty()) return job;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  bool said = false;
  while (!stored_or_newer(job) && job.checkpoint_refused().empty() && std::chrono::steady_clock::now() < deadline) {
    if (!said) {
      std::cerr << fmt::format("Waiting for {}, which rank 0 of {} reported last, to reach the store "
                               "(--no-wait: the newest stored now)\n", reported, job.job_id());
      said = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    JobRequest request;
    request.set_job_id(job.job_id());
    RETURN_IF_ERROR(client.Call(&HeadService::Stub::GetJob, request, &job));
  }
  return job;
}

Status CheckJobStorage(HeadClient& client, const JobSpec& spec) {
  const std::pair<const char*, std::string> locations[] = {{"checkpoint.storage", spec.checkpoint().storage()},
                                                           {"outputs_storage", spec.outputs_storage()}};
  std::unique_ptr<ClusterStorage> cluster;
  for (const auto& [key, location] : locations) {
    if (!IsS3Location(location)) continue;
    if (!cluster) cluster = client.Store();
    RETURN_IF_ERROR(cluster->At(location).status().WithContext(fmt::format("key '{}'", key)));
  }
  return Status::Ok();
}

}  // namespace clusterd::cli
