# Shared by scripts/*.sh: install the Debian packages that are missing, and
# configure + build with CMake/Ninja. Source it; do not run it.

# Debian bookworm packages the build, the tests and the examples need.
CLUSTERD_PACKAGES="libboost-dev libboost-program-options-dev libgrpc++-dev protobuf-compiler-grpc
  libprotobuf-dev protobuf-compiler libtorch-dev libgloo-dev libfmt-dev catch2 libyaml-cpp-dev
  zlib1g-dev dataset-fashion-mnist cmake ninja-build g++ python3-torch
  libarchive-dev libssl-dev iproute2 util-linux netcat-openbsd openssl chromium-headless-shell
  libsystemd-dev pkg-config dpkg-dev systemd prometheus bash-completion
  libcurl4-openssl-dev curl ceph-mon ceph-osd radosgw ceph-common python3-boto3 s3cmd
  python3-cloudpickle python3-pytest python3-torchvision python3-pandas python3-yaml"

CLUSTERD_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CLUSTERD_BUILD="${CLUSTERD_BUILD:-$CLUSTERD_ROOT/build}"

ensure_packages() {
  local missing=()
  for p in $CLUSTERD_PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "Installing missing Debian packages: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
}

build_all() {
  cmake -S "$CLUSTERD_ROOT" -B "$CLUSTERD_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
  # Two cores and ~1 GiB per heavy translation unit: two jobs at most.
  ninja -C "$CLUSTERD_BUILD" -j "${CLUSTERD_JOBS:-2}"
}
