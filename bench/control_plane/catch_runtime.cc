// harness.cc reports through Catch's INFO/REQUIRE, so its object file needs
// Catch's implementation linked in; CATCH_CONFIG_RUNNER provides it without
// Catch's main() (the benchmark has its own). The bench never calls the
// REQUIRE-using helpers (Cluster::Status/StateOf); it uses HeadProbe instead.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
