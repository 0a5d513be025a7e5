// One entry of a folder tree as clusterd moves it between machines: what
// clusterctl scans in a working_dir (cli/working_dir_scan.h) and what a
// node's package cache indexes of an unpacked package (daemon/agent/tree_link.h).
#pragma once

#include <cstdint>
#include <string>

namespace clusterd {

enum class EntryType { kFile, kDir, kSymlink };

struct TreeEntry {
  std::string path;  // relative to the root, '/'-separated, no "./"
  EntryType type = EntryType::kFile;
  uint32_t mode = 0;  // permission bits (0777): setuid, setgid and sticky are not carried
  uint64_t size = 0;  // a file's bytes; 0 for folders and symlinks
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  uint64_t dev = 0;
  uint64_t ino = 0;
  std::string link_target;  // symlinks: relative, resolving inside the root
  std::string sha256;       // files: content hash; empty until hashed (package_builder.h)
};

}  // namespace clusterd
