#!/bin/bash
# Builds the Debian package: build/package/clusterd_<version>_amd64.deb
# (CPack, packaging/CMakeLists.txt). Configures again first, so that the
# version names the commit being packaged (cmake/version.cmake).
# --no-build packages what the build folder holds as it is (ctest does
# this: rebuilding there would relink binaries other tests are running).
# Environment: CLUSTERD_BUILD (the build folder, default build/),
# CLUSTERD_JOBS (parallel compile jobs, default 2).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

if [ "${1:-}" != --no-build ]; then
  # An existing build folder keeps its generator and options.
  if [ -f "$CLUSTERD_BUILD/CMakeCache.txt" ]; then
    cmake -S "$CLUSTERD_ROOT" -B "$CLUSTERD_BUILD" >/dev/null
  else
    cmake -S "$CLUSTERD_ROOT" -B "$CLUSTERD_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  fi
  cmake --build "$CLUSTERD_BUILD" -j "${CLUSTERD_JOBS:-2}"
fi
rm -f "$CLUSTERD_BUILD"/package/clusterd_*.deb
(cd "$CLUSTERD_BUILD" && cpack -G DEB --config CPackConfig.cmake >/dev/null)
deb=$(ls "$CLUSTERD_BUILD"/package/clusterd_*_amd64.deb)
echo "$deb"
