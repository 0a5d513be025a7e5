# Sourced by each benchmark's run.sh after it sets `target` (its ninja
# target) and `binary` (its path under the build dir): builds clusterd and
# the benchmark if needed, prints the machine line, and execs the benchmark
# with the run.sh's arguments. BUILD_DIR (default build-bench) and JOBS
# (default 2) tune the build.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${BUILD_DIR:-$root/build-bench}
if [[ ! -f $build/build.ninja ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCLUSTERD_BUILD_TRAIN=OFF >/dev/null
fi
if ! log=$(ninja -C "$build" -j "${JOBS:-2}" "$target" 2>&1); then
  echo "$log" >&2
  exit 1
fi
echo "machine: $(nproc) cores, $(uname -r), $(date -u +%Y-%m-%dT%H:%MZ)"
exec "$build/$binary" "$@"
