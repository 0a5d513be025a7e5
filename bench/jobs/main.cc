// jobs_bench: submit -> ranks running against torchrun, and the scheduler's
// throughput over 10,000 queued jobs, against real clusterd processes; one
// markdown table. Exit code: 0 when everything was measured (targets met or
// not), 1 when some part could not measure, 2 on a bad flag.
#include <cstdlib>
#include <iostream>
#include <map>
#include <set>
#include <string>

#include "flags.h"
#include "sections.h"

namespace {

const char* kUsage =
    "usage: jobs_bench [--only latency,throughput,throughput_ha] [--trials N] [--torchrun-trials N] [--jobs N]\n"
    "                  [--submit-threads N] [--cpus-per-node N] [--drain-limit-s S] [--placement PACK|SPREAD]\n";

}  // namespace

int main(int argc, char** argv) {
  clusterd::bench::JobsOptions options;
  std::set<std::string> parts = {"latency", "throughput"};
  std::map<std::string, int*> numbers = {{"--trials", &options.trials},
                                         {"--torchrun-trials", &options.torchrun_trials},
                                         {"--jobs", &options.jobs},
                                         {"--submit-threads", &options.submit_threads},
                                         {"--cpus-per-node", &options.cpus_per_node},
                                         {"--drain-limit-s", &options.drain_limit_s}};
  std::map<std::string, std::string*> strings = {{"--placement", &options.placement}};
  if (!clusterd::bench::ParseFlags(argc, argv, &parts, numbers, strings)) {
    std::cerr << kUsage;
    return 2;
  }

  clusterd::bench::Report report;
  if (parts.count("latency")) {
    std::cerr << "jobs_bench: 1. submit -> ranks running, " << options.trials << " trials (+1 warm-up), torchrun "
              << options.torchrun_trials << std::endl;
    clusterd::bench::RunLatency(options, &report);
  }
  if (parts.count("throughput")) {
    std::cerr << "jobs_bench: 2. throughput, " << options.jobs << " jobs" << std::endl;
    clusterd::bench::RunThroughput(options, &report);
  }
  if (parts.count("throughput_ha")) {  // only when asked for: it needs etcd and Ceph
    std::cerr << "jobs_bench: 3. throughput through a head in HA against a single head, " << options.jobs << " jobs"
              << std::endl;
    clusterd::bench::RunThroughputHa(options, &report);
  }
  std::cout << report.Format();
  std::cout << "\n" << report.missed() << " target(s) MISSED" << std::endl;
  return report.any_failed() ? 1 : 0;
}
