#include "ctrain/preemption.h"

#include <signal.h>
#include <sys/stat.h>

#include <atomic>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <string>

namespace ctrain {

namespace {

// What the notice file last held, by its inode (the node renames a new
// file into place), change time and size: a rank that polls every step
// reads it once.
struct NoticeCache {
  std::mutex mutex;
  bool seen = false;
  struct timespec changed {};
  off_t size = -1;
  ino_t inode = 0;
  std::optional<std::chrono::system_clock::time_point> deadline;
};

NoticeCache& Cache() {
  static NoticeCache cache;
  return cache;
}

std::atomic<bool> sigterm_seen{false};

void OnSigterm(int) { sigterm_seen.store(true); }

}  // namespace

void catch_sigterm() {
  struct sigaction action {};
  action.sa_handler = OnSigterm;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &action, nullptr);
}

bool sigterm_received() { return sigterm_seen.load(); }

std::optional<std::chrono::system_clock::time_point> preemption() {
  const char* path = std::getenv("CLUSTER_PREEMPTION_FILE");
  if (path == nullptr || *path == '\0') return std::nullopt;
  struct stat st {};
  if (::stat(path, &st) != 0) return std::nullopt;  // no notice
  NoticeCache& cache = Cache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  if (cache.seen && cache.inode == st.st_ino && cache.size == st.st_size && cache.changed.tv_sec == st.st_ctim.tv_sec &&
      cache.changed.tv_nsec == st.st_ctim.tv_nsec) {
    return cache.deadline;
  }
  // The node writes it whole (a rename): its first word is the deadline in unix ms.
  std::ifstream in(path);
  int64_t deadline_ms = 0;
  if (!(in >> deadline_ms) || deadline_ms <= 0) return std::nullopt;
  cache.seen = true;
  cache.size = st.st_size;
  cache.inode = st.st_ino;
  cache.changed = st.st_ctim;
  cache.deadline = std::chrono::system_clock::time_point(std::chrono::milliseconds(deadline_ms));
  return cache.deadline;
}

}  // namespace ctrain
