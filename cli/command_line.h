// Parsing shared by every clusterctl command: the connection flags
// (--address, --token, --temp-dir, --timeout-ms), --json, and positionals.
// The call deadline is the config table's rpc_timeout_ms, which
// $CLUSTER_RPC_TIMEOUT_MS and then --timeout-ms override.
#pragma once

#include <boost/program_options.hpp>

#include <functional>
#include <string>
#include <vector>

#include "cli/client.h"

namespace clusterd::cli {

struct CommandLine {
  ClientOptions client;
  bool json = false;
  std::vector<std::string> positional;
};

// Parses args with the common flags plus `extra`. Returns an exit code
// (0 after --help, 2 on bad flags) or -1 to go on.
int ParseCommandLine(const std::string& command, const std::string& usage,
                     const std::vector<std::string>& args, boost::program_options::options_description extra,
                     size_t min_positional, size_t max_positional, CommandLine* out);

// --json, which sets line->json: for a command's `extra` flags.
boost::program_options::options_description JsonFlag(CommandLine* line);

// Prints "clusterctl: message" on stderr and returns 1.
int Fail(const Status& status);

}  // namespace clusterd::cli
