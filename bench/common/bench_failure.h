// How a benchmark that cannot measure stops: a BenchFailure thrown from
// anywhere in its run, caught once in main, said on stderr with the
// benchmark's name, exit code 1 (a benchmark is not a test: no assertion
// library, and nothing printed as if it had measured).
#pragma once

#include <iostream>
#include <stdexcept>
#include <string>

#include "common/status.h"

namespace clusterd::bench {

struct BenchFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws BenchFailure naming `what` and why, unless `status` is OK.
inline void ThrowIfFailed(const Status& status, const std::string& what) {
  if (!status.ok()) throw BenchFailure(what + ": " + status.ToString());
}

// main's body: `run`, with a BenchFailure said on stderr as "NAME: why".
template <typename Run>
int RunReportingFailure(const char* name, Run run, int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const BenchFailure& failure) {
    std::cerr << name << ": " << failure.what() << "\n";
    return 1;
  }
}

}  // namespace clusterd::bench
