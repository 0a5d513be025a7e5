// SkipTest (test_skip.h): Catch2 v2 has no skip, so a skipped test prints
// why and the process exits 77 (ctest's SKIP_RETURN_CODE) once Catch is done,
// unless something in the run failed.
#include "test_skip.h"

#include <cstdio>
#include <cstdlib>
#include <iostream>

// For the listener that sees the end of the run (outside catch_main.cc).
#define CATCH_CONFIG_EXTERNAL_INTERFACES
#include <catch2/catch.hpp>

namespace clusterd::testing {

namespace {

bool skipped = false;
bool run_failed = false;

// Knows, at the end of the run, whether anything failed.
struct SkipListener : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  void testRunEnded(const Catch::TestRunStats& stats) override {
    run_failed = stats.totals.assertions.failed > 0 || stats.totals.testCases.failed > 0 || stats.aborting;
  }
};
CATCH_REGISTER_LISTENER(SkipListener)

void ExitSkipped() {
  if (run_failed) return;
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::_Exit(77);
}

}  // namespace

void SkipTest(const std::string& why) {
  // Catch2 v2 has no skip. Exiting here would also end every test after this
  // one in a run of the whole binary, so the test returns and the process
  // exits with ctest's SKIP_RETURN_CODE once Catch is done.
  std::cout << "SKIPPED: " << why << std::endl;
  if (!skipped) std::atexit(ExitSkipped);
  skipped = true;
}

}  // namespace clusterd::testing
