#!/usr/bin/env bash
# run_ddp_check.sh MODE DDP_CHECK_BIN [PYTHON]
# Runs ddp_check (and for MODE=pytorch, PyTorch's DDP via ddp_reference.py)
# in the configurations a mode needs and compares the final parameters with
# compare_params.py, which prints the max relative difference. Exit 0 = agree.
#   pytorch  2 ranks ctrain      vs 2 ranks torch.nn.parallel.DistributedDataParallel
#   single   2 ranks, batch 4    vs 1 rank, batch 8 (same global batches)
#   nosync   2 ranks, no_sync accumulation of 2 half batches vs plain steps
#   buckets  2 ranks, 256-byte buckets (>= 4 of them) vs one 25 MiB bucket
#   unused   2 ranks, a layer only rank 0 uses on some steps: no deadlock, ranks agree
#   resume   2 ranks, 10 steps, checkpoint, resumed to 20 vs 20 steps in one go
set -euo pipefail
mode=$1
bin=$2
py=${3:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/ddp_check.XXXXXX")
trap 'rm -rf "$work"' EXIT

source "$here/../../scripts/ranks.sh"  # free_port, rank_env

# run_cpp WORLD OUT ARGS...: WORLD processes of ddp_check, fail if any fails
# (through NCCL on a GPU build: see rank_env).
run_cpp() {
  local world=$1 out=$2; shift 2
  if [[ $world == 1 ]]; then
    "$bin" --out "$out" "$@"
    return
  fi
  local port pids=() r
  port=$(free_port)
  for ((r = 0; r < world; r++)); do
    env $(rank_env "$r" "$world" "$port") CTRAIN_TIMEOUT_S=60 "$bin" --out "$out" "$@" &
    pids+=($!)
  done
  local rc=0
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  return $rc
}

compare() { "$py" "$here/compare_params.py" "$@"; }

case $mode in
  pytorch)
    run_cpp 2 "$work/cpp" --batch 4 --steps 20
    # Debian's torchrun needs --redirects/--tee on Python 3.11 (NOTES.md).
    "$py" -m torch.distributed.run --redirects 1 --tee 1 --nproc_per_node 2 \
      --master_addr 127.0.0.1 --master_port "$(free_port)" \
      "$here/ddp_reference.py" "$work/py" 4 20 > "$work/torchrun.log" 2>&1 ||
      { cat "$work/torchrun.log"; exit 1; }
    compare "$work/cpp.rank0" "$work/py.rank0" 1e-5
    compare "$work/cpp.rank1" "$work/py.rank1" 1e-5
    ;;
  single)
    run_cpp 2 "$work/two" --batch 4 --steps 20
    run_cpp 1 "$work/one" --batch 8 --steps 20
    compare "$work/two.rank0" "$work/one.rank0" 1e-5
    ;;
  nosync)
    run_cpp 2 "$work/plain" --batch 4 --steps 20
    run_cpp 2 "$work/accum" --batch 4 --steps 20 --mode accum
    compare "$work/accum.rank0" "$work/plain.rank0" 1e-5
    compare "$work/accum.rank1" "$work/plain.rank1" 1e-5
    ;;
  buckets)
    run_cpp 2 "$work/one" --batch 4 --steps 20 --min-buckets 1
    run_cpp 2 "$work/many" --batch 4 --steps 20 --bucket-cap 256 --min-buckets 4
    compare "$work/many.rank0" "$work/one.rank0" 1e-5
    ;;
  unused)
    run_cpp 2 "$work/unused" --batch 4 --steps 20 --mode unused
    compare "$work/unused.rank0" "$work/unused.rank1" 1e-12
    ;;
  resume)
    run_cpp 2 "$work/whole" --batch 4 --steps 20
    export CLUSTER_CHECKPOINT_DIR="$work/checkpoints"
    run_cpp 2 "$work/first" --batch 4 --steps 10 --save
    run_cpp 2 "$work/resumed" --batch 4 --steps 20 --resume
    compare "$work/resumed.rank0" "$work/whole.rank0" 1e-9
    compare "$work/resumed.rank1" "$work/whole.rank1" 1e-9
    ;;
  *)
    echo "unknown mode $mode" >&2
    exit 2
    ;;
esac
