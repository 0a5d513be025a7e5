#!/usr/bin/env bash
# The sharing benchmark in one command: builds clusterd, clusterctl,
# ckpt_rank and sharing_bench if needed, then on four simulated machines
# (head, w1, w2, client) times a high-priority submit to its ranks running
# when a running job must be preempted for it (a victim that checkpoints
# on notice, one that ignores the notice, one that ignores SIGTERM too),
# against the same submit to an idle cluster, and counts the epochs each
# victim re-runs; then the scheduler's cost per decision with 10,000
# pending jobs from 100 users on 1,000 nodes, against one user's FIFO; and
# prints the table that docs/BENCHMARKS.md keeps. Needs root. A few minutes
# on a 2-core machine. bench/jobs/run.sh --only throughput measures the
# scheduler's throughput against the spawn floor.
#   bench/sharing/run.sh [--only preemption,scheduler] [--trials N] [--grace-s S] [--pending N] ...
# BUILD_DIR (default build-bench) and JOBS (default 2) tune the build
# (bench/common/run_bench.sh).
set -euo pipefail
if [[ $(id -u) != 0 ]]; then
  echo "bench/sharing/run.sh: needs root (simulated machines are namespaces)" >&2
  exit 1
fi
target=sharing_bench
binary=bench/sharing/sharing_bench
source "$(dirname "$0")/../common/run_bench.sh"
