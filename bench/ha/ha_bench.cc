#include "ha_bench.h"

#include <optional>

#include <fmt/format.h>

#include "ha_heads.h"
#include "single_head.h"
#include "stats.h"

namespace clusterd::bench {

namespace {

struct Measure {
  const char* name;
  double FailoverTimes::*field;
  double target_ms;
};

const Measure kMeasures[] = {
    {"(a) a head answers clusterctl status", &FailoverTimes::answering_ms, 3000},
    {"(b) every worker registered with it", &FailoverTimes::registered_ms, 5000},
    {"(c) a job submitted at once: all 3 ranks running", &FailoverTimes::ranks_ms, 5000},
};

// The measured trials' samples; how many never stopped the clock.
Samples Of(const std::vector<FailoverTimes>& trials, const Measure& m, int* never) {
  Samples samples;
  *never = 0;
  for (const FailoverTimes& t : trials) {
    if (t.*m.field < 0) {
      ++*never;
    } else {
      samples.Add(t.*m.field);
    }
  }
  return samples;
}

}  // namespace

void RunHaBench(const HaBenchOptions& options, Report* report) {
  const std::chrono::milliseconds limit = std::chrono::seconds(options.limit_s);
  std::vector<FailoverTimes> single, ha;
  if (options.parts.count("single")) {
    std::string error;
    if (!RunSingleHeadTrials(options.trials, options.noop_rank, limit, &single, &error)) {
      report->Failed("single head", error);
    }
  }
  if (options.parts.count("ha")) {
    std::string error;
    if (!RunHaHeadsTrials(options.trials, options.noop_rank, limit, &ha, &error)) {
      report->Failed("HA heads", error);
    }
  }
  for (const Measure& m : kMeasures) {
    int single_never = 0, ha_never = 0;
    Samples base = Of(single, m, &single_never);
    Samples under = Of(ha, m, &ha_never);
    std::optional<double> base_median, base_max;
    if (!base.empty()) {
      base_median = base.Median();
      base_max = base.Max();
    }
    const std::string what = "single head restarted";
    if (!under.empty()) {
      report->Check(fmt::format("{}, median of {}", m.name, under.size()), under.Median(), "ms", m.target_ms,
                    base_median, what);
      report->Check(fmt::format("{}, max", m.name), under.Max(), "ms", m.target_ms, base_max, what);
    } else if (!base.empty()) {
      report->Info(fmt::format("{}, single head restarted, median of {}", m.name, base.size()), *base_median, "ms");
      report->Info(fmt::format("{}, single head restarted, max", m.name), *base_max, "ms");
    }
    if (ha_never > 0) {
      report->Failed("HA heads", fmt::format("{} of {} trials: {} never, within {} s", ha_never, ha.size(), m.name,
                                             options.limit_s));
    }
    if (single_never > 0) {
      report->Failed("single head", fmt::format("{} of {} trials: {} never, within {} s", single_never,
                                                single.size(), m.name, options.limit_s));
    }
  }
}

}  // namespace clusterd::bench
