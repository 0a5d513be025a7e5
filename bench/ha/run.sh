#!/usr/bin/env bash
# The failover benchmark in one command: builds clusterd, clusterctl,
# noop_rank and ha_bench if needed, then times, from the serving head's
# machine dying (every process on it SIGKILLed) to a head answering
# `clusterctl status`, to every worker registered with it, and to a job
# submitted at once having its three ranks running:
#   - two heads in HA (--ha) on three etcd members and a radosgw, three
#     workers and a client, each on a simulated machine of its own; the
#     leader's machine dies, the standby takes over;
#   - the baseline: a single head (no --ha), three workers and a client;
#     its machine dies and `clusterd start --head` is issued on it at once.
# Prints the table docs/BENCHMARKS.md keeps ("ha"). Needs root, etcd-server
# and ceph (radosgw). A few minutes on a 2-core machine.
#   bench/ha/run.sh [--trials N] [--only single,ha] [--limit-s N]
# BUILD_DIR (default build-bench) and JOBS (default 2) tune the build
# (bench/common/run_bench.sh).
set -euo pipefail
if [[ $(id -u) != 0 ]]; then
  echo "bench/ha/run.sh: needs root (simulated machines are namespaces)" >&2
  exit 1
fi
target=ha_bench
binary=bench/ha/ha_bench
source "$(dirname "$0")/../common/run_bench.sh"
