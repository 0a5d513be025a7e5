#!/usr/bin/env bash
# Installs what is missing, builds everything, runs every test with ctest.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
ensure_packages $CLUSTERD_BUILD_PACKAGES $CLUSTERD_TEST_PACKAGES
build_all
cd "$CLUSTERD_BUILD"
ctest --output-on-failure -j "${CLUSTERD_TEST_JOBS:-2}" --timeout 600 "$@"
