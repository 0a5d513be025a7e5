#!/usr/bin/env bash
# pack_cluster.sh OUTDIR [BUILD_DIR]: clusterd and clusterctl as built here
# (Debian bookworm), stripped, with the shared libraries they load, in one
# tarball OUTDIR/cluster.tar.xz, for a machine that has none of gRPC,
# Protobuf, Boost, yaml-cpp, fmt or libarchive (the GPU machines we are lent:
# bench/train/gpu_cluster_check.sh unpacks and runs it there).
#   cluster/bin/clusterd, cluster/bin/clusterctl  (the launcher the agent
#       starts, `clusterd __launcher`, is clusterd itself: /proc/self/exe)
#   cluster/lib/*.so.*   every library `ldd` names, under its soname, except
#       glibc's own (libc, libm, libpthread, libdl, librt, libresolv, libutil,
#       ld-linux, ...) and libstdc++/libgcc_s: those of the target machine
#       are newer, and mixing glibc's pieces across versions breaks
#   cluster/MANIFEST     commit, build, sizes, the libraries and where from
# Run it with LD_LIBRARY_PATH=cluster/lib.
set -euo pipefail
out=${1:?usage: pack_cluster.sh OUTDIR [BUILD_DIR]}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${2:-$root/build-lead}
bins=("$build/daemon/clusterd" "$build/cli/clusterctl")
for b in "${bins[@]}"; do [[ -x $b ]] || { echo "pack_cluster.sh: $b is not built" >&2; exit 1; }; done

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/cluster/bin" "$stage/cluster/lib" "$out"
for b in "${bins[@]}"; do
  strip --strip-unneeded -o "$stage/cluster/bin/$(basename "$b")" "$b"
done

# Libraries the target machine brings itself, newer than bookworm's.
system_lib='^(linux-vdso|linux-gate|ld-linux[-.a-z0-9_]*|libc|libm|libmvec|libpthread|libdl|librt|libresolv|libutil|libanl|libnsl|libBrokenLocale|libnss_[a-z0-9]+|libthread_db|libstdc\+\+|libgcc_s)\.so'
ldd "${bins[@]}" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u > "$stage/ldd.txt"
{
  echo "clusterd bundle from $(git -C "$root" rev-parse HEAD)$(git -C "$root" diff --quiet HEAD -- daemon common cli proto || echo ' (with uncommitted changes in daemon/ common/ cli/ proto/)')"
  echo "built $(date -u -r "$build/daemon/clusterd" '+%F %T UTC') in $build; packed $(date -u '+%F %T UTC') on $(. /etc/os-release && echo "$PRETTY_NAME")"
  echo "version: $("${bins[0]}" --version 2>&1 | head -1)"
  echo "bundled libraries (soname <- file):"
} > "$stage/cluster/MANIFEST"
while read -r soname path; do
  if [[ $soname =~ $system_lib ]]; then
    echo "  left out (the target's own): $soname" >> "$stage/cluster/MANIFEST"
    continue
  fi
  cp -L "$path" "$stage/cluster/lib/$soname"
  echo "  $soname <- $(readlink -f "$path")" >> "$stage/cluster/MANIFEST"
done < "$stage/ldd.txt"

# Every library is resolved inside the bundle (apart from the left-out ones).
missing=$(LD_LIBRARY_PATH="$stage/cluster/lib" ldd "$stage"/cluster/bin/* "$stage"/cluster/lib/* 2>/dev/null |
  awk '/not found/ {print $1}' | sort -u)
[[ -z $missing ]] || { echo "pack_cluster.sh: unresolved: $missing" >&2; exit 1; }

tar -C "$stage" -cf - cluster | xz -9e -T0 > "$out/cluster.tar.xz.tmp"
mv "$out/cluster.tar.xz.tmp" "$out/cluster.tar.xz"
echo "$(ls "$stage/cluster/lib" | wc -l) libraries + 2 binaries, $(du -sh "$stage/cluster" | cut -f1) unpacked;" \
  "$out/cluster.tar.xz: $(du -h "$out/cluster.tar.xz" | cut -f1) ($(stat -c %s "$out/cluster.tar.xz") bytes)"
