// sharing_bench: what sharing the cluster costs. (1) The time from a
// high-priority submit to its ranks running when a running job must be
// preempted for it, and the work the preempted job loses, on simulated
// machines (needs root); (2) the scheduler's cost per decision with 10,000
// pending jobs from 100 users on 1,000 nodes, in-process. One markdown
// table. Exit code: 0 when everything was measured (targets met or not),
// 1 when some part could not measure, 2 on a bad flag.
#include <csignal>
#include <iostream>
#include <map>
#include <set>
#include <string>

#include "flags.h"
#include "sharing.h"

namespace {

const char* kUsage =
    "usage: sharing_bench [--only preemption,scheduler] [--trials N] [--grace-s S] [--nodes N] [--pending N]\n"
    "                     [--users N] [--decisions N]\n";

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);  // a closed stdout must not leave the machines up
  clusterd::bench::SharingOptions options;
  std::set<std::string> parts = {"preemption", "scheduler"};
  std::map<std::string, int*> numbers = {{"--trials", &options.trials},
                                         {"--grace-s", &options.grace_s},
                                         {"--nodes", &options.scheduler.nodes},
                                         {"--pending", &options.scheduler.pending},
                                         {"--users", &options.scheduler.users},
                                         {"--decisions", &options.scheduler.decisions}};
  if (!clusterd::bench::ParseFlags(argc, argv, &parts, numbers)) {
    std::cerr << kUsage;
    return 2;
  }
  clusterd::bench::Report report;
  if (parts.count("preemption")) clusterd::bench::RunPreemption(options, &report);
  if (parts.count("scheduler")) clusterd::bench::RunSchedulerCost(options, &report);
  std::cout << report.Format();
  std::cout << "\n" << report.missed() << " target(s) MISSED" << std::endl;
  return report.any_failed() ? 1 : 0;
}
