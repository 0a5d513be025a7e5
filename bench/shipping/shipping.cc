// Rounds of four measurements, interleaved so that a slow spell of the shared
// machine hits every kind alike: first submit, unchanged re-submit, shared,
// tar | nc. Round 0 warms up (page cache, first connections) and is dropped.
#include "shipping.h"

#include <stdlib.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "breakdown.h"
#include "scratch_dir.h"
#include "ship_cluster.h"
#include "stats.h"
#include "trials.h"

namespace clusterd::bench {

namespace {

struct Kind {
  Samples done;      // start -> rank running (tar: -> w1's tar done)
  Samples returned;  // start -> clusterctl exited
};

// Median, p90 (from 10 samples on; below that it is the max) and max rows of
// one kind, against a baseline kind's same statistic. ("|" would split a
// markdown cell, hence "tar+nc" in labels.)
void Rows(Report* report, const std::string& what, const Kind& kind, const Kind* base, const std::string& base_what) {
  struct Stat {
    std::string name;
    double (*of)(const Samples&);
  };
  std::vector<Stat> stats = {{"median", [](const Samples& s) { return s.Median(); }}};
  if (kind.done.size() >= 10) stats.push_back({"p90", [](const Samples& s) { return s.Percentile(90); }});
  stats.push_back({"max", [](const Samples& s) { return s.Max(); }});
  for (const Stat& stat : stats) {
    std::string metric = what + ", " + stat.name + (stat.name == "median" ? fmt::format(" (n={})", kind.done.size()) : "");
    if (base) {
      report->Info(metric, stat.of(kind.done), "ms", stat.of(base->done), base_what + ", " + stat.name);
    } else {
      report->Info(metric, stat.of(kind.done), "ms");
    }
  }
}

}  // namespace

bool RunShipping(const ShippingOptions& options, Report* report) {
  std::string why;
  if (!testing::SimNetwork::Available(&why)) {
    report->Failed("machines", why);
    return false;
  }
  ScratchDir scratch_dir("shipping-bench");
  if (!scratch_dir.ok()) {
    report->Failed("setup", "mkdtemp failed");
    return false;
  }
  const std::string& scratch = scratch_dir.path();

  std::unique_ptr<ShipCluster> cluster;
  try {
    cluster = std::make_unique<ShipCluster>();
  } catch (const std::exception& e) {
    report->Failed("machines", e.what());
    return false;
  }
  std::string error;
  if (!cluster->Start(&error)) {
    report->Failed("cluster", error);
    return false;
  }
  FolderSpec spec = options.folder;
  spec.rank_program = NOOP_RANK_BIN;
  FolderStats folder;
  if (!GenerateFolder(cluster->client.HostPath(kFolder), spec, &folder, &error)) {
    report->Failed("folder", error);
    return false;
  }
  std::cerr << fmt::format("shipping_bench: {} files in {} folders, {:.1f} MiB ({:.1f} MiB in {} large files)\n",
                           folder.files, folder.dirs, folder.bytes / 1048576.0, folder.large_bytes / 1048576.0,
                           spec.large_files);
  Trials trials(cluster.get(), STAMP_RUN_BIN, scratch);
  if (!trials.Setup(&error)) {
    report->Failed("setup", error);
    return false;
  }

  Kind first, unchanged, shared, tar;
  Breakdown breakdown;
  bool watching = false;
  int unchanged_moved = 0;
  for (int round = 0; round <= options.trials; ++round) {
    Times f, u, s, t;
    bool ok = trials.MakeFirstSubmit(round, &error) && trials.Submit("first", round, kShipJob, &f, &error) &&
              trials.Submit("unchanged", round, kShipJob, &u, &error) &&
              trials.Submit("shared", round, kSharedJob, &s, &error) && trials.Tar(round, &t, &error);
    if (!ok) {
      report->Failed(fmt::format("round {}", round), error);
      return false;
    }
    std::cerr << fmt::format("shipping_bench: round {}{}: first {:.1f} ms, unchanged {:.1f} ms, shared {:.1f} ms, "
                             "tar+nc {:.1f} ms\n",
                             round, round == 0 ? " (warm-up, dropped)" : "", f.Ms(), u.Ms(), s.Ms(), t.Ms());
    if (round == 0) {
      // The folders to watch exist once one package has gone through.
      std::string missing;
      watching = breakdown.Watch(*cluster, &missing);
      if (!watching) std::cerr << "shipping_bench: cannot watch " << missing << "\n";
      continue;
    }
    breakdown.Add(f);
    std::string did = breakdown.UnchangedWork(u);
    if (!did.empty()) {
      std::cerr << fmt::format("shipping_bench: round {}: the unchanged re-submit {}\n", round, did);
      ++unchanged_moved;
    }
    for (auto [kind, times] : {std::pair{&first, &f}, {&unchanged, &u}, {&shared, &s}, {&tar, &t}}) {
      kind->done.Add(times->Ms());
      kind->returned.Add(times->ReturnMs());
    }
  }

  report->Info("working_dir: files", folder.files, "");
  report->Info("working_dir: size", folder.bytes / 1048576.0, "MiB");
  Rows(report, "first submit -> rank running", first, &tar, "tar+nc");
  report->Check("first submit / tar+nc, medians", first.done.Median() / tar.done.Median(), "x", 2.0, std::nullopt,
                "");
  Rows(report, "unchanged re-submit -> rank running", unchanged, &shared, "shared");
  report->Check("unchanged re-submit - shared, medians", unchanged.done.Median() - shared.done.Median(), "ms", 100,
                std::nullopt, "");
  if (watching) {
    report->Check("unchanged re-submits that read the large files, uploaded or fetched", unchanged_moved, "", 1,
                  std::nullopt, "");
  }
  Rows(report, "shared (working_dir_mode: shared) -> rank running", shared, nullptr, "");
  Rows(report, "tar+nc client -> w1, until w1's tar exits", tar, nullptr, "");
  report->Info("first submit: clusterctl submit returns, median", first.returned.Median(), "ms", first.done.Median(),
               "to rank running");
  breakdown.AddRows(report);
  report->Info("unchanged re-submit: clusterctl submit returns, median", unchanged.returned.Median(), "ms",
               unchanged.done.Median(), "to rank running");
  report->Info("shared: clusterctl submit returns, median", shared.returned.Median(), "ms", shared.done.Median(),
               "to rank running");
  return true;
}

}  // namespace clusterd::bench
