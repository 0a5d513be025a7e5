#!/bin/bash
# Installs the .deb with dpkg -i, runs what it installed, and removes and
# purges it, on this machine's own Debian root seen through a copy-on-write
# overlay in a private mount namespace: dpkg, adduser and the maintainer
# scripts run for real, and the machine's real / (where other tests and
# people run clusterd) is left untouched.
# Usage: deb_install_test.sh PACKAGE_DIR        (root; exit 77 = skipped)
# A compiler cache from the caller (CMAKE_CXX_COMPILER_LAUNCHER=ccache) would
# write into its cache folder from inside the overlaid root, read here as
# files the package left behind.
unset CMAKE_CXX_COMPILER_LAUNCHER CCACHE_DIR
set -euo pipefail
deb=$(ls "$1"/clusterd_*_amd64.deb)
here=$(cd "$(dirname "$0")" && pwd)
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root (a mount namespace and chroot)"; exit 77; fi

scratch=$(mktemp -d /tmp/clusterd-deb-root.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
# Everything below dies with the namespace: no unmounting to forget.
unshare -m --propagation private bash -euo pipefail -s "$scratch" "$deb" "$here" <<'OUTER'
scratch=$1 deb=$2 here=$3
mount -t tmpfs tmpfs "$scratch"
mkdir "$scratch"/{upper,work,root}
if ! mount -t overlay overlay -o lowerdir=/,upperdir="$scratch/upper",workdir="$scratch/work" "$scratch/root" 2>/dev/null; then
  echo "SKIP: this kernel cannot mount an overlay of /"; exit 77
fi
root=$scratch/root
mount --rbind /dev "$root/dev"
mount -t proc proc "$root/proc"
mount -t tmpfs tmpfs "$root/run"
mount -t tmpfs tmpfs "$root/tmp"
cp "$deb" "$here/deb_install_inside.sh" "$root/tmp/"
chroot "$root" bash /tmp/deb_install_inside.sh "/tmp/$(basename "$deb")"

# After the purge, what the package and its scripts made is gone but the
# state folder: the only other changes to the root are dpkg's and adduser's
# own records.
left=$(cd "$scratch/upper" && find . -mindepth 1 \( -type f -o -type l \) ! -type c | sed 's|^\.||' |
       grep -vE '^/(var/lib/dpkg|var/log|var/cache/debconf|var/cache/ldconfig|tmp|run)/' |
       grep -vE '^/etc/(passwd|group|shadow|gshadow|subuid|subgid|\.pwd\.lock)-?$' |
       grep -vE '^/var/lib/clusterd(/|$)' || true)
if [ -n "$left" ]; then echo "FAIL: purge left files behind:"; echo "$left"; exit 1; fi
echo "ok: purge left nothing but /var/lib/clusterd and dpkg's records"
OUTER
