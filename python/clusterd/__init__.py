"""clusterd for Python programs, under Ray's names.

``clusterd.init`` connects to a head as ``ray.init`` does; ``clusterd.train``
(report, checkpoints, TorchTrainer), ``clusterd.tune`` (Tuner, ASHA) and
``clusterd.job_submission`` (JobSubmissionClient) are imported on first use,
so that a client that only submits jobs needs no torch.
"""

import importlib as _importlib

from clusterd._connection import ConnectionInfo, init, is_initialized, shutdown
from clusterd._hang_stacks import register_in_rank as _register_hang_stacks

# In a rank: SIGQUIT prints every thread's stack (hung gangs, docs/RELIABILITY.md).
_register_hang_stacks()

__version__ = "0.1.0"

__all__ = ["init", "is_initialized", "shutdown", "ConnectionInfo", "train", "tune", "job_submission"]

_SUBPACKAGES = ("train", "tune", "job_submission")


def __getattr__(name: str):
    if name in _SUBPACKAGES:
        return _importlib.import_module(f"clusterd.{name}")
    raise AttributeError(f"module 'clusterd' has no attribute {name!r}")
