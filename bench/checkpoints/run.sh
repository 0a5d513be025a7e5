#!/usr/bin/env bash
# The checkpoints benchmark in one command: builds clusterd, clusterctl,
# stamp_run, ckpt_rank, ckpt_upload and checkpoints_bench if needed, then, on
# five simulated machines (head, w1-w3, client: network, mount and UTS
# namespaces), times a job's return from its checkpoint after rank 0's
# machine is SIGKILLed (10 and 500 MiB; and 500 MiB with its cable cut
# first), the upload's cost to a training
# rank's step time, the re-upload of an unchanged 500 MiB checkpoint, and
# cp -r and tar | nc of the same folder, and prints the table that
# docs/BENCHMARKS.md keeps. Needs root and ~4 GiB of free memory (every
# machine's /tmp is a tmpfs). A few minutes on a 2-core machine.
#   bench/checkpoints/run.sh [--only failover,power_loss,upload] [--trials N] [--power-loss N]
#                            [--small-mib N] [--large-mib N] [--rounds N] [--baseline-ms N] [--warm N]
#                            [--copies N] [--node-timeout-ms N] [--core-per-machine 1]
# BUILD_DIR (default build-bench) and JOBS (default 2) tune the build
# (bench/common/run_bench.sh).
set -euo pipefail
if [[ $(id -u) != 0 ]]; then
  echo "bench/checkpoints/run.sh: needs root (simulated machines are namespaces)" >&2
  exit 1
fi
target=checkpoints_bench
binary=bench/checkpoints/checkpoints_bench
source "$(dirname "$0")/../common/run_bench.sh"
