#!/usr/bin/env bash
# From a fresh Debian machine: install, build, start a local cluster of one
# head and two workers on loopback, wait until all three are ALIVE, show
# `clusterctl status`, then run the example training job on it.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
# Only what it runs: the daemon, the CLI and the example (the tests and
# benchmarks are most of a full build; scripts/test.sh builds them).
ensure_packages $CLUSTERD_BUILD_PACKAGES
# A build folder that exists keeps its options (a full one stays full).
if [ -f "$CLUSTERD_BUILD/CMakeCache.txt" ]; then
  configure
else
  configure -DCLUSTERD_BUILD_TESTS=OFF -DCLUSTERD_BUILD_BENCH=OFF
fi
build clusterd clusterctl fashion_mnist

# Its own runtime folder and its own head state (not a system install's).
export CLUSTER_TEMP_DIR="${CLUSTER_TEMP_DIR:-/tmp/clusterd-quickstart-$(id -u)}"
STATE_DIR="${STATE_DIR:-$CLUSTER_TEMP_DIR/state}"
BIN="$CLUSTERD_BUILD"
PATH="$BIN/daemon:$BIN/cli:$PATH"

clusterd stop >/dev/null 2>&1 || true
# The head's port is clusterd's default unless PORT names another; the
# workers join at the address the head wrote into its session folder.
clusterd start --head ${PORT:+--port "$PORT"} --node-ip-address 127.0.0.1 --node-name head --num-cpus 1 \
  --state-dir "$STATE_DIR"
HEAD_ADDRESS="$(cat "$CLUSTER_TEMP_DIR/session_latest/address")"
clusterd start --address "$HEAD_ADDRESS" --node-ip-address 127.0.0.1 --node-name worker1 --num-cpus 1 >/dev/null
clusterd start --address "$HEAD_ADDRESS" --node-ip-address 127.0.0.1 --node-name worker2 --num-cpus 1 >/dev/null

for _ in $(seq 100); do
  [ "$(clusterctl status --json | grep -o '"state":"ALIVE"' | wc -l)" -eq 3 ] && break
  sleep 0.1
done
clusterctl status

# The example training job: a small CNN on Fashion-MNIST, 2 ranks, 5 epochs,
# checkpoint every epoch. --follow streams every rank's log and exits 0 only
# if the job SUCCEEDED.
cd "$CLUSTERD_ROOT"
echo
echo "Submitting config/fashion_mnist.yaml (CNN, 2 ranks, 5 epochs; a few minutes on 2 cores)..."
submitted=$(clusterctl submit config/fashion_mnist.yaml --json)
job=$(echo "$submitted" | sed -n 's/.*"job_id": *"\([^"]*\)".*/\1/p')
clusterctl logs "$job" --follow
echo
clusterctl metrics "$job"
accuracy=$(clusterctl metrics "$job" --json | grep -o '"accuracy": *[0-9.]*' | tail -1 | grep -o '[0-9.]*$')
echo
echo "Final test accuracy of $job: $accuracy"
# Printed with --temp-dir: the shell that runs them has no CLUSTER_TEMP_DIR.
echo "The cluster keeps running: clusterctl --temp-dir $CLUSTER_TEMP_DIR status | jobs | job $job;" \
  "stop it with: clusterd stop --temp-dir $CLUSTER_TEMP_DIR"
