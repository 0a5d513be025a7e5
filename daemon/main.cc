// clusterd: `start` a head or a worker on this machine, `stop` them.
#include <csignal>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <absl/synchronization/mutex.h>
#include <fmt/format.h>

#include "clusterd_version.h"
#include "common/config.h"
#include "common/scrub_token.h"
#include "daemon/start_command.h"
#include "daemon/stop_command.h"

namespace {
// The default port is the config table's (common/config_def.h).
std::string Usage() {
  return fmt::format(
      "usage: clusterd <command> [flags]\n"
      "  {:<34}start a cluster's head on this machine\n"
      "  start --address HOST:PORT         join this machine to a cluster as a worker\n"
      "  stop [--force] [--grace-period S] stop this machine's clusterd daemons and their jobs\n"
      "  --version                         print the version\n"
      "Run `clusterd <command> --help` for a command's flags.\n",
      fmt::format("start --head [--port {}]", clusterd::Config().port));
}
}  // namespace

int main(int argc, char** argv) {
  // A peer that hangs up (a rank's report socket, a dashboard client) must
  // cost one write an EPIPE, not the daemon its life.
  signal(SIGPIPE, SIG_IGN);
  // Debian builds Abseil with its debug checks, so every absl::Mutex that
  // gRPC takes also updates a lock-order graph (GraphCycles), about 2% of
  // the head's CPU under 10,000 nodes' heartbeats. Release builds of
  // Abseil do not track it; neither do we.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  if (argc < 2) {
    std::cerr << Usage();
    return 2;
  }
  std::string command = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  clusterd::ScrubToken(argc, argv);  // `args` holds the copy the commands parse
  if (command == "start") return clusterd::StartCommand(args);
  if (command == "stop") return clusterd::StopCommand(args);
  if (command == "--version" || command == "version") {
    std::cout << "clusterd " << CLUSTERD_VERSION << "\n";
    return 0;
  }
  if (command == "--help" || command == "-h" || command == "help") {
    std::cout << Usage();
    return 0;
  }
  std::cerr << "clusterd: unknown command '" << command << "'\n" << Usage();
  return 2;
}
