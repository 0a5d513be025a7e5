#!/usr/bin/env bash
# fashion_mnist_eval.sh FASHION_MNIST_BIN [PYTHON]
# examples/fashion_mnist --save-model and --evaluate: a model scored alone
# gets exactly the test accuracy its training run reported.
#  1. MLP, 1 epoch, alone, with a checkpoint dir and --save-model out/model.pt:
#     --evaluate on the file and on the checkpoint folder print the training's
#     final accuracy; the file was written whole (no temp file left).
#  2. CNN, 2 ranks: the same (BatchNorm buffers differ between ranks after the
#     last step, so this fails unless the job scores rank 0's model).
#  3. One-line errors, status 1: a missing path, a file that is not a torch
#     archive, an archive that is not a model, a folder of checkpoints, the
#     other model kind asked with --model; --save-model naming a folder fails
#     before training.
# Training reads a 6000-image slice of the training set (made here) so the
# whole test takes seconds; the test set is the real one.
set -euo pipefail
bin=$(realpath "$1")
py=${2:-/usr/bin/python3}
source "$(dirname "$(realpath "$0")")/../../scripts/ranks.sh"  # free_port, rank_env
data=/usr/share/datasets/fashion-mnist
if [[ ! -r $data/t10k-images-idx3-ubyte.gz ]]; then
  echo "SKIP: $data not installed (Debian's dataset-fashion-mnist)"
  exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/fashion_mnist_eval.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"

fail() { echo "FAIL: $*" >&2; exit 1; }

# A gzipped IDX file of the first N items of another: new header, same bytes.
be32() { printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(($1 >> 24 & 255)) $(($1 >> 16 & 255)) $(($1 >> 8 & 255)) $(($1 & 255)))"; }
n=6000
mkdir small
{ be32 $((0x803)); be32 $n; be32 28; be32 28
  zcat $data/train-images-idx3-ubyte.gz | tail -c +17 | head -c $((n * 784)) || true; } | gzip -1 > small/train-images-idx3-ubyte.gz
{ be32 $((0x801)); be32 $n
  zcat $data/train-labels-idx1-ubyte.gz | tail -c +9 | head -c $n || true; } | gzip -1 > small/train-labels-idx1-ubyte.gz
ln -s $data/t10k-images-idx3-ubyte.gz $data/t10k-labels-idx1-ubyte.gz small/

# The number in "PREFIX 0.1234" of a log, or fail.
accuracy_in() {
  local v
  v=$(sed -n "s/^$2 \([0-9.]*\)\$/\1/p" "$1")
  [[ -n $v ]] || { cat "$1" >&2; fail "no '$2' line in $1"; }
  echo "$v"
}
# evaluate_matches WANT ARGS...: --evaluate ARGS prints "test accuracy: WANT".
evaluate_matches() {
  local want=$1; shift
  local t0=$SECONDS
  "$bin" --data-dir small --evaluate "$@" > eval.log 2>&1 || { cat eval.log >&2; fail "--evaluate $* failed"; }
  local got
  got=$(accuracy_in eval.log "test accuracy:")
  [[ $got == "$want" ]] || { cat eval.log >&2; fail "--evaluate $*: $got, training reported $want"; }
  echo "ok: --evaluate $* -> $got ($((SECONDS - t0)) s)"
}
# refused WHAT ARGS...: status 1 and one line on stderr that contains WHAT.
refused() {
  local what=$1; shift
  local rc=0
  "$bin" --data-dir small "$@" > out.log 2> err.log || rc=$?
  [[ $rc == 1 ]] || { cat out.log err.log >&2; fail "$*: status $rc, want 1"; }
  [[ $(wc -l < err.log) == 1 ]] || { cat err.log >&2; fail "$*: not one line"; }
  grep -qF -- "$what" err.log || { cat err.log >&2; fail "$*: no '$what' in the error"; }
  echo "ok: $* -> $(cat err.log)"
}

unset RANK WORLD_SIZE MASTER_ADDR MASTER_PORT LOCAL_RANK LOCAL_WORLD_SIZE NODE_RANK CLUSTER_AGENT_SOCKET

# 1. MLP alone.
t0=$SECONDS
CLUSTER_CHECKPOINT_DIR=$work/ckpt "$bin" --data-dir small --model mlp --epochs 1 --batch-size 256 \
  --save-model out/model.pt > train.log 2>&1 || { cat train.log >&2; fail "training failed"; }
mlp=$(accuracy_in train.log "final test accuracy:")
echo "ok: MLP trained alone, final test accuracy $mlp ($((SECONDS - t0)) s)"
[[ $(ls -A out) == model.pt ]] || fail "out/ holds $(ls -A out | tr '\n' ' '), want model.pt alone"
evaluate_matches "$mlp" out/model.pt
evaluate_matches "$mlp" ckpt/checkpoint_000000
evaluate_matches "$mlp" "$work/ckpt/checkpoint_000000/model.pt" --model mlp

# 2. CNN on 2 ranks.
port=$(free_port)
t0=$SECONDS
pids=()
for r in 0 1; do
  env $(rank_env "$r" 2 "$port") CTRAIN_TIMEOUT_S=60 \
    CLUSTER_CHECKPOINT_DIR=$work/ckpt2 "$bin" --data-dir small --model cnn --epochs 1 --batch-size 128 \
    --save-model cnn.pt > train2.rank$r.log 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || { cat train2.rank*.log >&2; fail "2-rank training failed"; }; done
cnn=$(accuracy_in train2.rank0.log "final test accuracy:")
echo "ok: CNN trained on 2 ranks, final test accuracy $cnn ($((SECONDS - t0)) s)"
evaluate_matches "$cnn" cnn.pt
evaluate_matches "$cnn" ckpt2/checkpoint_000000 --model cnn

# 3. Errors.
refused "no such file or folder" --evaluate missing.pt
refused "not a model file" --evaluate ckpt/checkpoint_000000/meta.json
refused "not a fashion_mnist model" --evaluate ckpt/checkpoint_000000/optimizer.pt
refused "give one, e.g. the newest ckpt/checkpoint_000000" --evaluate ckpt
refused "pass --model mlp" --evaluate ckpt/checkpoint_000000 --model cnn
refused "pass --model cnn" --evaluate cnn.pt --model mlp
t0=$SECONDS
refused "that is a folder" --model mlp --epochs 1 --save-model out
(( SECONDS - t0 < 5 )) || fail "--save-model naming a folder was refused only after training"
echo PASS
