// What the benchmarks' stand-in training programs (bench/chaos/chaos_rank,
// bench/checkpoints/ckpt_rank) share: reading their environment, dying with
// a line on stderr, and the checkpoint folders they keep as
// ctrain::save_checkpoint does (checkpoint_NNNNNN, complete once meta.json
// is in it; the newest CLUSTER_CHECKPOINT_KEEP kept). Header-only: the
// ranks are static programs with nothing else of clusterd linked in.
#pragma once

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace clusterd::bench {

inline std::string Env(const char* name, const char* fallback = "") {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

// "PROGRAM: what: strerror(errno)" on stderr, exit 1. PROGRAM is argv[0]'s base name.
[[noreturn]] inline void Die(const std::string& what) {
  std::fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, what.c_str(), std::strerror(errno));
  std::exit(1);
}

inline void MakeDirs(const std::string& path) {
  for (size_t at = 1; at <= path.size(); ++at) {
    if (at == path.size() || path[at] == '/') {
      std::string part = path.substr(0, at);
      if (mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) Die("mkdir " + part);
    }
  }
}

inline std::string CheckpointName(long long epoch) {
  char name[32];
  std::snprintf(name, sizeof name, "checkpoint_%06lld", epoch);
  return name;
}

// The complete checkpoints in `dir` by name, oldest first (the names sort
// as their epochs).
inline std::vector<std::string> CompleteCheckpoints(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    struct stat st;
    if (name.rfind("checkpoint_", 0) == 0 && stat((dir + "/" + name + "/meta.json").c_str(), &st) == 0) {
      out.push_back(name);
    }
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

inline long long EpochOf(const std::string& checkpoint_name) {
  return std::strtoll(checkpoint_name.c_str() + 11, nullptr, 10);
}

// A checkpoint folder's files, then the folder.
inline void RemoveFolder(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") unlink((dir + "/" + name).c_str());
  }
  closedir(d);
  rmdir(dir.c_str());
}

// Removes all but the newest CLUSTER_CHECKPOINT_KEEP (default 2) complete checkpoints.
inline void KeepNewest(const std::string& dir) {
  std::vector<std::string> all = CompleteCheckpoints(dir);
  long keep = std::strtol(Env("CLUSTER_CHECKPOINT_KEEP", "2").c_str(), nullptr, 10);
  for (size_t i = 0; keep > 0 && i + static_cast<size_t>(keep) < all.size(); ++i) RemoveFolder(dir + "/" + all[i]);
}

}  // namespace clusterd::bench
