#!/usr/bin/env bash
# The control-plane benchmark in one command: builds clusterd, clusterctl and
# control_plane_bench if needed, then measures start-up, death detection and
# a 1000-node load against real daemons, and a restart on a big journal
# (--restart-finished, --restart-pending), and prints the table that
# docs/BENCHMARKS.md keeps, and the usage history's memory and CPU at
# 10,000 nodes (in process). About 2-3 minutes on a 2-core machine.
#   bench/control_plane/run.sh [control_plane_bench flags, e.g. --only load]
# `--only load --nodes 10000 --ha 1` runs the load against a head in HA
# (three etcd members and a radosgw, started by the bench), with etcd's own
# CPU and disk beside it.
# BUILD_DIR (default build-bench) and JOBS (default 2) tune the build
# (bench/common/run_bench.sh).
set -euo pipefail
target=control_plane_bench
binary=bench/control_plane/control_plane_bench
source "$(dirname "$0")/../common/run_bench.sh"
