#!/usr/bin/env bash
# gpu_machines_check.sh BUILD_DIR: a 2-rank job through clusterd whose ranks
# sit on two simulated machines of the GPU machine and talk NCCL over the
# network between them, as ranks on two real GPU machines would (Rule 11):
# nothing but eth0 joins the machines, each has its own host name, /tmp and
# network stack. The machines come from scripts/sim_cluster.sh (head, w1,
# w2, w3, client on a private bridge, 10.213.0.0/24).
#   1. the head starts on `head` offering no GPU, so the job's two ranks must
#      go to the workers; w1 and w2 each probe nvidia-smi for their GPU (the
#      one GPU of this machine: each simulated machine sees it, as its own);
#   2. from `client`, `clusterctl submit --follow` of a job asking 2 x
#      {CPU: 1, GPU: 1}: the code (a wrapper and the fashion_mnist binary
#      built by gpu_run.sh) ships from the client; the data is installed on
#      every machine (FASHION_MNIST_DIR, outside /tmp); NCCL_DEBUG=INFO;
#   3. checks: the job SUCCEEDED; its ranks ran on w1 and w2 with a GPU each;
#      the backend was NCCL and NCCL's sockets used each machine's eth0 (the
#      address clusterd gave as NCCL_SOCKET_IFNAME), never loopback; the
#      model trained;
#   4. w3 joins, and a 3-epoch job with max_failures 1 starts on two of the
#      three workers; once its first checkpoint is stored, the machine of its
#      rank 0 (the master) dies whole (scripts/sim_cluster.sh crash): the
#      job must restart on the two machines left, resume from the stored
#      checkpoint (rank 0's new machine never saw it) through NCCL, and
#      SUCCEED;
#   5. `clusterd stop` on each machine left leaves no process.
# One PASS/FAIL line per check at the end; exit 0 only if all passed.
#
# Environment:
#   CLUSTER_TARBALL   clusterd and clusterctl with their libraries
#                     (bench/train/pack_cluster.sh; default .gpu/cluster.tar.xz)
#   CLUSTER_BIN_DIR   instead of the tarball: a build folder holding
#                     daemon/clusterd and cli/clusterctl that run as they are
#   IP_BUNDLE         a folder with bin/ip and lib/ (iproute2 and its
#                     libraries), used where the machine has no `ip`
#   FASHION_MNIST_DIR the four .gz files (default .gpu/fashion-mnist)
#   GPU_CHECK_FAKE_GPUS=1  TEST MODE without a GPU: workers get --num-gpus 1,
#                     the ranks run on the CPU through Gloo, and the checks
#                     that need NCCL are a SKIP.
set -uo pipefail
root=$(pwd)
build=$(cd "${1:-build-gpu}" 2> /dev/null && pwd) || { echo "gpu_machines_check.sh: no build folder ${1:-build-gpu}"; exit 1; }
data=$(cd "${FASHION_MNIST_DIR:-$root/.gpu/fashion-mnist}" && pwd)
fake=${GPU_CHECK_FAKE_GPUS:-}
sim=$root/scripts/sim_cluster.sh
exec 2>&1
t0=$(date +%s)
step() { echo; echo "== $* ($(date +%T), +$(($(date +%s) - t0)) s)"; }
results=()
check() { results+=("$2: $1${3:+ ($3)}"); echo "-> $2: $1${3:+ ($3)}"; }

