#!/usr/bin/env bash
# The shipping benchmark in one command: builds clusterd, clusterctl,
# noop_rank, stamp_run and shipping_bench if needed, then, on three simulated
# machines (head, w1, client: network, mount and UTS namespaces), times a
# ~100 MiB working_dir from `clusterctl submit` on the client to its rank
# running on w1, first time and unchanged, against working_dir_mode: shared
# and against tar | nc of the same folder, and prints the table that
# docs/BENCHMARKS.md keeps. Needs root. Under a minute on a 2-core machine.
#   bench/shipping/run.sh [--trials N] [--small-files N] [--large-files N] [--total-mib N]
# BUILD_DIR (default build-bench) and JOBS (default 2) tune the build
# (bench/common/run_bench.sh).
set -euo pipefail
if [[ $(id -u) != 0 ]]; then
  echo "bench/shipping/run.sh: needs root (simulated machines are namespaces)" >&2
  exit 1
fi
target=shipping_bench
binary=bench/shipping/shipping_bench
source "$(dirname "$0")/../common/run_bench.sh"
