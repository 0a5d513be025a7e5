# Shared by scripts/*.sh: install the Debian packages that are missing, and
# configure + build with CMake/Ninja. Source it; do not run it.

# Debian bookworm packages, one list per purpose; ensure_packages takes lists.
# To build clusterd, clusterctl and the examples (train/, libtorch) and run
# the Fashion-MNIST example on them: what scripts/quickstart.sh installs.
CLUSTERD_BUILD_PACKAGES="cmake ninja-build g++ pkg-config
  libboost-dev libboost-program-options-dev libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev
  protobuf-compiler libfmt-dev libyaml-cpp-dev nlohmann-json3-dev libexpat1-dev zlib1g-dev libarchive-dev
  libssl-dev libcurl4-openssl-dev libsystemd-dev libtorch-dev libgloo-dev dataset-fashion-mnist"
# On top of those, for the tests and benchmarks (scripts/test.sh): Catch2, the
# Python package's tests and PyTorch, the simulated machines' tools, the .deb's
# tools, and the real services some tests start (Ceph's radosgw for S3,
# Chromium for the dashboard, Prometheus, etcd for HA heads' election), and
# tmux, the terminal that `clusterctl top` is drawn in and read back from.
# etcd-server also enables a system etcd service: the tests never use it,
# they start members of their own on free ports.
CLUSTERD_TEST_PACKAGES="catch2 python3-torch python3-cloudpickle python3-pytest python3-torchvision
  python3-pandas python3-yaml iproute2 util-linux netcat-openbsd openssl curl
  dpkg-dev systemd bash-completion chromium-headless-shell prometheus tmux
  ceph-mon ceph-osd radosgw ceph-common python3-boto3 s3cmd etcd-server etcd-client"

CLUSTERD_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CLUSTERD_BUILD="${CLUSTERD_BUILD:-$CLUSTERD_ROOT/build}"

# ensure_packages LIST...: installs the packages of the lists that are missing.
ensure_packages() {
  local missing=()
  for p in $*; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "Installing missing Debian packages: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
}

configure() {
  cmake -S "$CLUSTERD_ROOT" -B "$CLUSTERD_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
}

# build TARGET...: builds those targets (none: all of them).
build() {
  # Two cores and ~1 GiB per heavy translation unit: two jobs at most.
  ninja -C "$CLUSTERD_BUILD" -j "${CLUSTERD_JOBS:-2}" "$@"
}

# Everything, tests and benchmarks included (also in a folder the quickstart
# configured without them).
build_all() {
  configure -DCLUSTERD_BUILD_TESTS=ON -DCLUSTERD_BUILD_BENCH=ON "$@"
  build
}
