#!/bin/bash
# Run by deb_install_test.sh inside its overlay root: install, use, remove
# and purge the package. Usage: deb_install_inside.sh DEB
set -euo pipefail
deb=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
version=$(dpkg-deb -f "$deb" Version)

# A machine that never had clusterd (a root test on the real machine may have
# used /var/lib/clusterd; this is the overlay's copy).
userdel clusterd 2>/dev/null || true
groupdel clusterd 2>/dev/null || true
rm -rf /var/lib/clusterd /var/cache/clusterd /etc/default/clusterd
export PATH=/usr/sbin:/usr/bin:/sbin:/bin

echo "--- dpkg -i"
dpkg -i "$deb"
[ "$(/usr/bin/clusterd --version)" = "clusterd $version" ] || fail "clusterd --version: $(/usr/bin/clusterd --version)"
[ "$(clusterctl version)" = "clusterctl $version" ] || fail "clusterctl version: $(clusterctl version)"

uid=$(id -u clusterd) || fail "no clusterd user"
[ "$uid" -lt 1000 ] || fail "clusterd is not a system user (uid $uid)"
[ "$(stat -c '%U %a' /var/lib/clusterd)" = "clusterd 700" ] || fail "/var/lib/clusterd: $(stat -c '%U %a' /var/lib/clusterd)"
[ "$(stat -c '%U %a' /var/lib/clusterd/token)" = "clusterd 600" ] || fail "token: $(stat -c '%U %a' /var/lib/clusterd/token)"
grep -qxE '[0-9a-f]{32}' /var/lib/clusterd/token || fail "the token is not 32 hex digits"
token=$(cat /var/lib/clusterd/token)

echo "--- systemd-analyze verify"
if out=$(systemd-analyze verify --man=no /usr/lib/systemd/system/clusterd-head.service \
           /usr/lib/systemd/system/clusterd-worker.service 2>&1); then
  [ -z "$out" ] || fail "systemd-analyze verify had something to say: $out"
  echo "ok: both units verified"
else
  fail "systemd-analyze verify: $out"
fi

echo "--- find_package(ctrain)"
mkdir -p /tmp/consumer && cd /tmp/consumer
cat > CMakeLists.txt <<'CMAKE'
cmake_minimum_required(VERSION 3.20)
project(consumer CXX)
find_package(ctrain REQUIRED)
add_executable(consumer main.cc)
target_link_libraries(consumer ctrain::ctrain_wire)
if(NOT TARGET ctrain::ctrain)
  message(FATAL_ERROR "find_package(ctrain) gave no ctrain::ctrain")
endif()
CMAKE
cat > main.cc <<'CC'
#include <ctrain/env.h>
#include <cstdio>
int main() { std::printf("world_size %d\n", ctrain::read_dist_env().world_size); }
CC
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/tmp/consumer.log 2>&1 || { cat /tmp/consumer.log; fail "find_package(ctrain)"; }
cmake --build build >>/tmp/consumer.log 2>&1 || { cat /tmp/consumer.log; fail "building against ctrain::ctrain_wire"; }
[ "$(./build/consumer)" = "world_size 1" ] || fail "the consumer program"
echo "ok: a program found, built and linked ctrain"
cd /

