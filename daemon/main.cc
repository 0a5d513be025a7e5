// clusterd: `start` a head or a worker on this machine, `stop` them.
#include <iostream>
#include <string>
#include <vector>

#include "daemon/start_command.h"
#include "daemon/stop_command.h"

namespace {
const char* kUsage =
    "usage: clusterd <command> [flags]\n"
    "  start --head [--port 6379]        start a cluster's head on this machine\n"
    "  start --address HOST:PORT         join this machine to a cluster as a worker\n"
    "  stop [--force] [--grace-period S] stop this machine's clusterd daemons and their jobs\n"
    "Run `clusterd <command> --help` for a command's flags.\n";
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << kUsage;
    return 2;
  }
  std::string command = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  if (command == "start") return clusterd::StartCommand(args);
  if (command == "stop") return clusterd::StopCommand(args);
  if (command == "--help" || command == "-h" || command == "help") {
    std::cout << kUsage;
    return 0;
  }
  std::cerr << "clusterd: unknown command '" << command << "'\n" << kUsage;
  return 2;
}
