#!/usr/bin/env bash
# The chaos run in one command: builds clusterd, clusterctl, chaos_rank,
# chaos_rpc and chaos if needed, then, on five simulated machines (head,
# w1-w3, client: network, mount and UTS namespaces), runs a stream of jobs
# for --duration seconds (default 600) while killing ranks, agents and the
# head, stopping agents, cutting links and sending malformed RPCs and job
# files at random times, and prints the table docs/RELIABILITY.md keeps.
# With --ha the head is two heads in HA on three etcd members and a radosgw
# (each on a machine of its own), and the faults also crash a head's
# machine, kill an etcd member, and cut a head's or a member's link.
# The seed is printed; --seed N replays a run's choices. Needs root (and
# for --ha etcd-server and ceph).
#   bench/chaos/run.sh [--ha] [--duration SECONDS] [--seed N] [--workers N]
# BUILD_DIR (default build-bench) and JOBS (default 2) tune the build
# (bench/common/run_bench.sh).
set -euo pipefail
if [[ $(id -u) != 0 ]]; then
  echo "bench/chaos/run.sh: needs root (simulated machines are namespaces)" >&2
  exit 1
fi
target=chaos
binary=bench/chaos/chaos
if [[ $# -eq 0 ]]; then set -- --duration 600; fi
source "$(dirname "$0")/../common/run_bench.sh"
