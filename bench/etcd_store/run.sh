#!/usr/bin/env bash
# The etcd state store's benchmark in one command: builds etcd_store_bench if
# needed, starts three etcd members (Debian's etcd-server) in a temporary
# folder, and prints the table that docs/BENCHMARKS.md keeps:
#   bench/etcd_store/run.sh [--entries 20000] [--jobs 100000] [--records-per-job 4]
# BUILD_DIR (default build-bench) and JOBS (default 2) tune the build
# (bench/common/run_bench.sh).
set -euo pipefail
target=etcd_store_bench
binary=bench/etcd_store/etcd_store_bench
source "$(dirname "$0")/../common/run_bench.sh"
