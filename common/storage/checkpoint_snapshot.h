// A reported checkpoint folder, kept as it was for its upload: hard links
// of its files under <checkpoint dir>/.uploading/<name>. A program that
// prunes or replaces its checkpoints while an upload is under way (ctrain
// keeps checkpoint.keep of them; a paced upload of a large one takes
// seconds to minutes) removes its own folder only; the links keep the files
// for the upload. Without them, at 1 MiB/s with keep: 2, every checkpoint
// is pruned mid-upload and none is ever stored.
// A file rewritten in place (the same inode) still changes under the
// upload: the uploader notices that and tries again (tree_transfer.h).
#pragma once

#include <set>
#include <string>

#include "common/status.h"

namespace clusterd {

inline constexpr const char* kSnapshotFolder = ".uploading";

// Makes <checkpoint_dir>/.uploading/<name> hold what <checkpoint_dir>/<name>
// holds now, and returns <checkpoint_dir>/.uploading, the root to upload
// <name> from. A file already linked there (the same inode) is left as it
// is, so an unchanged checkpoint reported again keeps its hash cache
// entries; others are linked anew, and what the folder no longer holds goes.
// Symlinks are copied as symlinks; sockets and the like are left out.
// Errors (the caller then uploads from the folder itself): the folder is
// gone, or a file cannot be linked (another filesystem, no hard links).
Result<std::string> SnapshotCheckpoint(const std::string& checkpoint_dir, const std::string& name);
// Removes <checkpoint_dir>/.uploading/<name>, and .uploading once empty.
void RemoveSnapshot(const std::string& checkpoint_dir, const std::string& name);
// Removes every snapshot in <checkpoint_dir>/.uploading but those named.
void RemoveSnapshotsBut(const std::string& checkpoint_dir, const std::set<std::string>& names);

}  // namespace clusterd
