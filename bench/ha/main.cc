// ha_bench: failover of HA heads against a single head's restart, on
// simulated machines (run.sh says what runs where); one markdown table.
//   ha_bench [--trials N] [--only single,ha] [--limit-s N]
// Exit: 0 when everything was measured (targets met or not), 1 when some
// part could not measure, 2 on a bad flag, 77 where machines cannot be
// simulated (not root).
#include <csignal>
#include <iostream>
#include <set>
#include <string>

#include "flags.h"
#include "ha_bench.h"
#include "machines.h"

namespace {

const char* kUsage = "usage: ha_bench [--trials N] [--only single,ha] [--limit-s N]\n";

}  // namespace

int main(int argc, char** argv) {
  // A closed stdout (run.sh | head) must not kill the run before its
  // machines are taken down.
  std::signal(SIGPIPE, SIG_IGN);
  clusterd::bench::HaBenchOptions options;
  std::set<std::string> parts = options.parts;
  if (!clusterd::bench::ParseFlags(argc, argv, &parts,
                                   {{"--trials", &options.trials}, {"--limit-s", &options.limit_s}})) {
    std::cerr << kUsage;
    return 2;
  }
  for (const std::string& part : parts) {
    if (!options.parts.count(part)) {
      std::cerr << "ha_bench: no part '" << part << "'\n" << kUsage;
      return 2;
    }
  }
  options.parts = parts;
  std::string why_not;
  if (!clusterd::testing::SimNetwork::Available(&why_not)) {
    std::cout << "SKIPPED: " << why_not << std::endl;
    return 77;
  }
  options.noop_rank = NOOP_RANK_BIN;
  std::cerr << "ha_bench: " << options.trials << " trials each" << std::endl;
  clusterd::bench::Report report;
  clusterd::bench::RunHaBench(options, &report);
  std::cout << report.Format();
  std::cout << "\n" << report.missed() << " target(s) MISSED" << std::endl;
  return report.any_failed() ? 1 : 0;
}
