"""Ray Tune's trial schedulers that the head runs: ASHA (its only early stopper) and FIFO (none).

The head's ASHA (daemon/head/asha.h) is Ray's AsyncHyperBandScheduler with
one bracket; these classes only carry its settings into the job file's
``tune.scheduler.asha`` map.
"""

from __future__ import annotations

import numbers
from typing import Any, Dict, Optional

# Ray fills these in every result; clusterd's reports carry only what the program reports,
# so an ASHA counting in them would never see a time.
_RAY_AUTOMATIC = ("time_total_s", "time_this_iter_s", "timestamp", "timesteps_total", "episodes_total",
                  "iterations_since_restore", "time_since_restore")


def check_mode(where: str, mode: Optional[str]) -> None:
    """Raises ValueError unless ``mode`` is None, "max" or "min"."""
    if mode is not None and mode not in ("max", "min"):
        raise ValueError(f"{where}: mode must be 'max' or 'min', got {mode!r}")


def _positive(name: str, value: Any, above: float = 0) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not float(value) > above:
        raise ValueError(f"ASHAScheduler: {name} must be a number above {above:g}, got {value!r}")
    return float(value)


class TrialScheduler:
    """The base of the schedulers offered here."""

    metric: Optional[str] = None
    mode: Optional[str] = None

    def asha(self) -> Optional[Dict[str, Any]]:
        """The job file's ``scheduler`` map, or None for no early stopping."""
        return None


class FIFOScheduler(TrialScheduler):
    """Every trial runs to its end, in order (Ray's default)."""

    def __init__(self, **_ray_options):
        pass


class ASHAScheduler(TrialScheduler):
    """Asynchronous successive halving, as Ray's ASHAScheduler (AsyncHyperBandScheduler), on the head.

    A trial reaching a rung (grace_period x reduction_factor^k, below max_t, in ``time_attr`` units) is
    stopped if its metric is below the rung's (1 - 1/reduction_factor) quantile so far; one reaching
    max_t ends. ``time_attr`` is training_iteration (reports counted from 1) or a metric the trials
    report. ``metric``/``mode`` may be given here or on TuneConfig.

    Raises ValueError for a setting the head cannot run (brackets other than 1, a time_attr Ray
    computes by itself, max_t below grace_period, reduction_factor <= 1).
    """

    def __init__(self, time_attr: str = "training_iteration", metric: Optional[str] = None,
                 mode: Optional[str] = None, max_t: float = 100, grace_period: float = 1,
                 reduction_factor: float = 4, brackets: int = 1, stop_last_trials: bool = True):
        check_mode("ASHAScheduler", mode)
        if not isinstance(time_attr, str) or not time_attr:
            raise ValueError(f"ASHAScheduler: time_attr must be a metric name, got {time_attr!r}")
        if time_attr in _RAY_AUTOMATIC:
            raise ValueError(f"ASHAScheduler: time_attr {time_attr!r} is not offered: clusterd's ASHA counts in "
                             f"training_iteration or in a metric the trials report themselves")
        if metric is not None and (not isinstance(metric, str) or not metric):
            raise ValueError(f"ASHAScheduler: metric must be a metric name, got {metric!r}")
        self.max_t = _positive("max_t", max_t)
        self.grace_period = _positive("grace_period", grace_period)
        self.reduction_factor = _positive("reduction_factor", reduction_factor, above=1)
        if self.max_t < self.grace_period:
            raise ValueError(f"ASHAScheduler: max_t ({max_t!r}) must be at least grace_period ({grace_period!r})")
        if brackets != 1:
            raise ValueError(f"ASHAScheduler: brackets={brackets!r} is not offered; clusterd's ASHA has one bracket")
        self.time_attr = time_attr
        self.metric = metric
        self.mode = mode
        self.brackets = brackets
        self.stop_last_trials = stop_last_trials

    def asha(self) -> Dict[str, Any]:
        return {"asha": {"time_attr": self.time_attr, "max_t": self.max_t, "grace_period": self.grace_period,
                         "reduction_factor": self.reduction_factor}}

    def __repr__(self) -> str:
        return (f"ASHAScheduler(time_attr={self.time_attr!r}, metric={self.metric!r}, mode={self.mode!r}, "
                f"max_t={self.max_t:g}, grace_period={self.grace_period:g}, "
                f"reduction_factor={self.reduction_factor:g})")


AsyncHyperBandScheduler = ASHAScheduler
