"""A local clusterd for the Python tests and benchmarks: a head with its own node agent on free loopback
ports, in a folder of its own ($CLUSTER_TEMP_DIR and --state-dir), always stopped by whoever started it
(``with LocalCluster() as cluster:``). $CLUSTERD_BUILD names the build folder (default: <repo>/build).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
from typing import Optional, Sequence

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON = "/usr/bin/python3"  # Debian's, with python3-torch: what the ranks run


def build_dir() -> str:
    build = os.environ.get("CLUSTERD_BUILD") or os.path.join(REPO, "build")
    return build if os.path.isabs(build) else os.path.join(REPO, build)


def binaries() -> tuple:
    """(clusterd, clusterctl) of the build."""
    build = build_dir()
    return os.path.join(build, "daemon", "clusterd"), os.path.join(build, "cli", "clusterctl")


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
    """``clusterd start --head --num-cpus N`` in a private folder under ``scratch`` (a new temporary one by default).

    ``env`` is what a client or a script needs (the cluster's variables, the checkout's package on
    PYTHONPATH, clusterctl and the ranks' interpreter named); ``address``, ``token`` and ``dashboard_port``
    are set once it runs.
    """

    def __init__(self, scratch: Optional[str] = None, num_cpus: int = 4, flags: Sequence[str] = ()):
        self.clusterd, self.clusterctl_bin = binaries()
        for path in (self.clusterd, self.clusterctl_bin):
            if not os.access(path, os.X_OK):
                raise RuntimeError(f"no {path}: build clusterd and clusterctl, or set CLUSTERD_BUILD")
        self.dir = tempfile.mkdtemp(prefix="clusterd-local-", dir=scratch)
        os.chmod(self.dir, 0o700)
        self.num_cpus = num_cpus
        self.flags = list(flags)  # more for `clusterd start`
        self.env = dict(os.environ, CLUSTER_TEMP_DIR=os.path.join(self.dir, "tmp"),
                        CLUSTERD_CLUSTERCTL=self.clusterctl_bin, CLUSTERD_WORKER_PYTHON=PYTHON,
                        PYTHONPATH=os.path.join(REPO, "python"), PYTHONDONTWRITEBYTECODE="1")
        for key in ("CLUSTER_ADDRESS", "CLUSTER_TOKEN", "CLUSTER_TLS_CA"):
            self.env.pop(key, None)
        self.address = self.token = ""
        self.dashboard_port = 0
        self.started = False

    def start(self) -> "LocalCluster":
        port, self.dashboard_port = free_port_pair(), free_port()
        try:
            done = subprocess.run(
                [self.clusterd, "start", "--head", "--node-ip-address", "127.0.0.1", "--port", str(port),
                 "--dashboard-port", str(self.dashboard_port), "--num-cpus", str(self.num_cpus),
                 "--state-dir", os.path.join(self.dir, "state"), *self.flags],
                env=self.env, capture_output=True, text=True, timeout=60)
            self.started = True
            if done.returncode != 0:
                raise RuntimeError(f"clusterd start failed: {done.stdout}{done.stderr}")
            self.address = f"127.0.0.1:{port}"
            with open(os.path.join(self.env["CLUSTER_TEMP_DIR"], "session_latest", "token")) as f:
                self.token = f.read().strip()
            self.env.update(CLUSTER_ADDRESS=self.address, CLUSTER_TOKEN=self.token)
        except BaseException:
            self.stop()
            raise
        return self

    def __enter__(self) -> "LocalCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def ctl(self, *args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
        """clusterctl ARGS against this cluster; with ``check``, raises RuntimeError with its words when it fails."""
        done = subprocess.run([self.clusterctl_bin, *args], env=self.env, capture_output=True, text=True,
                              timeout=timeout)
        if check and done.returncode != 0:
            raise RuntimeError(f"clusterctl {' '.join(args)} failed: {done.stdout}{done.stderr}")
        return done

    def ctl_json(self, *args: str):
        return json.loads(self.ctl(*args, "--json").stdout)

    def agent_pid(self) -> int:
        """The head's clusterd (it runs this node's agent too)."""
        for name in ("clusterd.pid", "head.pid", "pid"):
            path = os.path.join(self.env["CLUSTER_TEMP_DIR"], "session_latest", name)
            if os.path.exists(path):
                with open(path) as f:
                    return int(f.read().split()[0])
        return 0

    def stop(self) -> None:
        if self.started:
            subprocess.run([self.clusterd, "stop", "--force"], env=self.env, capture_output=True, timeout=120)
            self.started = False
        shutil.rmtree(self.dir, ignore_errors=True)
