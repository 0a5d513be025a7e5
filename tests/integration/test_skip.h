// Test-runner glue shared by the tests that need something this machine may
// lack (simulated machines, Ceph): they skip with a reason instead of failing.
#pragma once

#include <string>

namespace clusterd::testing {

// Prints "SKIPPED: why" and makes the process exit with 77 (ctest's
// SKIP_RETURN_CODE) once the run is over, unless something failed. The rest
// of the run still goes on; the caller returns from its test.
void SkipTest(const std::string& why);

}  // namespace clusterd::testing
