// Sees files come and go in folders of the simulated machines (inotify on
// their HostPath), so that the shipping benchmark can tell where a first
// submit's time goes without touching the product: the package being built
// and renamed on the client, stored on the head, fetched and unpacked on the
// worker. Each event is stamped (CLOCK_REALTIME) when the watcher's thread
// reads it, so a stamp is late by that thread's wake-up (about 0.1 ms on an
// idle machine, a few ms on a busy one) and events read in one batch share one.
// Thread-safe.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace clusterd::bench {

struct FileEvent {
  int64_t ns = 0;      // CLOCK_REALTIME when read
  std::string where;   // the label given to Watch
  uint32_t mask = 0;   // IN_CREATE, IN_CLOSE_WRITE, IN_MOVED_FROM, IN_MOVED_TO, IN_DELETE, IN_ACCESS
  std::string name;    // the entry's name in the watched folder
};

class FileWatch {
 public:
  FileWatch();   // starts the reading thread
  ~FileWatch();  // stops it
  FileWatch(const FileWatch&) = delete;
  FileWatch& operator=(const FileWatch&) = delete;

  // Watches the entries of folder `path` (not recursively) for files made,
  // written, renamed and removed, and also read when `reads`; false when it
  // cannot (a missing folder).
  bool Watch(const std::string& path, const std::string& label, bool reads = false);

  // The first event at or after `since_ns` at `where` whose mask has a bit
  // of `mask` and whose name contains `part` ("" matches any name).
  std::optional<int64_t> First(const std::string& where, uint32_t mask, const std::string& part,
                               int64_t since_ns) const;

 private:
  void ReadLoop();

  int fd_ = -1;
  int stop_pipe_[2] = {-1, -1};
  mutable std::mutex mutex_;
  std::vector<std::pair<int, std::string>> labels_;  // watch descriptor -> label
  std::vector<FileEvent> events_;
  std::thread reader_;
};

}  // namespace clusterd::bench
