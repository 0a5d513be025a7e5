#!/usr/bin/env bash
# gpu_cluster_check.sh BUILD_DIR: clusterd itself on an NVIDIA GPU machine.
# Run from the repository root after bench/train/gpu_run.sh has built
# examples/fashion_mnist against that machine's PyTorch into BUILD_DIR:
#   PHASES=fashion bash bench/train/gpu_run.sh build-gpu
#   bash bench/train/gpu_cluster_check.sh build-gpu
# The machine has no gRPC, Protobuf, Boost, ... so clusterd and clusterctl
# come as built on Debian, with their libraries, in .gpu/cluster.tar.xz
# (bench/train/pack_cluster.sh .gpu, run on the build machine). Steps:
#   1. unpack it into a temporary folder; clusterd and clusterctl (only they:
#      the machine's own programs keep their libraries) run with
#      LD_LIBRARY_PATH naming its lib/, and ldd shows every library resolved
#      (the bundle's, or the machine's glibc and libstdc++);
#   2. a head on loopback with its own --temp-dir and --state-dir and free
#      ports, WITHOUT --num-gpus: the agent probes nvidia-smi itself
#      (daemon/agent/resource_probe.cc), and `clusterctl status` must show
#      the GPU; the running head must have mapped the bundle's libraries;
#   3. `clusterctl submit --follow` of a 1-rank job with {CPU: 1, GPU: 1}:
#      a wrapper (gpu_job.sh, in the shipped working_dir) prints the rank's
#      CUDA_VISIBLE_DEVICES and runs BUILD_DIR/examples/fashion_mnist --model
#      mlp --epochs 1 while sampling nvidia-smi (GPU memory in use, compute
#      processes): a run alone prints no device, so the GPU's side shows it;
#   4. a job asking for 2 GPUs of a 1-GPU cluster: refused, or left waiting
#      with the reason clusterd gives (stopped after a few seconds);
#   5. `clusterd stop`, then no process of this check may be left.
# One PASS/FAIL line per check at the end, and exit 0 only if all passed.
# Everything goes to stdout. About a minute on a GPU machine; every step has its
# own time limit (at most about 4 minutes in all).
#
# Environment:
#   FASHION_MNIST_DIR   the four Fashion-MNIST .gz files (default .gpu/fashion-mnist)
#   CLUSTER_TARBALL     the bundle (default .gpu/cluster.tar.xz)
#   GPU_CHECK_FAKE_GPUS=N  for testing this script WITHOUT a GPU: the head is
#       started with --num-gpus N instead of probing nvidia-smi; the job then
#       trains on the CPU with CUDA_VISIBLE_DEVICES=0, and where there is no
#       nvidia-smi the check that needs its view of the GPU is a SKIP.
#   GPU_CHECK_JOB_TIMEOUT  the 1-GPU job's limit, seconds (default 100; the
#       epoch takes about 90 s on 2 busy CPU cores in TEST MODE: give 200)
#   GPU_CHECK_KEEP=1    keep the temporary folder (logs, session) afterwards.
set -uo pipefail
root=$(pwd)
build=$(cd "${1:-build-gpu}" 2>/dev/null && pwd) || { echo "gpu_cluster_check.sh: no build folder ${1:-build-gpu}"; exit 1; }
tarball=${CLUSTER_TARBALL:-$root/.gpu/cluster.tar.xz}
data=${FASHION_MNIST_DIR:-$root/.gpu/fashion-mnist}
fake=${GPU_CHECK_FAKE_GPUS:-}
fm=$build/examples/fashion_mnist
job_timeout=${GPU_CHECK_JOB_TIMEOUT:-100}  # seconds for the 1-GPU job (well under a minute on a GPU)
exec 2>&1
t0=$(date +%s)
step() { echo; echo "== $* ($(date +%T), +$(($(date +%s) - t0)) s)"; }
results=()
check() {  # check NAME PASS|FAIL|SKIP [detail]
  results+=("$2: $1${3:+ ($3)}")
  echo "-> $2: $1${3:+ ($3)}"
}

