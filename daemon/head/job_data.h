// What a job keeps in the head's blob store, and for how long: its code
// package while it lives; its stored checkpoints (the newest
// checkpoint.keep of them) and, once it succeeded, its outputs, until they
// are deleted or evicted to make room for newer work. Each is an owner in
// the store ("<job>/package", "<job>/checkpoint/<manifest>",
// "<job>/outputs"), hard while the job lives and soft once it has ended.
// Checkpoints or outputs a job keeps in an S3 location of its own
// (checkpoint.storage, outputs_storage) are recorded, never held here.
// NOT thread-safe: the head's event loop owns it (the store itself is).
#pragma once

#include <string>
#include <vector>

#include "cluster.pb.h"
#include "store.pb.h"
#include "common/status.h"
#include "daemon/store/blob_store.h"

namespace clusterd {

class JobData {
 public:
  // `blobs` may be null: a head without a store holds nothing.
  explicit JobData(BlobStore* blobs) : blobs_(blobs) {}

  bool has_store() const { return blobs_ != nullptr || external_; }
  // The blobs live in S3, which the head never reads (its event loop does
  // no network I/O): records are kept, nothing is checked or held, and
  // clearing old objects is the bucket's lifecycle rules' job.
  void set_external(bool external) { external_ = external; }

  // The package must be in the store; it is held until the job ends.
  Status HoldPackage(const JobInfo& job);
  // A complete checkpoint arrived: held, and added to job->stored_checkpoints;
  // the oldest beyond `keep` (0: all) are let go. Fails, changing nothing,
  // when the manifest or one of its pieces is not in the store.
  Status AddCheckpoint(JobInfo* job, const CheckpointRef& checkpoint, int keep);
  // A node could not restore stored checkpoint `manifest_id` because the
  // store lacks (a piece of) it: it is let go and taken off
  // job->stored_checkpoints, so that the next attempt restores the one
  // before. Unless the head's store holds it whole after all: then the
  // trouble was the node's, and it stays (FailedPrecondition). Where the
  // head holds nothing (S3) the node's word is taken. NotFound when the job
  // has no such stored checkpoint.
  Status DropLostCheckpoint(JobInfo* job, const std::string& manifest_id);
  // The job's outputs (a manifest): held, recorded on the job.
  Status HoldOutputs(JobInfo* job, const std::string& manifest_id);
  // The job ended: its package goes, its checkpoints and outputs stay until
  // room is needed.
  void Ended(const JobInfo& job);
  // Everything of the job is deleted now.
  void Delete(const JobInfo& job);
  // After a restart of the head: holds what the journalled record says. A
  // checkpoint or outputs the store no longer holds whole (its files went
  // while the head was down) leaves the record, which says so
  // (data_released), instead of being offered to retries and fetches.
  void Restore(JobInfo* job);

  // The job an owner string belongs to.
  static std::string JobOfOwner(const std::string& owner);
  static bool IsPackageOwner(const std::string& owner);

 private:
  // The manifest and its pieces, all present; else why not, and the pieces
  // that are there are marked unwanted in the store (the tree will not be
  // kept). In S3 (the cluster's or the job's own): the manifest id alone,
  // checked for form.
  Result<std::vector<std::string>> ManifestBlobs(const std::string& manifest_id, bool in_s3) const;
  Status MissingPiece(const Manifest& manifest, const std::string& manifest_id, const std::string& id) const;
  // Whether the job's checkpoints or outputs are held in the head's store.
  bool HoldsCheckpoints(const JobInfo& job) const;
  bool HoldsOutputs(const JobInfo& job) const;

  BlobStore* blobs_;
  bool external_ = false;
};

}  // namespace clusterd
