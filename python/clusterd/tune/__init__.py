"""ray.tune's names for clusterd: a Tuner is one sweep of the head (its ASHA, journal and dashboard pages).

``report``, ``get_checkpoint``, ``get_context`` and ``Checkpoint`` are clusterd.train's own.
"""

from clusterd.train._checkpoint import Checkpoint
from clusterd.train._config import CheckpointConfig, FailureConfig, RunConfig, ScalingConfig
from clusterd.train._context import get_context
from clusterd.train._session import get_checkpoint, report
from clusterd.tune import schedulers, search
from clusterd.tune._config import TuneConfig
from clusterd.tune._result_grid import Result, ResultGrid
from clusterd.tune._search import choice, grid_search, loguniform, randint, uniform
from clusterd.tune._trainable import with_parameters, with_resources
from clusterd.tune._tuner import Tuner

__all__ = ["Tuner", "TuneConfig", "ResultGrid", "Result", "choice", "uniform", "loguniform", "randint",
           "grid_search", "with_resources", "with_parameters", "report", "get_checkpoint", "get_context", "Checkpoint", "RunConfig",
           "ScalingConfig", "FailureConfig", "CheckpointConfig", "schedulers", "search"]
