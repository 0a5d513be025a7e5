# ranks.sh: sourced by the scripts that start training ranks by hand, as
# torchrun would (tests/train/run_ddp_check.sh, fashion_mnist_eval.sh,
# bench/train/run_bench.sh, gpu_run.sh). Needs $py, a Python.

# free_port: a TCP port free on loopback now, for MASTER_PORT.
free_port() { "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# rank_env RANK WORLD PORT: one rank's torchrun variables, as NAME=VALUE
# words for env(1). On a GPU build the ranks share whatever GPUs there are
# (one, on the GPU machines we are lent); NCCL refuses two ranks on one GPU
# of one host, so each rank names its own host (NCCL_HOSTID) and they talk
# over sockets on loopback, as ranks on separate machines would. A CPU
# build ignores both NCCL variables.
rank_env() {
  echo "RANK=$1 WORLD_SIZE=$2 LOCAL_RANK=$1 LOCAL_WORLD_SIZE=$2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$3" \
    "NCCL_HOSTID=rank-$1-of-$2 NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo}"
}
