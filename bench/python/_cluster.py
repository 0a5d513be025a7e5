"""The benchmarks' local clusterd: the Python tests' own (python/tests/local_cluster.py)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "python", "tests"))
from local_cluster import PYTHON, REPO, LocalCluster, binaries, build_dir, free_port  # noqa: E402,F401
