// tune_epochs_bench: how much of a sweep ASHA can save at best, whatever
// runs the trials. The sweep of tune_wall_bench (12 trials, max_t 4, grace
// 1, 3 trials at a time) is replayed many times through the head's own
// Asha class on a simulated clock: trials are admitted in order into free
// slots, an epoch takes a fixed time, each report goes to Asha, and a
// stopped or finished trial frees its slot for the next. Each replay draws
// new trial qualities; the same draws run again with no scheduler as the
// baseline. Nothing here waits or starts a process: this is the ceiling on
// what the scheduler's rule allows, against which tune_wall_bench's
// measured wall time is read.
//
// Two cost models: every epoch costs the same, and the one tune_wall_bench
// runs into (half the trials, the better ones, take 3x as long an epoch:
// hidden 512 against hidden 128).
//   tune_epochs_bench [--sweeps 10000] [--trials 12] [--slots 3] [--max-t 4] [--reduction-factor 3]
#include <algorithm>
#include <iostream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "daemon/head/asha.h"
#include "flags.h"
#include "report.h"

using namespace clusterd;

namespace {

struct Sweep {
  int trials = 12;
  int slots = 3;
  int max_t = 4;
  int reduction_factor = 3;
};

// A trial as the simulation sees it: how good it is (its reports go up
// with it) and how long one of its epochs takes.
struct Trial {
  double quality = 0;
  double epoch_cost = 1;
};

struct Outcome {
  int epochs = 0;        // reports over every trial
  double work = 0;       // epoch costs summed: the CPU a sweep takes
  double makespan = 0;   // first admission to the last trial's end
};

// Runs the trials in order on `slots` slots; under ASHA when `asha`, else
// each to max_t.
Outcome Run(const Sweep& sweep, const std::vector<Trial>& trials, bool asha) {
  AshaSpec spec;
  spec.set_time_attr("training_iteration");
  spec.set_max_t(sweep.max_t);
  spec.set_grace_period(1);
  spec.set_reduction_factor(sweep.reduction_factor);
  Asha scheduler(spec, false);
  struct Running {
    int trial;
    int done;      // epochs finished
    double next;   // when its next epoch ends
  };
  std::vector<Running> running;
  Outcome outcome;
  int admitted = 0;
  double now = 0;
  auto admit = [&] {
    while (static_cast<int>(running.size()) < sweep.slots && admitted < static_cast<int>(trials.size())) {
      running.push_back({admitted, 0, now + trials[static_cast<size_t>(admitted)].epoch_cost});
      ++admitted;
    }
  };
  admit();
  while (!running.empty()) {
    // The next epoch to end; ties go to the trial admitted first, as the
    // head would read them in arrival order.
    auto first = std::min_element(running.begin(), running.end(), [](const Running& a, const Running& b) {
      return a.next != b.next ? a.next < b.next : a.trial < b.trial;
    });
    now = first->next;
    const Trial& trial = trials[static_cast<size_t>(first->trial)];
    ++first->done;
    ++outcome.epochs;
    outcome.work += trial.epoch_cost;
    // Reports rise a little with each epoch, by trial quality.
    const double value = trial.quality + 0.01 * first->done;
    bool ends = first->done >= sweep.max_t;
    if (asha && !ends) ends = scheduler.OnResult(first->trial, first->done, value).action != Asha::Action::kContinue;
    if (ends) {
      running.erase(first);
      admit();
    } else {
      first->next = now + trial.epoch_cost;
    }
  }
  outcome.makespan = now;
  return outcome;
}

struct Shares {
  double epochs = 0, work = 0, makespan = 0;
  int makespan_at_most_half = 0;
  int sweeps = 0;
};

Shares Replay(const Sweep& sweep, int sweeps, bool costly_better, std::mt19937_64* rng) {
  std::uniform_real_distribution<double> uniform(0, 1);
  Shares shares;
  for (int s = 0; s < sweeps; ++s) {
    std::vector<Trial> trials(static_cast<size_t>(sweep.trials));
    for (size_t i = 0; i < trials.size(); ++i) {
      trials[i].quality = uniform(*rng);
      // Grid values alternate in submission order (a sample's grid points
      // are consecutive trials), as the sweep's trials are made.
      if (costly_better && i % 2 == 1) {
        trials[i].epoch_cost = 3;
        trials[i].quality += 0.5;
      }
    }
    const Outcome asha = Run(sweep, trials, true);
    const Outcome none = Run(sweep, trials, false);
    shares.epochs += static_cast<double>(asha.epochs) / none.epochs;
    shares.work += asha.work / none.work;
    shares.makespan += asha.makespan / none.makespan;
    shares.makespan_at_most_half += asha.makespan <= 0.5 * none.makespan;
    ++shares.sweeps;
  }
  return shares;
}

void AddRows(bench::Report* report, const std::string& model, const Shares& shares) {
  const double n = shares.sweeps;
  report->Info(model + ": epochs run under ASHA (x no scheduler), mean", shares.epochs / n, "x");
  report->Info(model + ": work (epochs x their cost) under ASHA (x no scheduler), mean", shares.work / n, "x");
  report->Check(model + ": makespan under ASHA (x no scheduler), mean", shares.makespan / n, "x", 0.5, std::nullopt,
                "");
  report->Info(model + ": sweeps whose makespan under ASHA is <= 0.5x", 100 * shares.makespan_at_most_half / n, "%");
}

}  // namespace

int main(int argc, char** argv) {
  Sweep sweep;
  int sweeps = 10000;
  std::set<std::string> parts;
  if (!bench::ParseFlags(argc, argv, &parts,
                         {{"--sweeps", &sweeps},
                          {"--trials", &sweep.trials},
                          {"--slots", &sweep.slots},
                          {"--max-t", &sweep.max_t},
                          {"--reduction-factor", &sweep.reduction_factor}})) {
    std::cerr << "usage: tune_epochs_bench [--sweeps N] [--trials N] [--slots N] [--max-t N] [--reduction-factor N]\n";
    return 2;
  }
  std::mt19937_64 rng(7);
  bench::Report report;
  AddRows(&report, "equal epochs", Replay(sweep, sweeps, false, &rng));
  AddRows(&report, "better trials 3x the epoch", Replay(sweep, sweeps, true, &rng));
  std::cout << report.Format();
  return 0;
}
