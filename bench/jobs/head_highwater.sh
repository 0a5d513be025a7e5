#!/usr/bin/env bash
# What a head holds at its peak while it compacts its journal: a head that
# places nothing (--num-cpus 0) makes an array of 100,000 waiting jobs and
# compacts as the journal grows (--journal-compact-mb 1
# --journal-compact-ratio 2; its last snapshot holds ~95,000 jobs). One row
# per clusterd binary given, each run `--runs` times, alternated, so that a
# binary built before a change is the baseline of the same run.
#   bench/jobs/head_highwater.sh [--runs N] CLUSTERD [CLUSTERD...]
# clusterctl comes from BUILD_DIR (default build).
set -euo pipefail
runs=2
if [[ "${1:-}" == "--runs" ]]; then runs=$2; shift 2; fi
(($# > 0)) || { echo "usage: $0 [--runs N] CLUSTERD [CLUSTERD...]" >&2; exit 2; }
ctl="${BUILD_DIR:-build}/cli/clusterctl"
[[ -x "$ctl" ]] || { echo "no $ctl: build clusterctl first (or set BUILD_DIR)" >&2; exit 2; }
work=$(mktemp -d /tmp/head-highwater-XXXXXX)
trap 'for d in "$work"/*/tmp; do "$1" stop --temp-dir "$d" >/dev/null 2>&1 || true; done; rm -rf "$work"' EXIT

kib() { awk -v key="$1:" '$1 == key { print $2 }' "/proc/$2/status"; }

echo "| clusterd | run | submit (s) | VmHWM (MiB) | VmRSS after (MiB) | last snapshot |"
echo "| --- | --- | --- | --- | --- | --- |"
for ((run = 1; run <= runs; ++run)); do
  for clusterd in "$@"; do
    dir="$work/$run-$(basename "$clusterd")"
    mkdir -p "$dir/work"
    printf 'name: wait\nworking_dir: %s\nworking_dir_mode: shared\nentrypoint: /bin/true\narray: {count: 100000}\n' \
      "$dir/work" > "$dir/array.yaml"
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    "$clusterd" start --head --port "$port" --num-cpus 0 --state-dir "$dir/state" --temp-dir "$dir/tmp" \
      --journal-compact-mb 1 --journal-compact-ratio 2 > "$dir/start.out" 2>&1 || { cat "$dir/start.out"; exit 1; }
    head_pid=$(awk '{ print $1 }' "$dir"/tmp/session_latest/pids/head-*.pid)
    start=$(date +%s.%N)
    "$ctl" --temp-dir "$dir/tmp" --timeout-ms 120000 submit "$dir/array.yaml" > "$dir/submit.out"
    seconds=$(echo "$(date +%s.%N) - $start" | bc)
    snapshot=$(grep -ho "wrote a snapshot of [0-9]* entries ([0-9]* bytes)" "$dir"/tmp/session_latest/logs/*.log | tail -1)
    printf '| %s | %d | %.1f | %.1f | %.1f | %s |\n' "$clusterd" "$run" "$seconds" \
      "$(echo "$(kib VmHWM "$head_pid") / 1024" | bc -l)" "$(echo "$(kib VmRSS "$head_pid") / 1024" | bc -l)" \
      "${snapshot#wrote a snapshot of }"
    "$clusterd" stop --temp-dir "$dir/tmp" > /dev/null 2>&1
  done
done
