// Where the daemon's own threads start: each with a name (as `top -H`,
// `ps -L` and perf show it, common/thread_name.h) and counted by that name
// while it runs, so that a test or /metrics can see which threads are
// alive and how many (a link's threads gone after Stop, one io thread per
// stream). Thread-safe.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <thread>

namespace clusterd {

// Starts `body` on a new thread named `name` (at most 15 characters, as
// Linux keeps them), counted under that name until `body` returns.
std::thread StartNamedThread(std::string name, std::function<void()> body);

// For a thread started elsewhere (an io_context's, a pool's): names the
// calling thread and counts it under `name` while the returned guard lives.
class CountedThread {
 public:
  explicit CountedThread(std::string name);
  ~CountedThread();
  CountedThread(const CountedThread&) = delete;
  CountedThread& operator=(const CountedThread&) = delete;

 private:
  std::string name_;
};

// The threads started here that still run, by name (names with none are left out).
std::map<std::string, int> RunningNamedThreads();

}  // namespace clusterd
