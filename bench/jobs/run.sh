#!/usr/bin/env bash
# The jobs benchmark in one command: builds clusterd, clusterctl, noop_rank
# and jobs_bench if needed, then measures submit -> ranks running for 1, 4
# and 16 ranks against torchrun, and 10,000 queued jobs through a 3-node
# loopback cluster against a plain spawn loop, and prints the table that
# docs/BENCHMARKS.md keeps. A few minutes on a 2-core machine.
#   bench/jobs/run.sh [jobs_bench flags, e.g. --only latency --trials 20]
# `--only throughput_ha` runs the 10,000 jobs through a head in HA (three
# etcd members and a radosgw, started by the bench) against a single head.
# BUILD_DIR (default build-bench) and JOBS (default 2) tune the build
# (bench/common/run_bench.sh).
set -euo pipefail
target=jobs_bench
binary=bench/jobs/jobs_bench
source "$(dirname "$0")/../common/run_bench.sh"
