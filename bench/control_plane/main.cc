// control_plane_bench: runs the start-up, death-detection, load, restart and
// usage-history parts against real clusterd processes (the last in process)
// and prints one markdown table.
// Exit code: 0 when everything was measured (targets missed or not),
// 1 when some part could not measure, 2 on a bad flag.
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <set>
#include <string>

#include "flags.h"
#include "sections.h"

namespace {

const char* kUsage =
    "usage: control_plane_bench [--only startup,death,load,restart,usage] [--startup-runs N] [--death-trials N]\n"
    "                           [--nodes N] [--keepalive-ms N] [--tls 1] [--ha 1] [--window-s S]\n"
    "                           [--status-calls N] [--restart-finished N] [--restart-pending N]\n"
    "                           [--usage-nodes N] [--usage-gpus N]\n"
    "CONTROL_PLANE_PERF=FILE: the load part's window runs `perf record -g` on the head into FILE\n";

}  // namespace

int main(int argc, char** argv) {
  using clusterd::bench::BenchOptions;
  BenchOptions options;
  std::set<std::string> parts = {"startup", "death", "load", "restart", "usage"};
  std::map<std::string, int*> numbers = {
      {"--startup-runs", &options.startup_runs}, {"--death-trials", &options.death_trials},
      {"--nodes", &options.nodes},
      {"--window-s", &options.window_s},         {"--status-calls", &options.status_calls},
      {"--keepalive-ms", &options.keepalive_ms}, {"--tls", &options.tls}, {"--ha", &options.ha},
      {"--restart-finished", &options.restart_finished}, {"--restart-pending", &options.restart_pending},
      {"--usage-nodes", &options.usage_nodes}, {"--usage-gpus", &options.usage_gpus}};
  if (!clusterd::bench::ParseFlags(argc, argv, &parts, numbers)) {
    std::cerr << kUsage;
    return 2;
  }
  if (options.nodes < 4) options.nodes = 4;  // 3 of them are the status baseline

  clusterd::bench::Report report;
  if (parts.count("startup")) {
    std::cerr << "control_plane_bench: (a) start-up, " << options.startup_runs << " runs" << std::endl;
    clusterd::bench::RunStartup(options, &report);
  }
  if (parts.count("death")) {
    std::cerr << "control_plane_bench: (b) death detection, " << options.death_trials << " trials each" << std::endl;
    clusterd::bench::RunDeath(options, &report);
  }
  if (parts.count("load")) {
    std::cerr << "control_plane_bench: (c) " << options.nodes << " simulated nodes"
              << (options.ha ? ", the head in HA" : "") << std::endl;
    clusterd::bench::RunLoad(options, &report);
  }
  if (parts.count("restart")) {
    std::cerr << "control_plane_bench: (d) restart with " << options.restart_finished << " finished and "
              << options.restart_pending << " pending jobs in the journal" << std::endl;
    clusterd::bench::RunRestart(options, &report);
  }
  if (parts.count("usage")) {
    std::cerr << "control_plane_bench: (e) usage history, " << options.usage_nodes << " nodes x "
              << options.usage_gpus << " GPUs" << std::endl;
    clusterd::bench::RunUsage(options, &report);
  }
  std::cout << report.Format();
  std::cout << "\n" << report.missed() << " target(s) MISSED" << std::endl;
  return report.any_failed() ? 1 : 0;
}
