#!/usr/bin/env bash
# run_bench.sh [BUILD_DIR]: train/'s DDP against PyTorch's, and DDP's cost.
#
# Same model (ResNet-18, examples/resnet18.h == ddp_bench.py), ranks, threads
# per rank, batch per rank, image size and timing method on both sides:
#   ctrain DDP      build/examples/resnet_synthetic
#   ctrain no comm  the same with --no-comm (every step under no_sync)
#   PyTorch DDP     bench/train/ddp_bench.py (torch.nn.parallel.DistributedDataParallel, Gloo)
#   PyTorch no comm the same under model.no_sync()
# With RANKS=1 there is nothing to communicate: one process of each, ctrain
# against plain eager PyTorch (no process group, no DDP wrapper), and ctrain
# once more with libtorch's own SGD (--optimizer libtorch) in place of
# ctrain::optim::SGD, to show what the multi-tensor step is worth.
# Each configuration runs ROUNDS times, interleaved, and the fastest round is
# kept (other load on a shared machine only ever slows a round down).
# Prints a Markdown table. Settings via environment: RANKS THREADS BATCH IMAGE
# STEPS WARMUP ROUNDS, DTYPE (float32|bfloat16), DEVICE (cpu|cuda: cuda needs
# resnet_synthetic built against a CUDA libtorch, and PYTHON a CUDA PyTorch).
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-/usr/bin/python3}
RANKS=${RANKS:-2} THREADS=${THREADS:-1} BATCH=${BATCH:-16} IMAGE=${IMAGE:-64}
STEPS=${STEPS:-10} WARMUP=${WARMUP:-2} ROUNDS=${ROUNDS:-4} DTYPE=${DTYPE:-float32} DEVICE=${DEVICE:-cpu}
bin="$build/examples/resnet_synthetic"
[[ -x $bin ]] || { echo "run_bench.sh: $bin not built (ninja -C $build resnet_synthetic)" >&2; exit 1; }

source "$here/../../scripts/ranks.sh"  # free_port, rank_env

# launch CMD...: RANKS copies with the torchrun variables (one plain process
# when RANKS=1); prints rank 0's RESULT line.
launch() {
  local port out pids=() r rc=0
  port=$(free_port)
  out=$(mktemp)
  if ((RANKS == 1)); then
    OMP_NUM_THREADS=$THREADS "$@" > "$out.0" 2>&1 &
    pids+=($!)
  fi
  for ((r = 0; RANKS > 1 && r < RANKS; r++)); do
    env $(rank_env "$r" "$RANKS" "$port") OMP_NUM_THREADS=$THREADS "$@" > "$out.$r" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  if [[ $rc != 0 ]]; then cat "$out".* >&2; rm -f "$out".*; return 1; fi
  grep RESULT "$out.0"
  rm -f "$out" "$out".*
}

common=(--batch-size "$BATCH" --steps "$STEPS" --warmup "$WARMUP" --image-size "$IMAGE" --threads "$THREADS"
        --dtype "$DTYPE")
pyargs=("$here/ddp_bench.py" "${common[@]}" --device "$DEVICE")
declare -A best
run() {  # run NAME CMD...
  local name=$1; shift
  local line ms
  line=$(launch "$@")
  ms=$(sed -n 's/.*step_ms=\([0-9.]*\).*/\1/p' <<< "$line")
  echo "  $name: $ms ms/step" >&2
  if [[ -z ${best[$name]:-} ]] || awk "BEGIN{exit !($ms < ${best[$name]})}"; then best[$name]=$ms; fi
}

for ((round = 1; round <= ROUNDS; round++)); do
  echo "round $round/$ROUNDS" >&2
  run ctrain_ddp "$bin" "${common[@]}"
  run torch_ddp "$py" "${pyargs[@]}"
  if ((RANKS == 1)); then
    run ctrain_libtorch_sgd "$bin" "${common[@]}" --optimizer libtorch
  else
    run ctrain_nocomm "$bin" "${common[@]}" --no-comm
    run torch_nocomm "$py" "${pyargs[@]}" --no-comm
  fi
done

sps() { awk "BEGIN{printf \"%.1f\", $BATCH * $RANKS / ($1 / 1000)}"; }
pct() { awk "BEGIN{printf \"%+.1f%%\", ($1 / $2 - 1) * 100}"; }
comm=gloo
[[ $DEVICE == cuda ]] && comm=nccl
where="$RANKS ranks x $THREADS thread, $comm over loopback"
((RANKS == 1)) && where="1 process, no communication"
[[ $DEVICE == cuda ]] && where="$where, on one GPU ($("$py" -c 'import torch; print(torch.cuda.get_device_name(0))'))"
echo "ResNet-18, ${IMAGE}x${IMAGE} synthetic images, $DTYPE, $where, batch $BATCH per rank, best of $ROUNDS rounds of $STEPS timed steps"
echo
if ((RANKS == 1)); then
  echo "| run | step time (ms) | samples/s |"
  echo "| --- | ---: | ---: |"
  echo "| train/ (ctrain), C++ | ${best[ctrain_ddp]} | $(sps "${best[ctrain_ddp]}") |"
  echo "| train/ (ctrain), C++, libtorch's SGD | ${best[ctrain_libtorch_sgd]} | $(sps "${best[ctrain_libtorch_sgd]}") |"
  echo "| PyTorch eager (Python) | ${best[torch_ddp]} | $(sps "${best[torch_ddp]}") |"
  echo
  echo "train/ samples/s relative to PyTorch eager: $(awk "BEGIN{printf \"%.3f\", ${best[torch_ddp]} / ${best[ctrain_ddp]}}")x" \
    "(with libtorch's SGD: $(awk "BEGIN{printf \"%.3f\", ${best[torch_ddp]} / ${best[ctrain_libtorch_sgd]}}")x)"
  exit 0
fi
echo "| run | step time (ms) | samples/s | DDP overhead vs no comm |"
echo "| --- | ---: | ---: | ---: |"
echo "| train/ (ctrain) DDP | ${best[ctrain_ddp]} | $(sps "${best[ctrain_ddp]}") | $(pct "${best[ctrain_ddp]}" "${best[ctrain_nocomm]}") |"
echo "| train/ (ctrain) no communication | ${best[ctrain_nocomm]} | $(sps "${best[ctrain_nocomm]}") | |"
echo "| PyTorch DDP (Python) | ${best[torch_ddp]} | $(sps "${best[torch_ddp]}") | $(pct "${best[torch_ddp]}" "${best[torch_nocomm]}") |"
echo "| PyTorch no_sync (Python) | ${best[torch_nocomm]} | $(sps "${best[torch_nocomm]}") | |"
echo
echo "train/ DDP samples/s relative to PyTorch DDP: $(awk "BEGIN{printf \"%.2f\", ${best[torch_ddp]} / ${best[ctrain_ddp]}}")x"
