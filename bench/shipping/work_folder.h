// The working_dir the shipping benchmark submits: many small source-like
// files in nested folders, a few large incompressible ones, and the rank
// program itself, about `total_mib` MiB in all. Generated from a fixed seed,
// so every run ships the same bytes.
#pragma once

#include <cstdint>
#include <string>

namespace clusterd::bench {

struct FolderSpec {
  int small_files = 2000;    // 0.5 to 4.5 KiB each, in 10 x 10 nested folders
  int large_files = 4;       // random bytes; they make up the rest of total_mib
  int total_mib = 100;
  uint64_t seed = 20261122;
  std::string rank_program;  // copied in as bin/noop_rank (mode 0755)
};

struct FolderStats {
  int files = 0;  // regular files, the rank program included
  int dirs = 0;
  uint64_t bytes = 0;        // all files' content
  uint64_t large_bytes = 0;  // the large files' share
};

// Writes the folder at `root` (a path of this process; it must not exist).
// False with the reason in *error when a write fails.
bool GenerateFolder(const std::string& root, const FolderSpec& spec, FolderStats* stats, std::string* error);

}  // namespace clusterd::bench
