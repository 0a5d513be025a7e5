// Folders through the head's blob store (DESIGN rule 11): a checkpoint or a
// job's outputs goes up as the pieces of its files plus a manifest
// (proto/store.proto) naming them, and comes back on any machine from the
// manifest's id. A piece the store already holds is never sent again, so an
// unchanged file (a frozen backbone) costs one id in one MissingBlobs call.
// Bytes are streamed piece by piece with pread/pwrite, never a whole file in
// memory. Errors are one line naming the file or blob and the head.
// Thread-safe: calls share nothing but the BlobStorage (itself thread-safe).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/storage/blob_storage.h"
#include "common/status.h"
#include "store.pb.h"

namespace clusterd {

class HashCache;

struct TreeUploadOptions {
  int64_t chunk_bytes = 0;  // bytes per piece (the last of a file may be shorter); 0: the store's PieceBytes()
  int parallel = 2;                        // pieces hashed, and PutBlob streams, at once
  // Optional, loaded for `root` (HashCache::Load(dir, root)): files whose
  // stat stamp is unchanged are not read to hash. Used from the calling
  // thread only; the caller Save()s it.
  HashCache* cache = nullptr;
  // (bytes sent, bytes to send): the pieces the store lacked. Called from
  // worker threads, one call at a time.
  BlobStorage::ProgressFn progress;
};

struct UploadedTree {
  std::string manifest_id;
  int64_t files = 0;
  int64_t bytes = 0;         // the files' bytes
  int64_t hashed_bytes = 0;  // read to hash: 0 when the cache knew every file
  int64_t sent_bytes = 0;    // pieces the store lacked (the manifest not counted)
  std::vector<std::string> missing;  // asked-for paths that do not exist
  std::vector<std::string> skipped;  // one line each: sockets, FIFOs and devices left out
};

// Uploads `paths` under folder `root` as one manifest: each a file, symlink
// or folder (taken whole), relative to `root` ("" or "." for all of it). The
// manifest holds them at the same relative paths, with their parent
// folders. Symlinks are kept as symlinks, never followed; an absolute one
// into `root` becomes relative. Hashes every piece, asks the store once
// which it lacks, sends those (`parallel` streams), then the manifest, so
// the manifest's id names a complete tree once it is stored.
// A path that does not exist goes to `missing`, not an error.
// Errors: InvalidArgument for a path that is absolute or climbs out with
// "..", lies under a symlink, or a symlink that points out of `root`;
// NotFound when `root` is not a folder; IOError for a file that cannot be
// read or that changed while it was uploaded (ChangedUnderUpload); the
// store's errors.
Result<UploadedTree> UploadTree(BlobStorage& store, const std::string& root, const std::vector<std::string>& paths,
                                const TreeUploadOptions& options = {});

// Whether UploadTree failed because a file changed under it: a checkpoint
// folder that its program still writes to after reporting it, worth
// another try once it settles.
bool ChangedUnderUpload(const Status& status);

// Fetches manifest `manifest_id` and checks it with CheckManifest.
Result<Manifest> ReadManifest(BlobStorage& store, const std::string& manifest_id);

// A manifest's entries come from the network, so they are untrusted:
// InvalidArgument, naming the entry, unless every path is relative and
// clean (no "", ".", ".." or empty component), appears once and has its
// parent folder listed before it; every file has exactly the pieces its
// size needs, named by ids; and every symlink's target is relative and
// resolves inside the tree, also through the tree's other symlinks.
Status CheckManifest(const Manifest& manifest);

// The distinct blobs a manifest's files are made of, in order (not the
// manifest's own id): what the head pins for a stored checkpoint or outputs.
std::vector<std::string> BlobsOf(const Manifest& manifest);

struct TreeDownloadOptions {
  int parallel = 0;  // pieces fetched at once; 0: the store's ParallelReads()
  // (bytes written, the files' bytes). Called from worker threads, one call at a time.
  BlobStorage::ProgressFn progress;
};

// Restores manifest `manifest_id` as the new folder `dest` (whose parent
// must exist): built in a hidden folder beside it (".NAME.restore-*") and
// renamed into place only when complete and synced, so a half-restored
// checkpoint is never seen under a checkpoint_* name. On error nothing is
// left behind (a crash can leave the hidden folder). Pieces are checked
// against their ids as they arrive (Corruption naming blob and file).
// AlreadyExists when `dest` exists, or appears meanwhile.
Status DownloadTree(BlobStorage& store, const std::string& manifest_id, const std::string& dest,
                    const TreeDownloadOptions& options = {});

// Writes manifest `manifest_id`'s entries into the existing folder `dest`
// (a job's outputs into the submitter's working_dir). Every file and
// symlink is written under a temporary name first and renamed over the old
// one only once all of them arrived; folders are made where missing, and
// everything else in `dest` is left alone. `dest` itself may be reached
// through a symlink; nothing below it is followed. A folder where a file
// goes, or a non-folder where a folder goes, fails before any byte moves.
// On error nothing is replaced and the folders it made are removed again,
// unless the error came while renaming (then the files renamed so far are
// complete new ones).
Status DownloadInto(BlobStorage& store, const std::string& manifest_id, const std::string& dest,
                    const TreeDownloadOptions& options = {});

}  // namespace clusterd
