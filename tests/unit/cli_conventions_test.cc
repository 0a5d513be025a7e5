#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>

#include "cli/colour.h"
#include "cli/global_flags.h"

using namespace clusterd;
using namespace clusterd::cli;
using Args = std::vector<std::string>;

TEST_CASE("global flags before the command move behind it", "[cli]") {
  CHECK(*MoveGlobalFlags({"--address", "h:1", "status"}) == Args{"status", "--address", "h:1"});
  CHECK(*MoveGlobalFlags({"--address=h:1", "--json", "jobs", "--token", "t"}) ==
        Args{"jobs", "--address=h:1", "--json", "--token", "t"});
  CHECK(*MoveGlobalFlags({"logs", "job-1", "-f"}) == Args{"logs", "job-1", "-f"});
  CHECK(*MoveGlobalFlags({"--timeout-ms", "10", "--temp-dir", "/x", "job", "j"}) ==
        Args{"job", "--timeout-ms", "10", "--temp-dir", "/x", "j"});
  CHECK(MoveGlobalFlags({}).ok());

  auto unknown = MoveGlobalFlags({"--follow", "logs"});
  REQUIRE(!unknown.ok());
  CHECK(unknown.status().message().find("unknown flag '--follow' before the command") != std::string::npos);
  auto no_value = MoveGlobalFlags({"--address"});
  REQUIRE(!no_value.ok());
  CHECK(no_value.status().message() == "--address needs a value");
  auto no_command = MoveGlobalFlags({"--json"});
  REQUIRE(!no_command.ok());
  CHECK(no_command.status().message() == "no command after --json");
}

TEST_CASE("states are coloured as whole words only", "[cli]") {
  CHECK(ColourStates("a  ALIVE  DEAD\n") == "a  \x1b[32mALIVE\x1b[0m  \x1b[31mDEAD\x1b[0m\n");
  CHECK(ColourStates("RUNNING: FAILED_X xFAILED PENDINGS") == "\x1b[36mRUNNING\x1b[0m: FAILED_X xFAILED PENDINGS");
  CHECK(ColourStates("no states here") == "no states here");
}

TEST_CASE("no colour with NO_COLOR or off a terminal", "[cli]") {
  // The test's stdout is a pipe or a file under ctest: never a terminal.
  unsetenv("NO_COLOR");
  CHECK(ForStdout("ALIVE") == (UseColour(1) ? ColourStates("ALIVE") : "ALIVE"));
  setenv("NO_COLOR", "1", 1);
  CHECK(!UseColour(1));
  CHECK(ForStdout("ALIVE") == "ALIVE");
  setenv("NO_COLOR", "", 1);  // empty counts as unset (no-color.org)
  CHECK(UseColour(1) == (isatty(1) == 1));
  unsetenv("NO_COLOR");
}
