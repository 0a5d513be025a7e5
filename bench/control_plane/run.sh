#!/usr/bin/env bash
# The control-plane benchmark in one command: builds clusterd, clusterctl and
# control_plane_bench if needed, then measures start-up, death detection and
# a 1000-node load against real daemons and prints the table that
# docs/BENCHMARKS.md keeps. About 2-3 minutes on a 2-core machine.
#   bench/control_plane/run.sh [control_plane_bench flags, e.g. --only load]
# BUILD_DIR (default build-bench) and JOBS (default 2) tune the build.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-$root/build-bench}
if [[ ! -f $build/build.ninja ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCLUSTERD_BUILD_TRAIN=OFF >/dev/null
fi
if ! log=$(ninja -C "$build" -j "${JOBS:-2}" control_plane_bench 2>&1); then
  echo "$log" >&2
  exit 1
fi
echo "machine: $(nproc) cores, $(uname -r), $(date -u +%Y-%m-%dT%H:%MZ)"
exec "$build/bench/control_plane/control_plane_bench" "$@"
