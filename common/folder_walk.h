// What both walks of a folder tree share: packing a job's working_dir
// (cli/working_dir_scan.h) and choosing a tree upload's entries
// (common/storage/tree_scan.cc). A walk reads each folder's names and only then
// enters its subfolders, never follows a symlink below the root, and turns
// an absolute symlink into the folder into a relative one, so that it works
// wherever the tree lands. What a walk keeps, skips and refuses is the
// caller's (FolderVisitor).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace clusterd {

class FolderVisitor {
 public:
  virtual ~FolderVisitor() = default;
  // Folder `rel` ("" the root) is open as `dir_fd`, before its names are
  // read (for a folder's own rules file, say). An error ends the walk.
  virtual Status OnFolder(int /*dir_fd*/, const std::string& /*rel*/) { return Status::Ok(); }
  // One name of a folder: `name` in `dir_fd`, `rel` from the root. Setting
  // *enter (false on entry) walks into `rel` once this folder's names are
  // all read; set it only for a folder. An error ends the walk.
  virtual Status OnName(int dir_fd, const std::string& name, const std::string& rel, bool* enter) = 0;
  // The error for folder `rel` that cannot be opened or listed (errno `err`).
  virtual Status Unreadable(const std::string& rel, int err) const = 0;
};

// Walks folder `rel` of `root` ("": the root itself, which may be reached
// through a symlink) and every folder under it that OnName enters.
Status WalkFolder(const std::string& root, const std::string& rel, FolderVisitor* visitor);

// An absolute path, lexically normalized, as components: "." and empty
// ones dropped, ".." taking the one before away ("/a/./b/../c" -> {a, c}).
std::vector<std::string> LexicalParts(const std::string& absolute);

// The relative target, from the folder of symlink `link` (relative to the
// root), that reaches absolute `target` when `target` lies under one of
// `roots` (each the root as LexicalParts, e.g. as given and symlink-
// resolved); nullopt when it lies under none.
std::optional<std::string> RelativeTargetInside(const std::string& link, const std::string& target,
                                                const std::vector<const std::vector<std::string>*>& roots);

// What a name that is no file, folder or symlink is, for a line saying it
// was skipped: "a FIFO", "a socket", "a device file".
const char* SpecialFileKind(mode_t mode);

// A stat time in nanoseconds since the epoch.
inline int64_t StatNanos(const timespec& t) { return int64_t{t.tv_sec} * 1000000000 + t.tv_nsec; }

}  // namespace clusterd
