#!/usr/bin/env bash
# gpu_run.sh [BUILD_DIR]: train/ on an NVIDIA GPU machine, against that
# machine's own PyTorch (the `python3` on PATH). Run from the repository root.
#   1. builds train/, resnet_synthetic and ddp_check against the CUDA libtorch
#      of that PyTorch (CLUSTERD_BUILD_DAEMON=OFF: no gRPC or Catch2 needed);
#   2. runs the DDP checks of tests/train through NCCL (two ranks share the
#      GPU, each naming its own host to NCCL; see run_ddp_check.sh);
#   3. ResNet-18 bf16 on one GPU: ctrain against PyTorch eager (the target);
#   4. the same over two ranks on the GPU: ctrain DDP against PyTorch DDP, NCCL;
#   5. examples/fashion_mnist, 2 ranks through NCCL, 3 epochs with checkpoints
#      (the third save prunes the first), saved and scored again on the CPU (needs FASHION_MNIST_DIR, the four .gz files).
# PHASES picks among checks, bench, ddp-bench, fashion (default: all).
# Each phase has its own time limit, so a hang in one still leaves the rest.
# GLOO_HEADERS names a folder holding gloo/ for a PyTorch that ships none;
# JSON_HEADERS one holding nlohmann/ (Debian's nlohmann-json3-dev) where the machine has none;
# ZLIB_HEADERS one holding zlib.h and zconf.h where the machine has none.
set -uo pipefail
build=${1:-build-gpu}
PHASES=${PHASES:-checks bench ddp-bench fashion}
want() { [[ " $PHASES " == *" $1 "* ]]; }
py=$(command -v python3)
jobs=$(nproc)
phase() { echo; echo "== $* ($(date +%T))"; }

phase machine
nvidia-smi -L
"$py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))'
g++ --version | head -1
cmake --version | head -1
torch_dir=$("$py" -c 'import os, torch; print(os.path.dirname(torch.__file__))')
prefix=$("$py" -c 'import torch; print(torch.utils.cmake_prefix_path)')

phase build
extra=()
if [[ ! -d $torch_dir/include/gloo && -n ${GLOO_HEADERS:-} ]]; then
  echo "this PyTorch ships no Gloo headers: using $GLOO_HEADERS"
  extra+=(-DGLOO_INCLUDE_DIR="$GLOO_HEADERS")
fi
if [[ ! -f /usr/include/nlohmann/json.hpp && -n ${JSON_HEADERS:-} ]]; then
  extra+=(-DNLOHMANN_JSON_INCLUDE_DIR="$JSON_HEADERS")
fi
if [[ ! -f /usr/include/zlib.h && -n ${ZLIB_HEADERS:-} ]]; then
  extra+=(-DZLIB_INCLUDE_DIR="$ZLIB_HEADERS" -DZLIB_LIBRARY="$(ls /lib/x86_64-linux-gnu/libz.so.1 /usr/lib/x86_64-linux-gnu/libz.so.1 2>/dev/null | head -1)")
fi
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCLUSTERD_BUILD_DAEMON=OFF \
  -DCMAKE_PREFIX_PATH="$prefix" -DCTRAIN_PYTHON="$py" "${extra[@]}" > "$build.configure.log" 2>&1 ||
  { tail -40 "$build.configure.log"; exit 1; }
grep -E "ctrain:|Found Torch|CUDA|examples:" "$build.configure.log" | head -8
targets=(resnet_synthetic ddp_check)
want fashion && ! grep -q "fashion_mnist is not built" "$build.configure.log" && targets+=(fashion_mnist)
time ninja -C "$build" -j "$jobs" "${targets[@]}" 2>&1 | grep -vE "^\[[0-9]+/[0-9]+\] " | tail -40
[[ -x $build/examples/resnet_synthetic && -x $build/tests/train/ddp_check ]] || exit 1

if want checks; then
phase "DDP checks through NCCL"
timeout 240 ctest --test-dir "$build" -R "train: ddp" -j 3 --output-on-failure --timeout 120
# What the ranks said: backend and device of each.
timeout 60 ctest --test-dir "$build" -R "train: ddp small buckets" -V 2>&1 | grep -E "ddp_check rank|ok:|FAIL"
fi

want bench && phase "ResNet-18 bf16, one GPU: ctrain against PyTorch eager" &&
RANKS=1 DEVICE=cuda DTYPE=bfloat16 BATCH=${BATCH:-256} IMAGE=224 STEPS=30 WARMUP=5 ROUNDS=3 THREADS=4 \
  PYTHON="$py" timeout 200 bench/train/run_bench.sh "$build"

want ddp-bench && phase "ResNet-18 bf16, two ranks on the GPU: DDP over NCCL" &&
RANKS=2 DEVICE=cuda DTYPE=bfloat16 BATCH=${BATCH2:-128} IMAGE=224 STEPS=20 WARMUP=5 ROUNDS=2 THREADS=4 \
  PYTHON="$py" timeout 200 bench/train/run_bench.sh "$build"

if want fashion; then
  phase "Fashion-MNIST MLP, 2 ranks through NCCL, then scored alone on the CPU"
  data=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
  source scripts/ranks.sh  # free_port, rank_env
  port=$(free_port)
  out=$(mktemp -d)
  model=$out/model.pt
  # Three epochs with checkpoints: the third save prunes the first, which
  # once died of SIGSEGV against a pip libtorch (train/checkpoint.cc).
  for r in 0 1; do
    env $(rank_env "$r" 2 "$port") CLUSTER_CHECKPOINT_DIR="$out/checkpoints.rank$r" timeout 120 \
      "$build/examples/fashion_mnist" --model mlp --epochs 3 \
      --data-dir "$data" --save-model "$model" > "$build/fashion.rank$r.log" 2>&1 &
  done
  wait
  cat "$build/fashion.rank0.log"
  grep -iE "error|terminate" "$build/fashion.rank1.log"
  echo "rank 0's checkpoints (keep 2): $(ls "$out/checkpoints.rank0" | tr '\n' ' ')"
  CUDA_VISIBLE_DEVICES= timeout 60 "$build/examples/fashion_mnist" --evaluate "$model" --data-dir "$data"
fi
phase done