orig_ld=${LD_LIBRARY_PATH-}
orig_ld_set=${LD_LIBRARY_PATH+yes}
tmp=$(mktemp -d /tmp/gpucheck.XXXXXX)
rt=$tmp/rt
bin=$tmp/cluster/bin
daemon_up=""
bundle_ld=$tmp/cluster/lib${orig_ld:+:$orig_ld}

# Every process this check started through the daemon carries GPU_CHECK_MARK
# (given to `clusterd start` only) or runs the bundle's clusterd.
ours() {
  local p
  for p in $(ls /proc | grep -E '^[0-9]+$'); do
    [[ $p == "$$" ]] && continue
    if [[ $(readlink "/proc/$p/exe" 2>/dev/null) == "$tmp/"* ]] ||
       grep -qzxF "GPU_CHECK_MARK=$tmp" "/proc/$p/environ" 2>/dev/null; then
      echo "$p"
    fi
  done
}
cleanup() {
  if [[ -n $daemon_up ]]; then
    timeout 20 env LD_LIBRARY_PATH="$bundle_ld" "$bin/clusterd" stop --force --temp-dir "$rt" > /dev/null 2>&1
  fi
  local left
  left=$(ours)
  [[ -n $left ]] && kill -9 $left 2> /dev/null
  if [[ -n ${GPU_CHECK_KEEP:-} ]]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'echo "interrupted"; exit 130' INT TERM

py=$(command -v python3)
source "$(dirname "$0")/../../scripts/ranks.sh"  # free_port
ctl() { timeout "${CTL_TIMEOUT:-20}" env LD_LIBRARY_PATH="$bundle_ld" "$bin/clusterctl" "$@"; }

step "machine"
echo "build: $build; data: $data; bundle: $tarball; temp: $tmp"
smi=$(command -v nvidia-smi || true)
if [[ -n $smi ]]; then
  echo "nvidia-smi: $smi"
  timeout 20 nvidia-smi --query-gpu=index,name,memory.total,memory.used,driver_version --format=csv
else
  echo "no nvidia-smi on PATH"
fi
if [[ -n $fake ]]; then
  echo "GPU_CHECK_FAKE_GPUS=$fake: TEST MODE, the head gets --num-gpus $fake instead of probing nvidia-smi"
fi
[[ -x $fm ]] || echo "WARNING: $fm is not built"
ls "$data"/*.gz > /dev/null 2>&1 || echo "WARNING: no Fashion-MNIST .gz files in $data"

step "unpack the bundle"
unpack() {
  if command -v xz > /dev/null; then timeout 60 tar -C "$tmp" -xJf "$tarball"
  else  # no xz(1): Python's lzma
    timeout 60 python3 -c 'import sys, tarfile
kw = {"filter": "tar"} if hasattr(tarfile, "tar_filter") else {}
tarfile.open(sys.argv[1]).extractall(sys.argv[2], **kw)' "$tarball" "$tmp"
  fi
}
if unpack; then
  head -3 "$tmp/cluster/MANIFEST"
  echo "LD_LIBRARY_PATH for clusterd and clusterctl: $bundle_ld"
  ldd_out=$(LD_LIBRARY_PATH=$bundle_ld ldd "$bin/clusterd" "$bin/clusterctl" 2>&1)
  from_bundle=$(grep -c "=> $tmp/cluster/lib/" <<< "$ldd_out")
  not_found=$(grep "not found" <<< "$ldd_out" | sort -u)
  elsewhere=$(grep "=> /" <<< "$ldd_out" | grep -v "=> $tmp/cluster/lib/" | awk '{print $3}' | sort -u | tr '\n' ' ')
  echo "ldd (clusterd, clusterctl): $from_bundle entries from the bundle; from the machine: $elsewhere"
  env LD_LIBRARY_PATH="$bundle_ld" "$bin/clusterd" --version
  if [[ -z $not_found ]] && grep -q "libgrpc++.so.* => $tmp/cluster/lib/" <<< "$ldd_out"; then
    check "bundle: every library resolves, gRPC from the bundle" PASS
  else
    echo "$not_found"
    check "bundle: every library resolves, gRPC from the bundle" FAIL "$(wc -l <<< "$not_found") not found"
  fi
else
  check "bundle: unpacked" FAIL "$tarball"
  exit 1
fi

if [[ -n $fake ]]; then gpus_from="--num-gpus $fake, TEST MODE"; else gpus_from="probed by clusterd from nvidia-smi"; fi
step "start a head on loopback (GPUs: $gpus_from)"
port=$(free_port)
dash=$(free_port)
[[ $dash == "$port" ]] && dash=$((port + 1))
export CLUSTER_TEMP_DIR=$rt CLUSTER_ADDRESS=127.0.0.1:$port
gpu_flags=()
[[ -n $fake ]] && gpu_flags=(--num-gpus "$fake")
echo "+ clusterd start --head --port $port --dashboard-port $dash --node-ip-address 127.0.0.1 --node-name gpu-check --temp-dir $rt --state-dir $tmp/state ${gpu_flags[*]}"
if GPU_CHECK_MARK=$tmp timeout 30 env LD_LIBRARY_PATH="$bundle_ld" "$bin/clusterd" start --head --port "$port" --dashboard-port "$dash" \
    --node-ip-address 127.0.0.1 --node-name gpu-check --temp-dir "$rt" --state-dir "$tmp/state" "${gpu_flags[@]}"; then
  daemon_up=yes
  check "head started" PASS "127.0.0.1:$port"
else
  check "head started" FAIL
  cat "$rt"/session_latest/logs/*.log 2> /dev/null | tail -30
  exit 1
fi
for _ in $(seq 50); do
  ctl status --json 2> /dev/null | grep -q '"state":"ALIVE"' && break
  sleep 0.2
done
head_pid=$(ls "$rt"/session_latest/pids/ 2> /dev/null | sed -n 's/^head-\([0-9]*\)\.pid$/\1/p' | head -1)
if [[ -n $head_pid ]] && grep -q "$tmp/cluster/lib/libgrpc++" "/proc/$head_pid/maps" 2> /dev/null; then
  check "running head (pid $head_pid) maps the bundle's libraries" PASS \
    "$(grep -c "$tmp/cluster/lib/" "/proc/$head_pid/maps") mappings under $tmp/cluster/lib"
else
  check "running head maps the bundle's libraries" FAIL "pid ${head_pid:-?}"
fi

step "clusterctl status"
ctl status
status_json=$(ctl status --json)
gpus=$(grep -o '"total":{"amounts":{[^}]*}' <<< "$status_json" | tail -1 | grep -o '"GPU":[0-9.]*' | cut -d: -f2)
indexes=$(grep -o '"gpu_indexes":\[[^]]*\]' <<< "$status_json" | head -1)
echo "cluster total GPU: ${gpus:-none}; head node $indexes"
if [[ ${gpus:-0} == 1 ]]; then
  check "status shows GPU 1${fake:+ (TEST MODE: --num-gpus $fake, not probed)}" PASS "$indexes"
else
  check "status shows GPU 1" FAIL "GPU total ${gpus:-none}"
fi

one_gpu_job() {
step "a 1-rank job asking for {CPU: 1, GPU: 1}: fashion_mnist --model mlp --epochs 1"
job=$tmp/job
mkdir -p "$job"
{
  echo '#!/usr/bin/env bash'
  echo '# The rank: say which GPU clusterd gave it, train, and watch the GPU meanwhile.'
  echo '# The bundle'"'"'s libraries are for clusterd only: the machine'"'"'s own library path back.'
  if [[ -n $orig_ld_set ]]; then printf 'export LD_LIBRARY_PATH=%q\n' "$orig_ld"; else echo 'unset LD_LIBRARY_PATH'; fi
  printf 'fm=%q data=%q\n' "$fm" "$data"
  cat << 'EOF'
echo "rank $RANK of $WORLD_SIZE (job $CLUSTER_JOB_ID, node $CLUSTER_NODE_IP): CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-<unset>}"
smi=$(command -v nvidia-smi)
sample() {
  while :; do
    echo "mem $(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null | head -1)"
    nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader 2>/dev/null | sed 's/^/app /'
    sleep 0.3
  done
}
if [ -n "$smi" ]; then
  base=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1)
  sample > samples.txt &
  sampler=$!
fi
"$fm" --model mlp --epochs 1 --data-dir "$data" &
pid=$!
wait $pid
rc=$?
if [ -n "$smi" ]; then
  kill $sampler 2>/dev/null; wait $sampler 2>/dev/null
  peak=$(awk '$1 == "mem" && $2 + 0 > m {m = $2 + 0} END {print m + 0}' samples.txt)
  echo "gpu memory used: ${base} MiB before, at most ${peak} MiB while fashion_mnist (pid $pid) ran"
  seen=$(grep -E "^app ($pid,|.*fashion_mnist)" samples.txt | sort -u | head -3)
  echo "gpu compute processes seen by nvidia-smi meanwhile:"
  grep "^app " samples.txt | sort -u | head -5
  if [ -n "$seen" ]; then echo "fashion_mnist among them: yes"; else echo "fashion_mnist among them: no"; fi
else
  echo "no nvidia-smi: no view of the GPU"
fi
echo "fashion_mnist exit code: $rc"
exit $rc
EOF
} > "$job/gpu_job.sh"
chmod +x "$job/gpu_job.sh"
cat > "$job/job.yaml" << EOF
name: gpu-check-1gpu
entrypoint: [bash, gpu_job.sh]
working_dir: .
num_workers: 1
resources_per_worker: {CPU: 1, GPU: 1}
timeout: ${job_timeout}s
env:
  CTRAIN_NUM_THREADS: "4"
EOF
cat "$job/job.yaml"
log1=$tmp/job1.log
(cd "$job" && CTL_TIMEOUT=$((job_timeout + 20)) ctl submit job.yaml --follow) > "$log1" 2>&1
rc1=$?
cat "$log1"
echo "clusterctl submit --follow exit code: $rc1"
job1=$(grep -o '^Submitted job job-[0-9a-z-]*' "$log1" | awk '{print $3}')
[[ -n $job1 ]] && ctl job "$job1" | head -20
cvd=$(grep -o 'CUDA_VISIBLE_DEVICES=[^ ]*' "$log1" | head -1)
acc=$(grep -o 'final test accuracy: [0-9.]*' "$log1" | tail -1 | awk '{print $4}')
if [[ $rc1 == 0 ]]; then check "1-GPU job SUCCEEDED (submit --follow exit 0)" PASS "$job1"
else check "1-GPU job SUCCEEDED (submit --follow exit 0)" FAIL "exit $rc1"; fi
if [[ $cvd == CUDA_VISIBLE_DEVICES=0 || $cvd =~ ^CUDA_VISIBLE_DEVICES=[0-9]+$ ]]; then
  check "rank got its GPU" PASS "$cvd"
else
  check "rank got its GPU" FAIL "${cvd:-no CUDA_VISIBLE_DEVICES line}"
fi
if [[ -n $acc ]] && awk -v a="$acc" 'BEGIN {exit !(a >= 0.70)}'; then
  check "fashion_mnist trained: test accuracy >= 0.70" PASS "$acc"
else
  check "fashion_mnist trained: test accuracy >= 0.70" FAIL "${acc:-no accuracy line}"
fi
peak=$(grep -o 'at most [0-9]* MiB' "$log1" | awk '{print $3}')
base=$(grep -o 'used: [0-9]* MiB before' "$log1" | awk '{print $2}')
app=$(grep -c '^fashion_mnist among them: yes' "$log1")
if [[ -n $fake && -z $smi ]]; then
  check "fashion_mnist ran on the GPU (nvidia-smi)" SKIP "TEST MODE without nvidia-smi"
elif [[ $app -gt 0 ]] || { [[ -n $peak && -n $base ]] && ((peak - base >= 100)); }; then
  check "fashion_mnist ran on the GPU (nvidia-smi)" PASS \
    "memory ${base:-?} -> ${peak:-?} MiB; compute process of fashion_mnist seen: $([[ $app -gt 0 ]] && echo yes || echo no)"
else
  check "fashion_mnist ran on the GPU (nvidia-smi)" FAIL "memory ${base:-?} -> ${peak:-?} MiB, no fashion_mnist process seen"
fi
}

two_gpu_job() {
step "a job asking for 2 GPUs of this 1-GPU cluster"
echo "+ clusterctl submit job.yaml --set name=gpu-check-2gpu --set resources_per_worker.GPU=2"
out2=$(cd "$job" && ctl submit job.yaml --set name=gpu-check-2gpu --set resources_per_worker.GPU=2 2>&1)
rc2=$?
echo "$out2"
echo "clusterctl submit exit code: $rc2"
job2=$(grep -o 'job-[0-9a-z-]*' <<< "$out2" | head -1)
if [[ $rc2 != 0 ]]; then
  if grep -qi gpu <<< "$out2"; then check "2-GPU job refused" PASS "at submit, naming the GPU"
  else check "2-GPU job refused" FAIL "refused without naming the GPU"; fi
elif [[ -n $job2 ]]; then
  state=""
  for _ in $(seq 10); do
    sleep 0.5
    state=$(ctl job "$job2" 2> /dev/null | head -1 | awk '{print $NF}')
    [[ $state == INFEASIBLE || $state == RUNNING || $state == SUCCEEDED || $state == FAILED ]] && break
  done
  ctl job "$job2" | head -12
  echo "--- clusterctl status, demands:"
  ctl status | sed -n '/^Demands/,$p'
  reason=$(ctl job "$job2" 2> /dev/null | sed -n 's/^ *reason: *//p' | head -1)
  if [[ $state == INFEASIBLE || $state == PENDING ]] && grep -qi gpu <<< "$reason$(ctl status 2> /dev/null | sed -n '/^Demands/,$p')"; then
    check "2-GPU job not placed, with a reason naming the GPUs" PASS "$state: $reason"
  else
    check "2-GPU job not placed, with a reason naming the GPUs" FAIL "state ${state:-?}: ${reason:-no reason}"
  fi
  echo "+ clusterctl stop $job2"
  ctl stop "$job2"
  sleep 1
  ctl jobs
else
  check "2-GPU job refused or waiting" FAIL "no job id in: $out2"
fi
}

