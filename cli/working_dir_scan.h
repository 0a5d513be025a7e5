// Walks a job's working_dir on the submitter's machine (DESIGN rule 11): what
// goes into its package, with the stat data the hash cache keys on. Applies
// the job's `excludes:` and the folder's .clusterignore files (common/
// ignore_rules.h), never follows symlinks and never enters an ignored folder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/text.h"  // HumanBytes, for messages about sizes
#include "common/storage/tree_entry.h"

namespace clusterd {

struct ScannedTree {
  std::string root;                   // absolute, as given (not symlink-resolved)
  std::vector<TreeEntry> entries;     // sorted by path, byte order; a folder before its contents
  uint64_t file_bytes = 0;            // the sum of the files' sizes
  size_t file_count = 0;
  std::vector<std::string> warnings;  // one line each: what was skipped and why
};

struct ScanOptions {
  std::vector<std::string> excludes;       // the job's `excludes:`, gitignore lines; they win
                                           // over .clusterignore files (IgnoreRules)
  uint64_t max_bytes = uint64_t{2} << 30;  // cap on file_bytes (the job's max_package_size)
};

// Errors, each one line naming the path (and nothing is packed): `root` is
// missing or not a folder (NotFound / InvalidArgument); a file or folder
// cannot be read (IOError); a symlink points out of the folder
// (InvalidArgument); the files add up to more than max_bytes, with the five
// largest named (ResourceExhausted). Sockets, FIFOs and devices are skipped
// with a line in `warnings`. Absolute symlinks into the folder come back
// rewritten as relative ones, so they work wherever the package lands.
Result<ScannedTree> ScanWorkingDir(const std::string& root, const ScanOptions& options);


}  // namespace clusterd
