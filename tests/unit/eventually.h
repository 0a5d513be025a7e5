// Waits for something another thread does: polls `fn` until it holds. The
// limit is only an outer bound for a loaded machine, never what a test
// measures.
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace clusterd::testing {

inline bool Eventually(const std::function<bool()>& fn, std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!fn()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace clusterd::testing