if [[ ${gpus:-0} == 0 ]]; then
  check "1-GPU job" FAIL "not submitted: the cluster has no GPU, it would wait forever"
  check "2-GPU job" FAIL "not submitted: the cluster has no GPU"
else
  one_gpu_job
  two_gpu_job
fi

step "clusterd stop"
timeout 40 env LD_LIBRARY_PATH="$bundle_ld" "$bin/clusterd" stop --temp-dir "$rt"
echo "clusterd stop exit code: $?"
daemon_up=""
left=""
for _ in $(seq 20); do
  left=$(ours)
  [[ -z $left ]] && break
  sleep 0.25
done
if [[ -n $head_pid && $(ps -o stat= -p "$head_pid" 2> /dev/null) == Z* ]]; then
  echo "(the head, pid $head_pid, has exited: a zombie until pid 1 reaps it, as it was daemonized)"
fi
if [[ -z $left ]]; then
  check "no daemon, launcher or rank left" PASS
else
  ps -o pid,ppid,stat,args -p "$(tr '\n' ',' <<< "$left" | sed 's/,$//')"
  check "no daemon, launcher or rank left" FAIL "pids $(tr '\n' ' ' <<< "$left")"
fi

step "summary ($(($(date +%s) - t0)) s)${fake:+ TEST MODE, GPU_CHECK_FAKE_GPUS=$fake}"
failed=0
for r in "${results[@]}"; do
  echo "$r"
  [[ $r == FAIL:* ]] && failed=$((failed + 1))
done
if ((failed == 0)); then echo "gpu_cluster_check: PASS"; else echo "gpu_cluster_check: FAIL ($failed checks)"; fi
((failed == 0))
