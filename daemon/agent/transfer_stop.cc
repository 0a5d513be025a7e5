#include "daemon/agent/transfer_stop.h"

#include <condition_variable>
#include <mutex>
#include <thread>

#include "common/logging.h"

namespace clusterd {

bool StopTransfersWithin(int grace_ms, const WaitableClock* clock, const std::function<void()>& stop,
                         const std::function<void()>& cancel) {
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  bool cancelled = false;
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(mutex);
    if (clock->WaitForMillis(finished, lock, grace_ms, [&] { return done; })) return;
    cancelled = true;
    lock.unlock();
    LOG_WARN("transfers to the head's store still under way {} s into the stop: cancelled", grace_ms / 1000);
    cancel();
  });
  stop();
  {
    std::lock_guard<std::mutex> lock(mutex);
    done = true;
  }
  finished.notify_all();
  watchdog.join();
  return cancelled;
}

}  // namespace clusterd
