#include "daemon/head/job_data.h"

#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

#include "common/job_state.h"
#include "common/logging.h"
#include "common/storage/s3_config.h"
#include "store.pb.h"

namespace clusterd {

namespace {

// A manifest lists files, not bytes: anything this large is not one.
constexpr int64_t kMaxManifestBytes = 64 << 20;

std::string PackageOwner(const std::string& job) { return job + "/package"; }
std::string CheckpointOwner(const std::string& job, const std::string& manifest) {
  return job + "/checkpoint/" + manifest;
}
std::string OutputsOwner(const std::string& job) { return job + "/outputs"; }

}  // namespace

std::string JobData::JobOfOwner(const std::string& owner) { return owner.substr(0, owner.find('/')); }

bool JobData::IsPackageOwner(const std::string& owner) { return owner == PackageOwner(JobOfOwner(owner)); }

bool JobData::HoldsCheckpoints(const JobInfo& job) const {
  return blobs_ && !IsS3Location(job.spec().checkpoint().storage());
}

bool JobData::HoldsOutputs(const JobInfo& job) const { return blobs_ && job.spec().outputs_storage().empty(); }

// What a manifest naming a blob the store lacks most likely means, where a
// cap can say it: a tree larger than the whole store, or pieces evicted
// while it uploaded into a store full of what live jobs hold.
Status JobData::MissingPiece(const Manifest& manifest, const std::string& manifest_id, const std::string& id) const {
  std::string why;
  const BlobStore::Usage usage = blobs_->usage();
  const int64_t capacity = usage.capacity_bytes;
  int64_t total = 0;
  for (const ManifestEntry& entry : manifest.entries()) total += entry.size();
  if (capacity > 0 && total > capacity) {
    why = fmt::format(": its files are {} bytes, more than the head's store may hold ({} bytes, --store-capacity-mb)",
                      total, capacity);
  } else if (capacity > 0 && usage.used_bytes + total > capacity - capacity / 10) {
    // Only a store near its cap makes eviction the likely cause: a store
    // far from full did not evict what the manifest names.
    why = fmt::format(" (evicted to make room before the upload was done? the head's store holds {} bytes, "
                      "--store-capacity-mb)", capacity);
  }
  return Status::FailedPrecondition(
      fmt::format("manifest {} names blob {}, which the store lacks{}", manifest_id, id, why));
}

Result<std::vector<std::string>> JobData::ManifestBlobs(const std::string& manifest_id, bool in_s3) const {
  if (external_ || in_s3) {
    if (!IsBlobId(manifest_id)) return Status::InvalidArgument(fmt::format("'{}' is not a manifest id", manifest_id));
    return std::vector<std::string>{manifest_id};
  }
  if (!blobs_) return Status::FailedPrecondition("this head has no store");
  ASSIGN_OR_RETURN(int64_t size, blobs_->Size(manifest_id));
  if (size > kMaxManifestBytes) {
    return Status::InvalidArgument(fmt::format("blob {} is {} bytes: too large for a manifest", manifest_id, size));
  }
  ASSIGN_OR_RETURN(int fd, blobs_->OpenForRead(manifest_id));
  std::string bytes(static_cast<size_t>(size), '\0');
  ssize_t got = pread(fd, bytes.data(), bytes.size(), 0);
  close(fd);
  Manifest manifest;
  if (got != size || !manifest.ParseFromString(bytes)) {
    return Status::Corruption(fmt::format("blob {} is not a readable manifest", manifest_id));
  }
  std::vector<std::string> ids = {manifest_id};
  for (const ManifestEntry& entry : manifest.entries()) ids.insert(ids.end(), entry.chunks().begin(), entry.chunks().end());
  for (const std::string& id : ids) {
    if (blobs_->Has(id)) continue;
    // The pieces of a tree that cannot be kept would otherwise count as an
    // upload under way for half an hour, and push out finished jobs'
    // outputs meanwhile.
    blobs_->MarkUnwanted(ids);
    return MissingPiece(manifest, manifest_id, id);
  }
  return ids;
}

Status JobData::HoldPackage(const JobInfo& job) {
  const std::string& id = job.spec().package_id();
  if (id.empty()) return Status::Ok();
  if (external_) {
    if (!IsBlobId(id)) return Status::InvalidArgument(fmt::format("package id '{}' is not a SHA-256 in hex", id));
    return Status::Ok();
  }
  if (!blobs_) return Status::FailedPrecondition("this head has no store for code packages");
  if (!IsBlobId(id)) return Status::InvalidArgument(fmt::format("package id '{}' is not a SHA-256 in hex", id));
  if (!blobs_->Has(id)) {
    return Status::FailedPrecondition(fmt::format(
        "package {} is not in the head's store (evicted since it was uploaded?): submit again", id));
  }
  blobs_->Pin(PackageOwner(job.job_id()), id);
  return Status::Ok();
}

Status JobData::AddCheckpoint(JobInfo* job, const CheckpointRef& checkpoint, int keep) {
  const bool held = HoldsCheckpoints(*job);
  ASSIGN_OR_RETURN(std::vector<std::string> ids, ManifestBlobs(checkpoint.manifest_id(), !held));
  if (held) blobs_->Pin(CheckpointOwner(job->job_id(), checkpoint.manifest_id()), ids);
  auto* stored = job->mutable_stored_checkpoints();
  // The same folder stored again (an unchanged re-upload) is one checkpoint.
  for (int i = stored->size() - 1; i >= 0; --i) {
    if (stored->Get(i).manifest_id() == checkpoint.manifest_id()) stored->DeleteSubrange(i, 1);
  }
  *stored->Add() = checkpoint;
  while (keep > 0 && stored->size() > keep) {
    if (held) blobs_->Release(CheckpointOwner(job->job_id(), stored->Get(0).manifest_id()));
    stored->DeleteSubrange(0, 1);
  }
  // One that came after the job ended is evictable as the job's others are.
  if (held && IsTerminal(job->state())) blobs_->MakeSoft(CheckpointOwner(job->job_id(), checkpoint.manifest_id()));
  return Status::Ok();
}

Status JobData::DropLostCheckpoint(JobInfo* job, const std::string& manifest_id) {
  auto* stored = job->mutable_stored_checkpoints();
  auto it = std::find_if(stored->begin(), stored->end(),
                         [&](const CheckpointRef& c) { return c.manifest_id() == manifest_id; });
  if (it == stored->end()) return Status::NotFound(fmt::format("the job has no stored checkpoint {}", manifest_id));
  const bool held = HoldsCheckpoints(*job);
  if (held && ManifestBlobs(manifest_id, false).ok()) {
    return Status::FailedPrecondition(fmt::format("the head's store holds all of {}", it->name()));
  }
  if (held) blobs_->Release(CheckpointOwner(job->job_id(), manifest_id));
  stored->erase(it);
  return Status::Ok();
}

Status JobData::HoldOutputs(JobInfo* job, const std::string& manifest_id) {
  const bool held = HoldsOutputs(*job);
  ASSIGN_OR_RETURN(std::vector<std::string> ids, ManifestBlobs(manifest_id, !held));
  if (held) blobs_->Pin(OutputsOwner(job->job_id()), ids);
  job->set_outputs_manifest(manifest_id);
  return Status::Ok();
}

void JobData::Ended(const JobInfo& job) {
  if (!blobs_) return;
  blobs_->UnpinAll(PackageOwner(job.job_id()));
  for (const CheckpointRef& checkpoint : job.stored_checkpoints()) {
    blobs_->MakeSoft(CheckpointOwner(job.job_id(), checkpoint.manifest_id()));
  }
  blobs_->MakeSoft(OutputsOwner(job.job_id()));
}

void JobData::Delete(const JobInfo& job) {
  if (!blobs_) return;
  blobs_->Release(PackageOwner(job.job_id()));
  for (const CheckpointRef& checkpoint : job.stored_checkpoints()) {
    blobs_->Release(CheckpointOwner(job.job_id(), checkpoint.manifest_id()));
  }
  blobs_->Release(OutputsOwner(job.job_id()));
}

void JobData::Restore(JobInfo* record) {
  if (!blobs_) return;
  const JobInfo& job = *record;
  // False when the store lacks some of it: the record lets it go.
  auto hold = [&](const std::string& owner, const std::string& manifest, const std::string& what) {
    auto ids = ManifestBlobs(manifest, /*in_s3=*/false);
    if (!ids.ok()) {
      record->set_data_released(fmt::format("the head's store lacked {} when the head started again: {}", what,
                                            ids.status().message()));
      LOG_WARN("job {}: {}", job.job_id(), record->data_released());
      return false;
    }
    blobs_->Pin(owner, *ids);
    return true;
  };
  if (HoldsCheckpoints(job)) {
    auto* stored = record->mutable_stored_checkpoints();
    for (int i = stored->size() - 1; i >= 0; --i) {
      const CheckpointRef& checkpoint = stored->Get(i);
      if (!hold(CheckpointOwner(job.job_id(), checkpoint.manifest_id()), checkpoint.manifest_id(),
                "stored checkpoint " + checkpoint.name())) {
        stored->DeleteSubrange(i, 1);
      }
    }
  }
  if (!job.outputs_manifest().empty() && HoldsOutputs(job) &&
      !hold(OutputsOwner(job.job_id()), job.outputs_manifest(), "its outputs")) {
    record->clear_outputs_manifest();
  }
  bool ended = job.state() == SUCCEEDED || job.state() == FAILED || job.state() == STOPPED;
  if (ended) {
    Ended(job);
  } else {
    Status held = HoldPackage(job);
    if (!held.ok()) LOG_WARN("job {}: {}", job.job_id(), held.message());
  }
}

}  // namespace clusterd
