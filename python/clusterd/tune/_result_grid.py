"""ResultGrid: a sweep's trials as Results, the best of them, and a table of them (Ray's tune.ResultGrid)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Dict, Iterator, List, Optional

from clusterd.train._result import Result as TrainResult

# A trial's state as the head names it (TrialState in proto/cluster.proto), as Ray names it.
_STATUS = {"TRIAL_WAITING": "PENDING", "TRIAL_ACTIVE": "RUNNING", "TRIAL_DONE": "TERMINATED",
           "TRIAL_EARLY_STOPPED": "TERMINATED", "TRIAL_FAILED": "ERROR", "TRIAL_CANCELLED": "ERROR"}
SCOPES = ("last", "all", "avg", "last-5-avg", "last-10-avg")


@dataclasses.dataclass
class Result(TrainResult):
    """One trial: clusterd.train's Result (metrics, checkpoint, error, path, config), and where it ended.

    ``trial_state``: the head's state (TRIAL_DONE, TRIAL_EARLY_STOPPED, TRIAL_FAILED, TRIAL_CANCELLED).
    ``stop_reason``: why it ended ("early-stopped by ASHA at rung 0 (value v < cutoff c)", "reached
    max_t (4 training_iteration)", a failure). ``trial_index``: its number in the sweep, from 0.
    """

    trial_index: int = -1
    trial_name: str = ""
    trial_state: str = ""
    stop_reason: str = ""

    @property
    def status(self) -> str:
        """Ray's trial status: TERMINATED (ran to its end or was stopped by the scheduler), ERROR, ..."""
        return _STATUS.get(self.trial_state, "ERROR" if self.error is not None else "TERMINATED")

    @property
    def early_stopped(self) -> bool:
        """Whether ASHA stopped it."""
        return self.trial_state == "TRIAL_EARLY_STOPPED"


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _score(result: Result, metric: str, scope: str, filter_nan_and_inf: bool) -> Optional[float]:
    values = [row[metric] for row in result.rows if metric in row]
    if not values and result.metrics and metric in result.metrics:
        values = [result.metrics[metric]]
    if filter_nan_and_inf:
        values = [v for v in values if _finite(v)]
    if not values:
        return None
    if scope == "last":
        return values[-1]
    if scope == "avg":
        return sum(values) / len(values)
    if scope.startswith("last-"):
        tail = values[-int(scope.split("-")[1]):]
        return sum(tail) / len(tail)
    return None  # "all" is read per row by the caller


def _flatten(prefix: str, value: Any, out: Dict[str, Any]) -> None:
    if isinstance(value, dict) and value:
        for key, inner in value.items():
            _flatten(f"{prefix}/{key}" if prefix else str(key), inner, out)
    else:
        out[prefix] = value


class ResultGrid:
    """The trials of one Tuner.fit(): iterable, ``len``, ``[i]`` (by trial index), the best, a table.

    ``experiment_path``: the local folder holding the trials' folders, best_params.yaml and trials.csv.
    ``sweep_id``: the head's sweep (``clusterctl sweep SWEEP``, the dashboard's sweep page).
    """

    def __init__(self, results: List[Result], *, experiment_path: str, sweep_id: str, metric: Optional[str],
                 mode: Optional[str], best_index: int = -1, sweep: Optional[dict] = None):
        self._results = list(results)
        self.experiment_path = experiment_path
        self.sweep_id = sweep_id
        self._metric = metric
        self._mode = mode
        self._best_index = best_index
        self.sweep = sweep or {}

    def __len__(self) -> int:
        return len(self._results)

    def __getitem__(self, i: int) -> Result:
        return self._results[i]

    def __iter__(self) -> Iterator[Result]:
        return iter(self._results)

    def __repr__(self) -> str:
        return (f"ResultGrid(sweep_id={self.sweep_id!r}, trials={len(self)}, terminated={self.num_terminated}, "
                f"errors={self.num_errors})")

    @property
    def errors(self) -> List[BaseException]:
        """The errors of the trials that failed (or were cancelled before their end)."""
        return [r.error for r in self._results if r.error is not None]

    @property
    def num_errors(self) -> int:
        """How many trials failed (or were cancelled before their end)."""
        return len(self.errors)

    @property
    def num_terminated(self) -> int:
        """Trials that ran to their end or were stopped by the scheduler or a stop criterion."""
        return sum(1 for r in self._results if r.error is None and r.status == "TERMINATED")

    def get_best_result(self, metric: Optional[str] = None, mode: Optional[str] = None, scope: str = "last",
                        filter_nan_and_inf: bool = True) -> Result:
        """The trial with the best ``metric`` (default: the Tuner's), ``mode`` "max" or "min".

        ``scope``: "last" (each trial's last reported value, Ray's default), "all" (its best value),
        "avg", "last-5-avg", "last-10-avg". Trials that failed for good are never best, nor are NaN or
        infinite values with ``filter_nan_and_inf`` (as on the head). With the Tuner's metric and mode
        and scope "last" this is the head's best trial, whose parameters best_params.yaml holds.

        Raises ValueError when no metric or mode is known or the scope is unknown, RuntimeError when no
        trial reported the metric.
        """
        metric = metric or self._metric
        mode = mode or (self._mode if metric == self._metric else None)
        if not metric:
            raise ValueError("No metric is provided. Either pass in a `metric` arg to `get_best_result` "
                             "or specify a metric in the `TuneConfig` of your `Tuner`.")
        if mode not in ("max", "min"):
            raise ValueError("No mode is provided (or it is not 'max' or 'min'). Either pass in a `mode` arg to "
                             "`get_best_result` or specify a mode in the `TuneConfig` of your `Tuner`.")
        if scope not in SCOPES:
            raise ValueError(f"get_best_result: scope must be one of {', '.join(SCOPES)}, got {scope!r}")
        if (metric == self._metric and mode == self._mode and scope == "last" and filter_nan_and_inf
                and 0 <= self._best_index):
            for r in self._results:
                if r.trial_index == self._best_index:
                    return r
        sign = 1.0 if mode == "max" else -1.0
        best: Optional[Result] = None
        best_value = 0.0
        for r in self._results:
            if r.trial_state == "TRIAL_FAILED":
                continue
            if scope == "all":
                values = [row[metric] for row in r.rows if metric in row]
                if filter_nan_and_inf:
                    values = [v for v in values if _finite(v)]
                value = max(values, key=lambda v: sign * v) if values else None
            else:
                value = _score(r, metric, scope, filter_nan_and_inf)
            if value is None:
                continue
            if best is None or sign * value > sign * best_value:
                best, best_value = r, value
        if best is None:
            raise RuntimeError(f"No best trial found for the given metric: {metric}. "
                               f"This means that no trial has reported this metric")
        return best

    def get_dataframe(self, filter_metric: Optional[str] = None, filter_mode: Optional[str] = None) -> Any:
        """One row per trial: its last metrics (or, with ``filter_metric``/``filter_mode``, its best
        report of that metric), ``config/...`` columns, trial_id, status and logdir.

        A pandas DataFrame when pandas is installed, else a list of dicts.
        Raises ValueError when only one of filter_metric and filter_mode is given, or a mode not max/min.
        """
        if (filter_metric is None) != (filter_mode is None):
            raise ValueError("get_dataframe: give both filter_metric and filter_mode, or neither")
        if filter_mode not in (None, "max", "min"):
            raise ValueError(f"get_dataframe: filter_mode must be 'max' or 'min', got {filter_mode!r}")
        rows: List[Dict[str, Any]] = []
        for r in self._results:
            row: Dict[str, Any] = {}
            chosen = dict(r.metrics or {})
            if filter_metric is not None:
                sign = 1.0 if filter_mode == "max" else -1.0
                candidates = [x for x in r.rows if filter_metric in x and _finite(x[filter_metric])]
                if candidates:
                    chosen = dict(max(candidates, key=lambda x: sign * x[filter_metric]))
                    chosen.pop("attempt", None)
            chosen.pop("config", None)
            row.update(chosen)
            flat: Dict[str, Any] = {}
            _flatten("", r.config or {}, flat)
            row.update({f"config/{k}": v for k, v in flat.items()})
            row["trial_id"] = r.job_id
            row["status"] = r.status
            row["logdir"] = r.path
            rows.append(row)
        try:
            import pandas
        except ImportError:
            return rows
        return pandas.DataFrame(rows)
