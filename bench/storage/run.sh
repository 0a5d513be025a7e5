#!/usr/bin/env bash
# The storage benchmark in one command: builds clusterd, clusterctl and
# storage_bench if needed, starts Ceph (ceph-mon, a memstore OSD, radosgw)
# in a temporary folder, and moves 10 MiB and 1 GiB files up and down
# through clusterd's S3 backend, boto3 (python3-boto3) and s3cmd to the same
# radosgw, and through the head's own store; prints the table that
# docs/BENCHMARKS.md keeps. Needs Debian's ceph-mon ceph-osd radosgw
# ceph-common python3-boto3 s3cmd, and ~4 GiB of free memory (memstore).
#   bench/storage/run.sh [--sizes-mib 10,1024] [--trials 3]
# BUILD_DIR (default build-bench) and JOBS (default 2) tune the build
# (bench/common/run_bench.sh).
set -euo pipefail
target=storage_bench
binary=bench/storage/storage_bench
source "$(dirname "$0")/../common/run_bench.sh"
