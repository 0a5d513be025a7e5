// The benchmark's parts. Each starts its own daemons in a fresh temp
// dir, adds its rows to the report, and returns false (after noting why in
// the report) only when it could not measure.
#pragma once

#include "report.h"

namespace clusterd::bench {

struct BenchOptions {
  int startup_runs = 10;
  int death_trials = 20;
  int nodes = 1000;
  int window_s = 10;
  int tls = 0;  // 1: the head serves TLS (certificates made with the openssl command)
  int ha = 0;   // 1: (c)'s head runs in HA (--ha on three etcd members, --store on a radosgw)
  int status_calls = 30;
  int poll_ms = 2;
  int keepalive_ms = 2000;    // the agents' gRPC keepalive pings, per connection
  int heartbeat_ms = 500;     // the daemon's defaults; passed explicitly so the
  int node_timeout_ms = 2000; // targets below stay tied to what ran
  int restart_finished = 200000;  // (d): jobs in the journal a head restarts with
  int restart_pending = 20000;
  int usage_nodes = 10000;  // (e): nodes the usage history samples, each with usage_gpus GPUs
  int usage_gpus = 8;
};

// (a) `clusterd start --head` until the head node is ALIVE.
bool RunStartup(const BenchOptions& options, Report* report);
// (b) a worker's SIGKILL and SIGSTOP until the head lists it DEAD.
bool RunDeath(const BenchOptions& options, Report* report);
// (c) a head holding `nodes` simulated agents' streams.
bool RunLoad(const BenchOptions& options, Report* report);
// (d) a head restarted on a journal of restart_finished + restart_pending
// jobs, against an empty one and one 10x smaller.
bool RunRestart(const BenchOptions& options, Report* report);
// (e) the head's usage history at usage_nodes x usage_gpus for a window:
// its memory and the CPU of its sampling passes, in process.
bool RunUsage(const BenchOptions& options, Report* report);

}  // namespace clusterd::bench
