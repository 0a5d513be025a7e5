// checkpoints_bench: how fast a job gets back to work from its checkpoint
// when rank 0's machine dies, what uploading checkpoints costs training, and
// what re-uploading an unchanged one costs, against cp and tar | nc, on five
// simulated machines; one markdown table. Needs root (namespaces). Exit
// code: 0 when everything was measured (targets met or not), 1 when some
// part could not measure, 2 on a bad flag.
#include <csignal>
#include <iostream>
#include <map>
#include <set>
#include <string>

#include "checkpoints.h"
#include "flags.h"

namespace {

const char* kUsage =
    "usage: checkpoints_bench [--only failover,power_loss,upload] [--trials N] [--power-loss N]\n"
    "                         [--small-mib N] [--large-mib N] [--rounds N] [--baseline-ms N] [--warm N]\n"
    "                         [--copies N] [--node-timeout-ms N] [--core-per-machine 1]\n"
    "                         [--paced-only 1]\n";

}  // namespace

int main(int argc, char** argv) {
  // A closed stdout (run.sh | head) must not kill the run before its
  // machines are taken down.
  std::signal(SIGPIPE, SIG_IGN);
  clusterd::bench::CheckpointOptions options;
  std::set<std::string> parts = options.parts;
  std::map<std::string, int*> numbers = {{"--trials", &options.trials},
                                         {"--power-loss", &options.power_loss},
                                         {"--small-mib", &options.small_mib},
                                         {"--large-mib", &options.large_mib},
                                         {"--rounds", &options.rounds},
                                         {"--baseline-ms", &options.baseline_ms},
                                         {"--warm", &options.warm},
                                         {"--copies", &options.copies},
                                         {"--node-timeout-ms", &options.node_timeout_ms},
                                         {"--core-per-machine", &options.core_per_machine},
                                         {"--paced-only", &options.paced_only}};
  if (!clusterd::bench::ParseFlags(argc, argv, &parts, numbers)) {
    std::cerr << kUsage;
    return 2;
  }
  for (const std::string& part : parts) {
    if (!options.parts.count(part)) {
      std::cerr << "checkpoints_bench: no part '" << part << "'\n" << kUsage;
      return 2;
    }
  }
  options.parts = parts;
  std::cerr << "checkpoints_bench: " << options.trials << " failover trials each of " << options.small_mib
            << " and " << options.large_mib << " MiB; " << options.rounds << " uploads of " << options.large_mib
            << " MiB while stepping; re-upload; cp and tar+nc" << std::endl;
  clusterd::bench::Report report;
  clusterd::bench::RunCheckpoints(options, &report);
  std::cout << report.Format();
  std::cout << "\n" << report.missed() << " target(s) MISSED" << std::endl;
  return report.any_failed() ? 1 : 0;
}
