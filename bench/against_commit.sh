#!/usr/bin/env bash
# The control-plane and jobs benchmarks of this checkout held against the
# same benchmarks of another commit, in the same run: for a change that must
# not move them (a restructure), on machines whose speed drifts within
# minutes. REV is checked out in a git worktree beside this checkout and its
# benchmarks built there (build-bench, as its run.sh scripts build them);
# then, ROUNDS times (default 1), REV runs and this checkout runs, and a
# table holds each figure of this checkout against REV's.
#   bench/against_commit.sh REV [ROUNDS]
# BUILD_DIR (default build-bench) is this checkout's build, JOBS (default 2)
# the builds' parallelism. About 8 minutes a round on a 2-core machine, the
# builds excluded.
set -euo pipefail
rev=${1:?usage: bench/against_commit.sh REV [ROUNDS]}
rounds=${2:-1}
root=$(cd "$(dirname "$0")/.." && pwd)
base=$root/../clusterd-bench-$(git -C "$root" rev-parse --short "$rev")
out=$(mktemp -d /tmp/clusterd-against-XXXXXX)
trap 'rm -rf "$out"' EXIT
[[ -d $base ]] || git -C "$root" worktree add --detach "$base" "$rev" >/dev/null
build_of() { [[ $1 == "$root" ]] && echo "${BUILD_DIR:-$root/build-bench}" || echo "$1/build-bench"; }
targets="clusterd clusterctl noop_rank jobs_bench control_plane_bench"
for tree in "$base" "$root"; do
  build=$(build_of "$tree")
  [[ -f $build/build.ninja ]] ||
    cmake -S "$tree" -B "$build" -G Ninja -DCLUSTERD_BUILD_TRAIN=OFF -DCLUSTERD_BUILD_TESTS=OFF >/dev/null
  if ! log=$(ninja -C "$build" -j "${JOBS:-2}" $targets 2>&1); then
    echo "$log" >&2
    exit 1
  fi
done

# A benchmark that misses a target exits non-zero; its table says so, and
# the comparison goes on.
run() {  # tree, label
  local build
  build=$(build_of "$1")
  (cd "$1" && "$build/bench/control_plane/control_plane_bench" --only startup,death,load) > "$out/cp_$2.txt" 2>&1 || true
  (cd "$1" && "$build/bench/jobs/jobs_bench" --jobs 3000) > "$out/jobs_$2.txt" 2>&1 || true
}

# Each benchmark's table rows, by metric: this checkout's value against REV's.
compare() {  # base file, new file
  python3 - "$1" "$2" "$rev" <<'PY'
import re, sys
# A row indented under another ("|   the same, ...") is named with it.
def rows(path):
    out, parent = {}, ''
    for line in open(path):
        if not line.startswith('| '):
            continue
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if len(cells) < 2 or cells[0] in ('metric', '') or cells[0].startswith('-'):
            continue
        if line.startswith('|   '):
            out[parent + ': ' + cells[0]] = cells[1]
        else:
            parent = cells[0]
            out[parent] = cells[1]
    return out
def number(value):
    m = re.match(r'([-0-9.]+)\s*(\S*)', value)
    return (float(m.group(1)), m.group(2)) if m else (None, None)
base, new = rows(sys.argv[1]), rows(sys.argv[2])
print(f"| metric | {sys.argv[3]} | this checkout | ratio |\n| --- | ---: | ---: | ---: |")
for metric, value in base.items():
    if metric not in new:
        continue
    (b, unit_b), (n, unit_n) = number(value), number(new[metric])
    ratio = f"{n / b:.2f}x" if b and n is not None and unit_b == unit_n else "-"
    print(f"| {metric} | {value} | {new[metric]} | {ratio} |")
PY
}

echo "machine: $(nproc) cores, $(uname -r), $(date -u +%Y-%m-%dT%H:%MZ); $rev against $(git -C "$root" rev-parse --short HEAD)"
for round in $(seq "$rounds"); do
  run "$base" base
  run "$root" new
  echo "round $round"
  compare "$out/cp_base.txt" "$out/cp_new.txt"
  compare "$out/jobs_base.txt" "$out/jobs_new.txt"
done