# Outside /tmp: each simulated machine has its own /tmp.
work=$(mktemp -d /var/tmp/gpumachines.XXXXXX)
machines_up=""
cleanup() {
  if [[ -n $machines_up ]]; then
    for m in w1 w2 w3 head; do timeout 30 "$sim" on "$m" clusterd stop --force > /dev/null 2>&1; done
    "$sim" down
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'echo interrupted; exit 130' INT TERM

step "tools"
if ! command -v ip > /dev/null && [[ -n ${IP_BUNDLE:-} ]]; then
  mkdir -p "$work/ip"
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%q exec %q "$@"\n' "$(cd "$IP_BUNDLE" && pwd)/lib" "$(cd "$IP_BUNDLE" && pwd)/bin/ip" > "$work/ip/ip"
  chmod +x "$work/ip/ip"
  export PATH=$work/ip:$PATH
  echo "no ip(8) here: iproute2 from $IP_BUNDLE"
fi
for t in ip unshare nsenter setsid mount; do command -v "$t" > /dev/null || { check "tool $t" FAIL "not found"; exit 1; }; done
ip -V
# clusterd and clusterctl for the machines: sim_cluster.sh puts
# $CLUSTERD_BUILD/daemon and /cli first on each machine's PATH.
mkdir -p "$work/build/daemon" "$work/build/cli"
if [[ -n ${CLUSTER_BIN_DIR:-} ]]; then
  bins=$(cd "$CLUSTER_BIN_DIR" && pwd); lib=""
  real_d=$bins/daemon/clusterd real_c=$bins/cli/clusterctl
else
  tar -C "$work" -xJf "${CLUSTER_TARBALL:-$root/.gpu/cluster.tar.xz}" || { check "bundle unpacked" FAIL; exit 1; }
  head -1 "$work/cluster/MANIFEST"
  lib=$work/cluster/lib real_d=$work/cluster/bin/clusterd real_c=$work/cluster/bin/clusterctl
fi
# The machine's own library path (where its CUDA driver may be found) goes
# on to the machines, behind the bundle's for clusterd; the ranks get it alone.
orig_ld=${LD_LIBRARY_PATH-}
ld=$lib${lib:+${orig_ld:+:}}$orig_ld
for pair in "daemon/clusterd $real_d" "cli/clusterctl $real_c"; do
  set -- $pair
  printf '#!/bin/sh\n%sexec %q "$@"\n' "${ld:+LD_LIBRARY_PATH=$(printf %q "$ld") }" "$2" > "$work/build/$1"
  chmod +x "$work/build/$1"
done
export CLUSTERD_BUILD=$work/build
cat "$work/build/daemon/clusterd"

step "machines"
"$sim" down > /dev/null 2>&1  # what an interrupted run left
machines_up=yes  # also a half-made set goes at the end
if "$sim" up head w1 w2 w3 client; then
  check "five simulated machines" PASS
else
  check "five simulated machines" FAIL "network namespaces, veth or bridge refused here"
  exit 1
fi
on() { timeout "${ON_TIMEOUT:-30}" "$sim" on "$@"; }
holder() { awk -v m="$1" '$1 == m {print $3}' /run/clusterd-sim/machines; }
on w1 sh -c 'echo "w1: $(cat /proc/sys/kernel/hostname), $(ip -4 -o addr show eth0 | awk "{print \$4}")"; nvidia-smi -L 2>/dev/null || echo "no nvidia-smi"'

step "cluster: head offers no GPU, w1 and w2 probe theirs (w3 joins later)"
on head clusterd start --head --node-ip-address 10.213.0.11 --num-gpus 0 --state-dir /tmp/state ||
  { check "head started" FAIL; exit 1; }
for m in w1 w2 w3 client; do
  install -m 0600 "/proc/$(holder head)/root/tmp/state/token" "/proc/$(holder "$m")/root/tmp/token"
done
gpu_flag=()
[[ -n $fake ]] && gpu_flag=(--num-gpus 1)
for m in w1 w2; do
  on "$m" clusterd start --address 10.213.0.11:6379 --token-file /tmp/token "${gpu_flag[@]}" || check "$m joined" FAIL
done
ctl() { on client sh -c 'CLUSTER_TOKEN=$(cat /tmp/token) exec clusterctl --address 10.213.0.11:6379 "$@"' ctl "$@"; }
for _ in $(seq 50); do
  [[ $(ctl status --json 2> /dev/null | grep -o '"state":"ALIVE"' | wc -l) -ge 3 ]] && break
  sleep 0.2
done
ctl status
gpus=$(ctl status --json | grep -o '"total":{"amounts":{[^}]*}' | tail -1 | grep -o '"GPU":[0-9.]*' | cut -d: -f2)
if [[ ${gpus:-0} == 2 ]]; then check "the cluster counts 2 GPUs, one per worker${fake:+ (TEST MODE)}" PASS
else check "the cluster counts 2 GPUs, one per worker" FAIL "GPU total ${gpus:-none}"; fi

step "a 2-rank job from the client: 2 x {CPU: 1, GPU: 1}, fashion_mnist, NCCL_DEBUG=INFO"
job=/proc/$(holder client)/root/tmp/job
mkdir -p "$job"
cp "$build/examples/fashion_mnist" "$job/"
cat > "$job/rank.sh" << EOF
#!/usr/bin/env bash
# Each rank says where it runs, then trains; the data is installed on every machine.
echo "rank \$RANK of \$WORLD_SIZE on \$(cat /proc/sys/kernel/hostname) (\$CLUSTER_NODE_IP): CUDA_VISIBLE_DEVICES=\${CUDA_VISIBLE_DEVICES-<unset>} NCCL_SOCKET_IFNAME=\${NCCL_SOCKET_IFNAME-<unset>} MASTER_ADDR=\$MASTER_ADDR"
$(if [[ -n $orig_ld ]]; then printf "export LD_LIBRARY_PATH=%q" "$orig_ld"; else echo "unset LD_LIBRARY_PATH"; fi)  # the bundle's libraries are clusterd's alone
exec ./fashion_mnist --model mlp --epochs \${TRAIN_EPOCHS:-${EPOCHS:-2}} --data-dir $(printf %q "$data")
EOF
cat "$job/rank.sh"
cat > "$job/job.yaml" << EOF
name: gpu-two-machines
entrypoint: [bash, rank.sh]
working_dir: .
num_workers: 2
resources_per_worker: {CPU: 1, GPU: 1}
timeout: 180s
env:
  CTRAIN_NUM_THREADS: "4"
  NCCL_DEBUG: INFO
  NCCL_DEBUG_SUBSYS: INIT,NET
EOF
log=$work/job.log
ON_TIMEOUT=220 on client sh -c 'cd /tmp/job && CLUSTER_TOKEN=$(cat /tmp/token) exec timeout 200 clusterctl --address 10.213.0.11:6379 submit job.yaml --follow' > "$log" 2>&1
rc=$?
grep -vE "NCCL INFO (cudaDriverVersion|Bootstrap|NET/Plugin|Comm config|P2P plugin|Assigned NET|NCCL_)" "$log" | head -80
echo "submit --follow exit code: $rc"
id=$(grep -o '^Submitted job job-[0-9a-z-]*' "$log" | awk '{print $3}')
[[ -n $id ]] && ctl job "$id" | head -20
if [[ $rc == 0 ]]; then check "job SUCCEEDED (submit --follow exit 0)" PASS "$id"; else check "job SUCCEEDED" FAIL "exit $rc"; fi
hosts=$(grep -o '^\(\[[^]]*\] \)\?rank [01] of 2 on [a-z0-9]*' "$log" | awk '{print $NF}' | sort -u | tr '\n' ' ')
cvd=$(grep -o 'CUDA_VISIBLE_DEVICES=[^ ]*' "$log" | sort -u | tr '\n' ' ')
if [[ $hosts == "w1 w2 " ]]; then check "one rank on w1, one on w2" PASS "$cvd"; else check "one rank on w1, one on w2" FAIL "hosts: ${hosts:-none}"; fi
ifn=$(grep -o 'NCCL_SOCKET_IFNAME=[^ ]*' "$log" | sort -u | tr '\n' ' ')
[[ $ifn == "NCCL_SOCKET_IFNAME=eth0 " ]] && check "clusterd named eth0 to NCCL on both" PASS || check "clusterd named eth0 to NCCL on both" FAIL "${ifn:-none}"
backend=$(grep -o 'backend=[a-z]*' "$log" | head -1)
nccl_if=$(grep -o 'NET/Socket : Using \[0\][a-z0-9]*:[0-9.]*' "$log" | sort -u | tr '\n' ' ')
if [[ -n $fake ]]; then
  check "ranks used NCCL over eth0" SKIP "TEST MODE: $backend"
elif [[ $backend == backend=nccl && $nccl_if == *"eth0:10.213.0."* && $nccl_if != *"lo:"* ]]; then
  check "ranks used NCCL over eth0" PASS "$backend; $nccl_if"
else
  check "ranks used NCCL over eth0" FAIL "${backend:-no backend line}; ${nccl_if:-no NET/Socket line}"
fi
acc=$(grep -o 'final test accuracy: [0-9.]*' "$log" | tail -1 | awk '{print $4}')
if [[ -n $acc ]] && awk -v a="$acc" 'BEGIN {exit !(a >= 0.75)}'; then check "trained: test accuracy >= 0.75" PASS "$acc"
else check "trained: test accuracy >= 0.75" FAIL "${acc:-no accuracy line}"; fi

step "w3 joins; a 3-epoch job, max_failures 1; the machine of its rank 0 dies after the first checkpoint"
on w3 clusterd start --address 10.213.0.11:6379 --token-file /tmp/token "${gpu_flag[@]}" || check "w3 joined" FAIL
for _ in $(seq 50); do
  [[ $(ctl status --json 2> /dev/null | grep -o '"state":"ALIVE"' | wc -l) -ge 4 ]] && break
  sleep 0.2
done
sed -e 's/^name: .*/name: gpu-machine-dies/' -e 's/^timeout: .*/timeout: 240s\nmax_failures: 1/' \
  -e 's/^env:$/env:\n  TRAIN_EPOCHS: "3"/' "$job/job.yaml" > "$job/dies.yaml"
cat "$job/dies.yaml"
id2=$(on client sh -c 'cd /tmp/job && CLUSTER_TOKEN=$(cat /tmp/token) exec clusterctl --address 10.213.0.11:6379 submit dies.yaml' |
  grep -o '^Submitted job job-[0-9a-z-]*' | awk '{print $3}')
stored=""
for _ in $(seq 240); do  # up to 2 minutes for the first epoch and its upload
  ctl job "$id2" 2> /dev/null | grep -q 'checkpoint_000000' && { stored=yes; break; }
  sleep 0.5
done
victim=$(ctl logs "$id2" 2> /dev/null | grep -o 'rank 0 of 2 on w[0-9]' | awk '{print $NF}' | head -1)
echo "job $id2: first checkpoint stored: ${stored:-no}; rank 0 on ${victim:-?}"
if [[ -n $stored && -n $victim ]]; then
  echo "+ scripts/sim_cluster.sh crash $victim ($(date +%T))"
  "$sim" crash "$victim"
  log2=$work/dies.log
  ON_TIMEOUT=220 on client sh -c 'CLUSTER_TOKEN=$(cat /tmp/token) exec timeout 200 clusterctl --address 10.213.0.11:6379 logs "$1" -f' ctl "$id2" > "$log2" 2>&1
  rc2=$?
  grep -vE "NCCL INFO" "$log2" | head -60
  ctl job "$id2" | head -24
  again=$(grep -o -- '--- attempt 1 on w[0-9]' "$log2" | awk '{print $NF}' | sort -u | tr '\n' ' ')
  resumed=$(grep -o 'resumed from checkpoint: starting at epoch [0-9]*' "$log2" | awk '{print $NF}' | head -1)
  acc2=$(grep -o 'final test accuracy: [0-9.]*' "$log2" | tail -1 | awk '{print $4}')
  [[ $rc2 == 0 ]] && check "job SUCCEEDED after its master's machine died" PASS "$id2" ||
    check "job SUCCEEDED after its master's machine died" FAIL "logs -f exit $rc2"
  if [[ $(wc -w <<< "$again") == 2 && $again != *"$victim"* ]]; then
    check "attempt 1 on the two machines left" PASS "$victim died; $again"
  else
    check "attempt 1 on the two machines left" FAIL "$victim died; attempt 1 on: ${again:-none}"
  fi
  backend2=$(grep -o 'backend=[a-z]*' "$log2" | tail -1)  # attempt 1's rank 0
  if [[ ${resumed:-0} -ge 1 && $backend2 == backend=$([[ -n $fake ]] && echo gloo || echo nccl) ]]; then
    check "attempt 1 resumed from the stored checkpoint" PASS "at epoch $resumed, $backend2"
  else
    check "attempt 1 resumed from the stored checkpoint" FAIL "resumed at: ${resumed:-never}, ${backend2:-no backend line}"
  fi
  if [[ -n $acc2 ]] && awk -v a="$acc2" 'BEGIN {exit !(a >= 0.75)}'; then check "trained on: test accuracy >= 0.75" PASS "$acc2"
  else check "trained on: test accuracy >= 0.75" FAIL "${acc2:-no accuracy line}"; fi
else
  check "job with a machine that dies" FAIL "no checkpoint stored or no rank 0 seen"
fi

step "clusterd stop on each machine left"
for m in w1 w2 w3 head; do [[ $m == "${victim:-}" ]] || on "$m" clusterd stop; done
left=""
for _ in $(seq 20); do
  left=$(for m in head w1 w2 w3 client; do ip netns pids "cdsim-$m"; done |
    grep -vxF -e "$(holder head)" -e "$(holder w1)" -e "$(holder w2)" -e "$(holder w3)" -e "$(holder client)")
  [[ -z $left ]] && break
  sleep 0.25
done
if [[ -z $left ]]; then check "no daemon, launcher or rank left" PASS
else ps -o pid,args -p "$(tr '\n' ',' <<< "$left" | sed 's/,$//')"; check "no daemon, launcher or rank left" FAIL; fi

step "summary ($(($(date +%s) - t0)) s)${fake:+ TEST MODE}"
failed=0
for r in "${results[@]}"; do echo "$r"; [[ $r == FAIL:* ]] && failed=$((failed + 1)); done
if ((failed == 0)); then echo "gpu_machines_check: PASS"; else echo "gpu_machines_check: FAIL ($failed checks)"; fi
((failed == 0))
