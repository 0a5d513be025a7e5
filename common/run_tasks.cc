#include "common/run_tasks.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace clusterd {

Status RunTasks(int workers, size_t count, const std::function<Status(size_t index)>& task) {
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mutex;
  Status first;
  auto work = [&] {
    while (!failed) {
      size_t index = next++;
      if (index >= count) return;
      Status status = task(index);
      if (!status.ok()) {
        std::lock_guard<std::mutex> lock(mutex);
        if (first.ok()) first = status;
        failed = true;
      }
    }
  };
  size_t threads = std::min<size_t>(static_cast<size_t>(std::max(workers, 1)), count);
  std::vector<std::thread> helpers;
  for (size_t i = 1; i < threads; ++i) {
    // Out of threads only means fewer at once; the work still gets done.
    try {
      helpers.emplace_back(work);
    } catch (const std::system_error&) {
      break;
    }
  }
  work();
  for (auto& helper : helpers) helper.join();
  return first;
}

}  // namespace clusterd