echo "--- bash completion"
# Loaded the way bash-completion finds a command's completion: by its name.
words=$(bash -c 'source /usr/share/bash-completion/bash_completion; _completion_loader clusterctl
  COMP_WORDS=(clusterctl --address h:1 st); COMP_CWORD=3; COMP_LINE="clusterctl --address h:1 st"; COMP_POINT=${#COMP_LINE}
  _clusterctl clusterctl st --address; echo "${COMPREPLY[*]}"')
for w in status stop stop-node; do grep -qw -- "$w" <<<"$words" || fail "completion of 'st' lacks $w: $words"; done
echo "ok: clusterctl st<TAB> -> $words"
# Every command of the installed clusterctl's help, those added later too.
words=$(bash -c 'source /usr/share/bash-completion/bash_completion; _completion_loader clusterctl
  COMP_WORDS=(clusterctl qu); COMP_CWORD=1; COMP_LINE="clusterctl qu"; COMP_POINT=${#COMP_LINE}
  _clusterctl clusterctl qu clusterctl; echo "${COMPREPLY[*]}"')
[ "$words" = "queue quota" ] || fail "completion of 'qu': '$words'"
echo "ok: clusterctl qu<TAB> -> $words"
# The sweep command is offered, and an option's value (--tls-ca's) is not taken for the command.
words=$(bash -c 'source /usr/share/bash-completion/bash_completion; _completion_loader clusterctl
  COMP_WORDS=(clusterctl --tls-ca ca.pem sw); COMP_CWORD=3; COMP_LINE="clusterctl --tls-ca ca.pem sw"; COMP_POINT=${#COMP_LINE}
  _clusterctl clusterctl sw ca.pem; echo "${COMPREPLY[*]}"')
[ "$words" = sweep ] || fail "completion of 'clusterctl --tls-ca ca.pem sw': '$words'"
echo "ok: clusterctl --tls-ca ca.pem sw<TAB> -> $words"

echo "--- the head unit's command, as systemd would run it"
# No systemd runs here, so do its part by hand: free ports in the settings,
# the cache folder (CacheDirectory=), the user, $NOTIFY_SOCKET, and
# ExecStart= from the installed unit with /etc/default/clusterd's values.
read -r port dashboard < <(python3 -c 'import socket
s = [socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1", 0)) for x in s]
print(*[x.getsockname()[1] for x in s])')
sed -i -e "s/^CLUSTERD_PORT=.*/CLUSTERD_PORT=$port/" -e "s/^CLUSTERD_DASHBOARD_PORT=.*/CLUSTERD_DASHBOARD_PORT=$dashboard/" \
  -e "s/^CLUSTERD_FLAGS=.*/CLUSTERD_FLAGS='--node-ip-address 127.0.0.1'/" /etc/default/clusterd
install -d -m 0700 -o clusterd -g clusterd /var/cache/clusterd
exec_start=$(sed -n 's/^ExecStart=//p' /usr/lib/systemd/system/clusterd-head.service)
command=$(set -a; . /etc/default/clusterd; eval "printf '%s ' $exec_start")
python3 - "$command" <<'PY' || fail "the head unit's command did not report READY=1"
import os, socket, subprocess, sys
path = "/run/clusterd-notify"
listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
listener.bind(path)
os.chown(path, int(subprocess.check_output(["id", "-u", "clusterd"])), -1)
listener.settimeout(60)
head = subprocess.Popen(["runuser", "-u", "clusterd", "--", "env", "NOTIFY_SOCKET=" + path] + sys.argv[1].split(),
                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
try:
    message = listener.recv(4096).decode()
    assert "READY=1" in message.split("\n"), message
    print("ok: READY=1 from", sys.argv[1])
    # An operator on the head's machine, as packaging/README.md says (the
    # session folder is clusterd's, and clusterctl reads only its own user's).
    status = subprocess.run(["runuser", "-u", "clusterd", "--", "env", "CLUSTER_TEMP_DIR=/var/cache/clusterd",
                             "clusterctl", "status"], capture_output=True, text=True, timeout=30)
    assert status.returncode == 0 and "Alive (1)" in status.stdout, status.stdout + status.stderr
    print("ok: clusterctl status as the clusterd user sees the head's node alive")
    # A job: its rank is started by the installed launcher, /usr/lib/clusterd/clusterd-launcher.
    job_dir = "/tmp/clusterd-deb-job"
    os.makedirs(job_dir, exist_ok=True)
    with open(job_dir + "/job.yaml", "w") as job:
        job.write("name: hello\nentrypoint: echo hello from the installed clusterd\nresources_per_worker:\n  CPU: 1\n")
    subprocess.run(["chown", "-R", "clusterd:", job_dir], check=True)
    submitted = subprocess.run(["runuser", "-u", "clusterd", "--", "env", "CLUSTER_TEMP_DIR=/var/cache/clusterd",
                                "clusterctl", "submit", job_dir + "/job.yaml", "--follow"],
                               capture_output=True, text=True, timeout=120, cwd=job_dir)
    assert submitted.returncode == 0 and "hello from the installed clusterd" in submitted.stdout, \
        submitted.stdout + submitted.stderr
    print("ok: a job ran to the end, its rank started by the installed launcher")
finally:
    subprocess.run(["kill", "-TERM", str(head.pid)])
    head.wait(timeout=60)
PY
echo "--- reinstall keeps the token, whatever the settings file holds"
# postinst must not run the file as shell: there this line (fine for
# systemd's EnvironmentFile=) would run 0.0.0.0 and fail.
sed -i "s/^CLUSTERD_FLAGS=.*/CLUSTERD_FLAGS=--node-ip-address 127.0.0.1 --dashboard-host 0.0.0.0/" /etc/default/clusterd
dpkg -i "$deb" >/dev/null || fail "a reinstall over unquoted CLUSTERD_FLAGS failed"
[ "$(cat /var/lib/clusterd/token)" = "$token" ] || fail "a reinstall changed the token"

echo "--- dpkg -r"
files=$(dpkg -L clusterd | while read -r f; do [ -f "$f" ] && echo "$f"; done)
dpkg -r clusterd
for f in $files; do
  [ "$f" = /etc/default/clusterd ] && continue
  [ ! -e "$f" ] || fail "dpkg -r left $f"
done
[ -f /etc/default/clusterd ] || fail "dpkg -r removed the conffile /etc/default/clusterd"
[ -f /var/lib/clusterd/token ] || fail "dpkg -r removed the state folder"
command -v clusterd >/dev/null && fail "clusterd is still on the PATH"

echo "--- dpkg --purge"
mkdir -p /var/cache/clusterd/session_x  # what a unit would have left
# What `systemctl enable clusterd-head` made (the unit file itself went with dpkg -r).
mkdir -p /etc/systemd/system/multi-user.target.wants
ln -sf /usr/lib/systemd/system/clusterd-head.service /etc/systemd/system/multi-user.target.wants/clusterd-head.service
dpkg --purge clusterd
[ ! -L /etc/systemd/system/multi-user.target.wants/clusterd-head.service ] || fail "purge left the unit's enablement link"
[ ! -e /etc/default/clusterd ] || fail "purge left /etc/default/clusterd"
[ ! -e /var/cache/clusterd ] || fail "purge left /var/cache/clusterd"
[ "$(cat /var/lib/clusterd/token)" = "$token" ] || fail "purge touched the state folder"
echo "ok: installed, ran $version, removed and purged"
