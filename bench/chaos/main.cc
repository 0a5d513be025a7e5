// chaos: a bounded chaos run of clusterd on simulated machines (head, w1-w3,
// client; with --ha two heads, three etcd members and a radosgw instead of
// the head), printing one markdown table (chaos_run.h says what it does).
//   chaos [--ha] [--duration SECONDS] [--seed N] [--workers N]
// Exit: 0 when nothing was lost, wrong, stuck, leaked or crashed; 1 when
// something was (the lists under the table say what); 2 on a bad flag; 77
// (ctest's skip) where machines cannot be simulated (not root), or with
// --ha where etcd or Ceph is not installed.
#include <csignal>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "chaos_run.h"
#include "flags.h"
#include "machines.h"

namespace {

const char* kUsage = "usage: chaos [--ha] [--duration SECONDS] [--seed N] [--workers N]\n";

}  // namespace

int main(int argc, char** argv) {
  // A closed stdout (run.sh | head) must not kill the run before its
  // machines are taken down.
  std::signal(SIGPIPE, SIG_IGN);
  clusterd::bench::ChaosOptions options;
  std::string seed;
  std::set<std::string> parts;
  // --ha takes no value: taken out before the "--flag value" pairs are read.
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (i > 0 && std::string(argv[i]) == "--ha") {
      options.ha = true;
    } else {
      args.push_back(argv[i]);
    }
  }
  argc = static_cast<int>(args.size());
  argv = args.data();
  if (!clusterd::bench::ParseFlags(argc, argv, &parts, {{"--duration", &options.duration_s}, {"--workers", &options.workers}},
                                   {{"--seed", &seed}}) ||
      !parts.empty()) {
    std::cerr << kUsage;
    return 2;
  }
  try {
    options.seed = seed.empty() ? std::random_device()() : std::stoull(seed);
  } catch (const std::exception&) {
    std::cerr << "chaos: --seed takes a number, got '" << seed << "'\n" << kUsage;
    return 2;
  }
  std::string why_not;
  if (!clusterd::testing::SimNetwork::Available(&why_not)) {
    std::cout << "SKIPPED: " << why_not << std::endl;
    return 77;
  }
  options.rank_program = CHAOS_RANK_BIN;
  options.rpc_program = CHAOS_RPC_BIN;
  options.flood_program = CHAOS_FLOOD_BIN;
  options.report_flood_program = CHAOS_REPORT_FLOOD_BIN;
  options.queue_burst_program = CHAOS_QUEUE_BURST_BIN;
  std::cerr << "chaos: " << options.duration_s << " s, " << options.workers << " workers, "
            << (options.ha ? "two heads in HA" : "one head") << ", seed " << options.seed << std::endl;
  clusterd::bench::ChaosResult result = clusterd::bench::RunChaos(options);
  if (!result.skipped.empty()) {
    std::cout << "SKIPPED: " << result.skipped << std::endl;
    return 77;
  }
  std::cout << clusterd::bench::FormatResult(options, result) << std::flush;
  return result.Passed() ? 0 : 1;
}
