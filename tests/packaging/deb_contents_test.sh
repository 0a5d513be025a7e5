#!/bin/bash
# The .deb's control fields and file list, read with dpkg-deb.
# Usage: deb_contents_test.sh PACKAGE_DIR
set -euo pipefail
deb=$(ls "$1"/clusterd_*_amd64.deb)
fail() { echo "FAIL: $*" >&2; exit 1; }

name=$(basename "$deb")
version=$(dpkg-deb -f "$deb" Version)
[ "$name" = "clusterd_${version}_amd64.deb" ] || fail "file name $name does not carry version $version"
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+ ]] || fail "version '$version' does not start with CMake's project version"
[ "$(dpkg-deb -f "$deb" Package)" = clusterd ] || fail "Package is not clusterd"
[ "$(dpkg-deb -f "$deb" Architecture)" = amd64 ] || fail "Architecture is not amd64"
depends=$(dpkg-deb -f "$deb" Depends)
# dpkg-shlibdeps found the libraries the binaries link.
for lib in libgrpc++ libprotobuf libsystemd0 libc6 libstdc++6 libyaml-cpp libarchive; do
  grep -q "$lib" <<<"$depends" || fail "Depends lacks $lib: $depends"
done
grep -q adduser <<<"$depends" || fail "Depends lacks adduser (postinst makes the user)"
# Opened at the first S3 request, not linked: dpkg-shlibdeps cannot see it.
grep -q "libcurl4 (>= 7.75" <<<"$depends" || fail "Depends lacks libcurl4 (S3 storage dlopens it): $depends"

files=$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|')
for path in /usr/bin/clusterd /usr/bin/clusterctl /usr/lib/clusterd/clusterd-launcher \
            /usr/lib/systemd/system/clusterd-head.service /usr/lib/systemd/system/clusterd-worker.service \
            /etc/default/clusterd /usr/include/ctrain/ctrain.h /usr/lib/libctrain.a /usr/lib/libctrain_wire.a \
            /usr/lib/cmake/ctrain/ctrainConfig.cmake /usr/lib/cmake/ctrain/ctrainTargets.cmake \
            /usr/lib/cmake/ctrain/ctrainConfigVersion.cmake \
            /usr/share/bash-completion/completions/clusterctl /usr/share/bash-completion/completions/clusterd \
            /usr/share/doc/clusterd/examples/linear.yaml /usr/share/doc/clusterd/prometheus.yml \
            /usr/lib/python3/dist-packages/clusterd/__init__.py \
            /usr/lib/python3/dist-packages/clusterd/train/torch/__init__.py; do
  grep -qx "$path" <<<"$files" || fail "the package lacks $path"
done
grep -q '__pycache__' <<<"$files" && fail "the package holds __pycache__ folders"
# Nothing from the build machine's folders.
if grep -E '^/(work|tmp|root|home)/' <<<"$files"; then fail "the package holds build paths"; fi
# Binaries are stripped (CPACK_STRIP_FILES) and executable.
dpkg-deb -c "$deb" | grep -E '\./usr/bin/clusterd$' | grep -q '^-rwxr-xr-x' || fail "/usr/bin/clusterd is not 0755"
dpkg-deb -c "$deb" | grep -E '\./usr/lib/clusterd/clusterd-launcher$' | grep -q '^-rwxr-xr-x' ||
  fail "/usr/lib/clusterd/clusterd-launcher is not 0755"

control=$(mktemp -d)
trap 'rm -rf "$control"' EXIT
dpkg-deb -e "$deb" "$control"
for script in postinst prerm postrm; do
  [ -x "$control/$script" ] || fail "no executable $script"
done
grep -qx /etc/default/clusterd "$control/conffiles" || fail "/etc/default/clusterd is not a conffile"
echo "ok: $name: $(wc -l <<<"$files") paths, Depends: $depends"
