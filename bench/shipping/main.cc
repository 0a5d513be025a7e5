// shipping_bench: a ~100 MiB working_dir shipped from a client machine to a
// rank on w1 (first submit, unchanged re-submit), against working_dir_mode:
// shared and against tar | nc, on three simulated machines; one markdown
// table. Needs root (namespaces). Exit code: 0 when everything was measured
// (targets met or not), 1 when some part could not measure, 2 on a bad flag.
#include <csignal>
#include <iostream>
#include <map>
#include <set>
#include <string>

#include "flags.h"
#include "shipping.h"

namespace {

const char* kUsage =
    "usage: shipping_bench [--trials N] [--small-files N] [--large-files N] [--total-mib N]\n";

}  // namespace

int main(int argc, char** argv) {
  // A closed stdout (run.sh | head) must not kill the run before its
  // machines are taken down. (An interrupted run leaves its daemons behind;
  // the next run's SimNetwork removes them with their namespaces.)
  std::signal(SIGPIPE, SIG_IGN);
  clusterd::bench::ShippingOptions options;
  std::set<std::string> parts;
  std::map<std::string, int*> numbers = {{"--trials", &options.trials},
                                         {"--small-files", &options.folder.small_files},
                                         {"--large-files", &options.folder.large_files},
                                         {"--total-mib", &options.folder.total_mib}};
  if (!clusterd::bench::ParseFlags(argc, argv, &parts, numbers) || !parts.empty()) {
    std::cerr << kUsage;
    return 2;
  }
  std::cerr << "shipping_bench: " << options.trials << " rounds (+1 warm-up) of first submit, unchanged re-submit, "
            << "shared, tar+nc" << std::endl;
  clusterd::bench::Report report;
  clusterd::bench::RunShipping(options, &report);
  std::cout << report.Format();
  std::cout << "\n" << report.missed() << " target(s) MISSED" << std::endl;
  return report.any_failed() ? 1 : 0;
}
