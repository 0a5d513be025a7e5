"""TuneConfig, with Ray Tune's names and defaults."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional

from clusterd.tune._schedulers import check_mode


@dataclasses.dataclass
class TuneConfig:
    """What the sweep optimises and how many trials it runs.

    ``metric``/``mode`` ("max" or "min"): the objective, here or on the scheduler. ``num_samples``:
    random draws, each run for every combination of the grids. ``max_concurrent_trials``: trials
    running at once (None or 0: as many as the cluster holds). ``scheduler``: ASHAScheduler or
    FIFOScheduler (None: every trial runs to its end). ``search_alg``: None or BasicVariantGenerator
    (its random_state seeds the draws). ``seed``: the same as BasicVariantGenerator(random_state=...);
    without either, each fit() draws afresh, as Ray's does. Ray's trial name creators and reuse_actors
    are accepted and change nothing here.

    Raises ValueError for a mode other than max/min, num_samples below 1 (Ray's -1, "until the time
    budget ends", is not offered), a negative max_concurrent_trials, or a time_budget_s.
    """

    metric: Optional[str] = None
    mode: Optional[str] = None
    search_alg: Optional[Any] = None
    scheduler: Optional[Any] = None
    num_samples: int = 1
    max_concurrent_trials: Optional[int] = None
    time_budget_s: Optional[Any] = None
    reuse_actors: Optional[bool] = None
    trial_name_creator: Optional[Callable] = None
    trial_dirname_creator: Optional[Callable] = None
    chdir_to_trial_dir: Any = None
    seed: Optional[int] = None

    def __post_init__(self) -> None:
        check_mode("TuneConfig", self.mode)
        if self.metric is not None and (not isinstance(self.metric, str) or not self.metric):
            raise ValueError(f"TuneConfig: metric must be a metric name, got {self.metric!r}")
        if isinstance(self.num_samples, bool) or not isinstance(self.num_samples, int) or self.num_samples < 1:
            raise ValueError(f"TuneConfig: num_samples must be an int >= 1, got {self.num_samples!r}")
        limit = self.max_concurrent_trials
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise ValueError(f"TuneConfig: max_concurrent_trials must be an int >= 0 or None, got {limit!r}")
        if self.time_budget_s is not None:
            raise ValueError("TuneConfig: time_budget_s is not offered; bound the trials with num_samples, "
                             "ASHAScheduler(max_t=...) or RunConfig(stop=...)")
        if self.seed is not None and (isinstance(self.seed, bool) or not isinstance(self.seed, int)):
            raise ValueError(f"TuneConfig: seed must be an int, got {self.seed!r}")
