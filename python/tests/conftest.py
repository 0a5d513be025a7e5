"""Shared by the package's tests: the package on sys.path, and a real local cluster to run jobs on.

The cluster is real daemons (the build's clusterd), on free loopback ports, in a temporary folder of
their own ($CLUSTER_TEMP_DIR and --state-dir), always stopped at the end. $CLUSTERD_BUILD names the
build folder (default: <repo>/build).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "python"))
BUILD = os.environ.get("CLUSTERD_BUILD") or os.path.join(REPO, "build")
CLUSTERD = os.path.join(BUILD, "daemon", "clusterd")
CLUSTERCTL = os.path.join(BUILD, "cli", "clusterctl")
PYTHON = "/usr/bin/python3"  # Debian's, with python3-torch: the one the ranks must run


def free_port_pair() -> int:
    """A port P with P+1 free too (the head's agent port)."""
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port >= 65000:
            continue
        try:
            with socket.socket() as s:
                s.bind(("127.0.0.1", port + 1))
            return port
        except OSError:
            continue
    raise RuntimeError("no free pair of ports")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalCluster:
    """A head (with its own node agent) on loopback; ``env`` is what a client of it needs."""

    def __init__(self, num_cpus: int = 4):
        self.dir = tempfile.mkdtemp(prefix="clusterd-pytest-")
        os.chmod(self.dir, 0o700)
        self.port = free_port_pair()
        self.dashboard_port = free_port()
        self.env = dict(os.environ, CLUSTER_TEMP_DIR=os.path.join(self.dir, "tmp"))
        self.env.pop("CLUSTER_ADDRESS", None)
        self.env.pop("CLUSTER_TOKEN", None)
        self.env["CLUSTERD_CLUSTERCTL"] = CLUSTERCTL
        self.env["CLUSTERD_WORKER_PYTHON"] = PYTHON
        started = subprocess.run(
            [CLUSTERD, "start", "--head", "--node-ip-address", "127.0.0.1", "--port", str(self.port),
             "--dashboard-port", str(self.dashboard_port), "--num-cpus", str(num_cpus),
             "--state-dir", os.path.join(self.dir, "state")],
            env=self.env, capture_output=True, text=True, timeout=60)
        if started.returncode != 0:
            raise RuntimeError(f"clusterd start failed: {started.stdout}{started.stderr}")
        self.address = f"127.0.0.1:{self.port}"
        with open(os.path.join(self.env["CLUSTER_TEMP_DIR"], "session_latest", "token")) as f:
            self.token = f.read().strip()
        self.env["CLUSTER_ADDRESS"] = self.address

    def clusterctl(self, *args, check=True, timeout=120) -> subprocess.CompletedProcess:
        done = subprocess.run([CLUSTERCTL, *args], env=self.env, capture_output=True, text=True, timeout=timeout)
        if check and done.returncode != 0:
            raise AssertionError(f"clusterctl {' '.join(args)} failed: {done.stdout}{done.stderr}")
        return done

    def stop(self) -> None:
        subprocess.run([CLUSTERD, "stop", "--force"], env=self.env, capture_output=True, timeout=120)
        subprocess.run(["rm", "-rf", self.dir], check=False)


@pytest.fixture(scope="module")
def local_cluster():
    if not os.access(CLUSTERD, os.X_OK):
        pytest.skip(f"no clusterd build at {BUILD} (set CLUSTERD_BUILD)")
    cluster = LocalCluster()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def cluster_env(local_cluster, monkeypatch):
    """The local cluster's variables in this process's environment, for the package's client side."""
    for key in ("CLUSTER_TEMP_DIR", "CLUSTER_ADDRESS", "CLUSTERD_CLUSTERCTL", "CLUSTERD_WORKER_PYTHON"):
        monkeypatch.setenv(key, local_cluster.env[key])
    monkeypatch.delenv("CLUSTER_TOKEN", raising=False)
    import clusterd
    clusterd.shutdown()
    yield local_cluster
    clusterd.shutdown()
