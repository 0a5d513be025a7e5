#!/usr/bin/env bash
# gpu_all.sh LOG_DIR: every GPU check and benchmark in one go, for a lent GPU
# machine whose time is short. Run from the repository root with .gpu/
# carried (bench/train/pack_cluster.sh .gpu; Debian's gloo/ and zlib headers,
# Fashion-MNIST's four .gz files and iproute2 under .gpu/, see README.md).
# The riskiest first, each under its own limit, all within BUDGET_S:
#   1. gpu_run.sh checks+fashion: build train/ against the machine's PyTorch,
#      DDP checks through NCCL, Fashion-MNIST over 2 ranks through NCCL;
#   2. gpu_machines_check.sh: a clusterd job's two ranks on two simulated
#      machines, NCCL between them over eth0;
#   3. gpu_cluster_check.sh: clusterd on the machine, the GPU probed, 1-GPU job;
#   4. gpu_run.sh bench ddp-bench: ResNet-18 bf16 against PyTorch.
# Each step's whole output goes to LOG_DIR/N_name.log; stdout gets the gist.
set -uo pipefail
logs=${1:?usage: gpu_all.sh LOG_DIR}
budget=${BUDGET_S:-560}
root=$(pwd)
build=${BUILD_DIR:-build-gpu}
export GLOO_HEADERS=$root/.gpu ZLIB_HEADERS=$root/.gpu/zlib FASHION_MNIST_DIR=$root/.gpu/fashion-mnist
export IP_BUNDLE=$root/.gpu/iproute
[[ :$PATH: == *:/usr/local/nvidia/bin:* ]] || export PATH=$PATH:/usr/local/nvidia/bin
start=$(date +%s)
left() { echo $((budget - ($(date +%s) - start))); }
run() {  # run LIMIT_S NAME GIST_COMMAND -- COMMAND...
  local limit=$1 name=$2 gist=$3; shift 4
  ((limit > $(left))) && limit=$(left)
  if ((limit < 20)); then echo "== $name: skipped, $(left) s of the budget left"; return; fi
  echo "== $name (limit $limit s, $(date +%T))"
  timeout "$limit" "$@" > "$logs/$name.log" 2>&1
  echo "exit code $? after $(($(date +%s) - start)) s in all"
  bash -c "$gist" < "$logs/$name.log"
}
mkdir -p "$logs"
run 240 1_build_checks "grep -E '^==|tests passed|tests failed|Failed|ddp_check rank|test accuracy|backend=|real'" -- \
  env PHASES="checks fashion" bash bench/train/gpu_run.sh "$build"
run 150 2_two_machines "sed -n '/== summary/,\$p'" -- bash bench/train/gpu_machines_check.sh "$build"
run 100 3_cluster "sed -n '/== summary/,\$p'" -- bash bench/train/gpu_cluster_check.sh "$build"
run 240 4_bench "grep -E -A12 '^ResNet|^train/ '" -- env PHASES="bench ddp-bench" bash bench/train/gpu_run.sh "$build"
echo "== done in $(($(date +%s) - start)) s"
