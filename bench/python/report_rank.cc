// report_rank: the report benchmark's C++ baseline, ctrain::report() of the same ten metrics as the
// Python rank's train.report(), from inside that rank (it inherits the rank's CLUSTER_AGENT_SOCKET,
// CLUSTER_JOB_ID and RANK), so both go to the same agent on the same socket. Compiled by run.py from
// train/report.cc and train/agent_wire.cc (no libtorch).
//   report_rank N OUT   N reports; OUT gets each one's latency in ns, one a line
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "ctrain/report.h"

static int64_t NowNs() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: report_rank N OUT\n");
    return 2;
  }
  int n = std::atoi(argv[1]);
  std::vector<int64_t> ns;
  ns.reserve(n);
  int failed = 0;
  for (int i = 0; i < n; ++i) {
    ctrain::Metrics m = {{"loss", 0.25 + i * 1e-6}, {"accuracy", 0.9},  {"lr", 1e-3},     {"epoch", double(i)},
                         {"step", double(i) * 100}, {"grad_norm", 1.5}, {"throughput", 1234.5},
                         {"val_loss", 0.3},         {"val_accuracy", 0.88}, {"time_this_iter_s", 0.01}};
    int64_t t0 = NowNs();
    if (!ctrain::report(m)) ++failed;
    ns.push_back(NowNs() - t0);
  }
  FILE* out = std::fopen(argv[2], "w");
  if (!out) return 1;
  for (int64_t v : ns) std::fprintf(out, "%lld\n", static_cast<long long>(v));
  std::fclose(out);
  if (failed) std::fprintf(stderr, "report_rank: %d reports not delivered\n", failed);
  return failed ? 1 : 0;
}
