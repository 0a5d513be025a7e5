// What `clusterctl top` draws: one frame of the cluster (nodes with usage
// bars, running jobs with their latest metrics) as lines of plain text.
// A pure function of its inputs, so a frame is unit tested with exact text;
// cli/top_command.cc fetches the snapshot and puts the lines on a terminal.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cluster.pb.h"

namespace clusterd::cli {

// One running job and the newest record its ranks reported (none yet: empty).
struct TopJob {
  JobInfo info;
  std::optional<MetricRecord> latest;
};

// What one refresh fetched from the head.
struct TopSnapshot {
  ClusterStatus status;           // nodes: the head first, then by name
  std::vector<TopJob> jobs;       // running and restarting, oldest first
  int running_jobs = 0;           // all of them, however many `jobs` holds
  int64_t now_unix_ms = 0;        // by the head's clock
};

// The frame's size in characters. width 0: lines as long as they are
// (plain output, not a terminal); height 0: as many lines as there are.
struct TopSize {
  int width = 0;
  int height = 0;
};

// The usage bar of `used` out of `total`, `cells` wide: "[|||||     ]".
// Past the total (a load above the CPUs) it is full; no total: empty.
std::string UsageBar(double used, double total, int cells);

// The frame's lines: never wider than size.width characters (cut, never
// wrapped) and never more than size.height (the nodes first get what
// room the jobs leave them, and a line says how many did not fit).
// Names from users are shown with their control characters as '?', so a
// name cannot move the cursor or change the terminal.
std::vector<std::string> RenderTopFrame(const TopSnapshot& snapshot, TopSize size);

}  // namespace clusterd::cli
