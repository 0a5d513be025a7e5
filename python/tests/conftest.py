"""Shared by the package's tests: the package on sys.path, and a real local cluster to run jobs on
(local_cluster.py: real daemons of the build on free loopback ports, always stopped at the end)."""

from __future__ import annotations

import os
import sys

import pytest

from local_cluster import REPO, LocalCluster, binaries

sys.path.insert(0, os.path.join(REPO, "python"))


@pytest.fixture(scope="module")
def local_cluster():
    clusterd, _ = binaries()
    if not os.access(clusterd, os.X_OK):
        pytest.skip(f"no clusterd build at {clusterd} (set CLUSTERD_BUILD)")
    with LocalCluster() as cluster:
        yield cluster


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
