// Pid records that survive pid reuse.
#include <catch2/catch.hpp>

#include <unistd.h>

#include "common/process_record.h"

using namespace clusterd;

TEST_CASE("a process record names this very process, and a reused pid does not match", "[process]") {
  ProcessRecord me = ProcessRecord::Of(getpid());
  REQUIRE(me.pid == getpid());
  REQUIRE(me.start_time > 0);
  REQUIRE(me.session == getsid(0));
  REQUIRE(me.StillRunning());
  auto parsed = ProcessRecord::Parse(me.Format());
  REQUIRE(parsed.ok());
  REQUIRE(parsed->StillRunning());
  ProcessRecord reused = me;
  reused.start_time += 1;  // same pid, another process
  REQUIRE_FALSE(reused.StillRunning());
  REQUIRE(ProcessRecord::Of(1 << 22 | 7).pid == 0);  // no such process
}

TEST_CASE("records that would reach beyond one process group are refused", "[process]") {
  for (const char* bad : {"1 5 1", "0 5 1", "-1 5 1", "12", "12 x 3", "12 5 3 extra", ""}) {
    INFO(bad);
    REQUIRE_FALSE(ProcessRecord::Parse(bad).ok());
  }
  REQUIRE(ProcessRecord::Parse("1234 987654 1200\n").ok());
}
