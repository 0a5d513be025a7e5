// Wakes the node agent's loop as soon as its launcher reports (a rank
// ended), not at its next poll: a short job would otherwise hold its slot
// up to a poll longer. Follows the launcher across restarts: Follow, called
// from every tick, watches the launcher's current descriptor, and a
// descriptor that closed stops waking the loop.
// Not thread-safe: used only on the loop that runs `context`.
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <functional>
#include <optional>

#include "daemon/agent/launcher.h"

namespace clusterd {

class LauncherWakeup {
 public:
  // Called on the loop when the launcher's descriptor turns readable; it
  // takes what the launcher says (Reap). Returns false to stop watching.
  using ReadyFn = std::function<bool()>;

  // REQUIRES: context and launcher outlive this object.
  LauncherWakeup(boost::asio::io_context& context, Launcher* launcher, ReadyFn on_ready);

  // Watches the launcher's ReadyFd() unless that very descriptor is watched
  // already; with none, watches nothing (the loop's poll goes on).
  void Follow();
  // Stops watching and closes the copy it holds.
  void Close() { watch_.reset(); }
  bool watching() const { return watch_.has_value(); }

 private:
  void Arm();
  // Whether `fd` is a descriptor, and the socket it names is the one watched.
  bool IsWatched(int fd) const;

  boost::asio::io_context& context_;
  Launcher* const launcher_;
  const ReadyFn on_ready_;
  std::optional<boost::asio::posix::stream_descriptor> watch_;  // a dup of ReadyFd()
  ino_t watched_inode_ = 0;                                      // which socket it is
};

}  // namespace clusterd
