#!/usr/bin/env bash
# Simulated machines for trying a cluster by hand, as the [machines] tests
# make them (tests/integration/machines.cc): each machine has its own network
# namespace (eth0 on a private bridge, 10.213.0.0/24), its own /tmp and its
# own host name. Needs root.
#
#   scripts/sim_cluster.sh up [head w1 w2 client]   # make the machines
#   scripts/sim_cluster.sh on w1 clusterd start ...   # run a command on one
#   scripts/sim_cluster.sh on w1                      # a shell on it
#   scripts/sim_cluster.sh cut w1 | restore w1        # pull / plug its cable
#   scripts/sim_cluster.sh crash w1                   # the machine dies: every process, its /tmp
#   scripts/sim_cluster.sh list                       # machines and addresses
#   scripts/sim_cluster.sh down                       # everything goes
#
# Example:
#   scripts/sim_cluster.sh up
#   scripts/sim_cluster.sh on head clusterd start --head --node-ip-address 10.213.0.11
#   T=$(scripts/sim_cluster.sh on head cat /tmp/clusterd/session_latest/token)
#   scripts/sim_cluster.sh on w1 clusterd start --address 10.213.0.11:6379 --token "$T" --node-ip-address 10.213.0.12
#   scripts/sim_cluster.sh on client clusterctl status --address 10.213.0.11:6379 --token "$T"
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${CLUSTERD_BUILD:-$ROOT/build}"
PREFIX="cdsim-"             # not the tests' cds<pid>x<n>- names: their sweep leaves these alone
STATE=/run/clusterd-sim      # one line per machine: name ip holder-pid
BRIDGE="${PREFIX}_bridge"

die() { echo "sim_cluster: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (network and mount namespaces)"

holder_of() { awk -v m="$1" '$1 == m {print $3}' "$STATE/machines" 2>/dev/null; }

add_machine() {  # name n
  local name=$1 n=$2 ip="10.213.0.$((10 + $2))" ns="$PREFIX$1"
  ip netns add "$ns"
  ip -n "$BRIDGE" link add "port$n" type veth peer name eth0 netns "$ns"
  ip -n "$BRIDGE" link set "port$n" master br0 up
  ip -n "$ns" link set lo up
  ip -n "$ns" addr add "$ip/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" route add default dev eth0
  # The same holder as the tests', without the /tmp-checkout juggling:
  # keep the checkout outside /tmp to use this script.
  setsid ip netns exec "$ns" unshare -m -u --propagation private sh -c "
    set -e
    umount -l /run/netns 2>/dev/null || true
    mount -t tmpfs tmpfs /run/netns 2>/dev/null || true
    mount -t tmpfs -o mode=1777 tmpfs /tmp
    # its own /var/lib/clusterd (a head's default --state-dir), as on a real machine
    mkdir -p /var/lib/clusterd /tmp/.var-lib-clusterd
    mount --bind /tmp/.var-lib-clusterd /var/lib/clusterd
    echo $name > /proc/sys/kernel/hostname  # hostname(1) is not on every machine
    : > /tmp/.etc-hosts; mount --bind /tmp/.etc-hosts /etc/hosts
    echo '# a simulated machine: no DNS server' > /tmp/.etc-resolv.conf
    if [ -e /etc/resolv.conf ]; then mount --bind /tmp/.etc-resolv.conf /etc/resolv.conf; fi
    mkdir -m 0700 /tmp/home
    exec sleep 86400" < /dev/null > /dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 100); do [ "$(cat /proc/$pid/comm 2>/dev/null)" = sleep ] && break; sleep 0.05; done
  [ "$(cat /proc/$pid/comm 2>/dev/null)" = sleep ] || die "machine $name did not start"
  echo "$name $ip $pid" >> "$STATE/machines"
}

write_hosts() {  # every machine by name; its own name is 127.0.1.1, as on stock Debian
  while read -r name _ pid; do
    { printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n' "$name"
      awk -v m="$name" '$1 != m {print $2 "\t" $1}' "$STATE/machines"; } > "/proc/$pid/root/tmp/.etc-hosts"
  done < "$STATE/machines"
}

cmd_up() {
  [ ! -e "$STATE/machines" ] || die "already up (scripts/sim_cluster.sh down first)"
  [ $# -gt 0 ] || set -- head w1 w2 client
  mkdir -p "$STATE"; : > "$STATE/machines"
  ip netns add "$BRIDGE"
  ip -n "$BRIDGE" link add br0 type bridge
  ip -n "$BRIDGE" link set br0 up
  local n=0
  for name in "$@"; do n=$((n + 1)); add_machine "$name" "$n"; done
  write_hosts
  cmd_list
}

cmd_on() {  # machine [command...]
  local pid; pid=$(holder_of "$1"); [ -n "$pid" ] || die "no machine $1"
  shift
  [ $# -gt 0 ] || set -- bash
  exec nsenter -t "$pid" -m -n -u -- env -i -C /tmp/home HOME=/tmp/home USER=root LOGNAME=root TERM="${TERM:-dumb}" \
    PATH="$BUILD/daemon:$BUILD/cli:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" "$@"
}

port_of() { awk -v m="$1" '$1 == m {print "port" NR}' "$STATE/machines"; }

cmd_list() {  # column(1) is not on every machine either
  [ -e "$STATE/machines" ] || die "not up"
  { column -t "$STATE/machines" 2>/dev/null || cat "$STATE/machines"; } | sed 's/^/  /'
}

cmd_down() {
  if [ -e "$STATE/machines" ]; then
    while read -r name _ pid; do
      ip netns pids "$PREFIX$name" 2>/dev/null | xargs -r kill -9
      ip netns del "$PREFIX$name" 2>/dev/null || true
    done < "$STATE/machines"
  fi
  ip netns del "$BRIDGE" 2>/dev/null || true
  rm -rf "$STATE"
}

case "${1:-}" in
  up) shift; cmd_up "$@" ;;
  on) shift; [ $# -ge 1 ] || die "on MACHINE [COMMAND...]"; cmd_on "$@" ;;
  cut) ip -n "$BRIDGE" link set "$(port_of "$2")" down ;;
  restore) ip -n "$BRIDGE" link set "$(port_of "$2")" up ;;
  crash) ip netns pids "$PREFIX$2" | xargs -r kill -9 ;;
  list) cmd_list ;;
  down) cmd_down ;;
  *) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
