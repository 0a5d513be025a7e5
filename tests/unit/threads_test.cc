// common/threads.h: named threads are counted by name while they run.
#include <catch2/catch.hpp>

#include <pthread.h>

#include <atomic>
#include <string>
#include <thread>

#include "common/threads.h"
#include "eventually.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

int Running(const std::string& name) {
  auto running = RunningNamedThreads();
  auto it = running.find(name);
  return it == running.end() ? 0 : it->second;
}

}  // namespace

TEST_CASE("a named thread is counted under its name while it runs and named as the system shows it", "[threads]") {
  std::atomic<bool> release{false};
  std::string seen_name;
  std::thread a = StartNamedThread("threads-test", [&] {
    char name[16] = {};
    pthread_getname_np(pthread_self(), name, sizeof name);
    seen_name = name;
    while (!release) std::this_thread::yield();
  });
  std::thread b = StartNamedThread("threads-test", [&] {
    while (!release) std::this_thread::yield();
  });
  REQUIRE(Eventually([] { return Running("threads-test") == 2; }));
  release = true;
  a.join();
  b.join();
  CHECK(seen_name == "threads-test");
  CHECK(Running("threads-test") == 0);
  CHECK(RunningNamedThreads().count("threads-test") == 0);
}

TEST_CASE("a thread started elsewhere is counted while its guard lives", "[threads]") {
  std::thread t([] {
    CountedThread counted("threads-guard");
    CHECK(Running("threads-guard") == 1);
  });
  t.join();
  CHECK(Running("threads-guard") == 0);
}
