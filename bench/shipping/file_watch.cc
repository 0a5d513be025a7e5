#include "file_watch.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>

namespace clusterd::bench {

namespace {

constexpr uint32_t kMask = IN_CREATE | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE;

int64_t RealtimeNow() {
  timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

}  // namespace

FileWatch::FileWatch() {
  fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd_ < 0 || pipe2(stop_pipe_, O_CLOEXEC) != 0) return;
  reader_ = std::thread([this] { ReadLoop(); });
}

FileWatch::~FileWatch() {
  if (reader_.joinable()) {
    char byte = 0;
    if (write(stop_pipe_[1], &byte, 1) < 0) {
    }
    reader_.join();
  }
  for (int fd : {fd_, stop_pipe_[0], stop_pipe_[1]}) {
    if (fd >= 0) close(fd);
  }
}

bool FileWatch::Watch(const std::string& path, const std::string& label, bool reads) {
  if (fd_ < 0) return false;
  int wd = inotify_add_watch(fd_, path.c_str(), kMask | (reads ? IN_ACCESS : 0) | IN_ONLYDIR);
  if (wd < 0) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  labels_.emplace_back(wd, label);
  return true;
}

std::optional<int64_t> FileWatch::First(const std::string& where, uint32_t mask, const std::string& part,
                                        int64_t since_ns) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const FileEvent& e : events_) {
    if (e.ns >= since_ns && e.where == where && (e.mask & mask) != 0 && e.name.find(part) != std::string::npos) {
      return e.ns;
    }
  }
  return std::nullopt;
}

void FileWatch::ReadLoop() {
  alignas(inotify_event) char buffer[64 * 1024];
  pollfd fds[2] = {{fd_, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
  while (true) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    ssize_t n = read(fd_, buffer, sizeof buffer);
    int64_t now = RealtimeNow();
    if (n <= 0) continue;
    std::lock_guard<std::mutex> lock(mutex_);
    for (ssize_t at = 0; at < n;) {
      const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
      at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
      std::string label;
      for (const auto& [wd, name] : labels_) {
        if (wd == event->wd) label = name;
      }
      if (label.empty() || (event->mask & (kMask | IN_ACCESS)) == 0) continue;
      events_.push_back({now, label, event->mask, event->len > 0 ? std::string(event->name) : ""});
    }
  }
}

}  // namespace clusterd::bench
