// The examples' main(): any error (a half-set environment, a missing data
// file, a dead peer) ends the program with one clear line and a non-zero
// status, which the node agent reports as the rank's exit.
#pragma once

#include <c10/util/Exception.h>

#include <cstdio>
#include <exception>

namespace examples {

inline int RunMain(const char* name, int (*run)(int, char**), int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const c10::Error& e) {  // libtorch's what() carries a C++ backtrace
    std::fprintf(stderr, "%s: error: %s\n", name, e.what_without_backtrace());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", name, e.what());
    return 1;
  }
}

}  // namespace examples
