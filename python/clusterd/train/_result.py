"""Result and TrainingFailedError: what fit() gives back, read from the head's job record."""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Dict, List, Optional

from clusterd.train._checkpoint import Checkpoint


class TrainingFailedError(RuntimeError):
    """The job failed (or was stopped): the message names the failed rank, its node and its last lines."""

    def __init__(self, message: str, job_id: str = "", result: Optional["Result"] = None):
        super().__init__(message)
        self.job_id = job_id
        self.result = result


@dataclasses.dataclass
class Result:
    """A finished run, as Ray's ``ray.train.Result``.

    ``metrics``: rank 0's last report, with ``training_iteration`` counted as Ray does (from 1, going on
    from a restored checkpoint's iteration after a retry). ``checkpoint``: the newest stored checkpoint,
    fetched into ``path`` on this machine. ``metrics_dataframe``: one row per report (pandas when
    installed, else a list of dicts). ``error``: the failure, or None.
    """

    metrics: Optional[Dict[str, Any]]
    checkpoint: Optional[Checkpoint]
    error: Optional[BaseException]
    path: str
    job_id: str = ""
    config: Optional[Dict[str, Any]] = None
    rows: List[Dict[str, Any]] = dataclasses.field(default_factory=list, repr=False)
    best_checkpoints: List[Any] = dataclasses.field(default_factory=list, repr=False)

    @property
    def metrics_dataframe(self):
        try:
            import pandas
        except ImportError:
            return list(self.rows)
        return pandas.DataFrame(self.rows)

    @property
    def filesystem(self):
        return None


def _as_number(value) -> float:
    if isinstance(value, str):  # protobuf JSON writes NaN and the infinities as strings
        return float(value.replace("Infinity", "inf"))
    return float(value)


def last_metrics(rows: List[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """Result.metrics of these rows: the last one's, marked done, without the attempt it came from."""
    if not rows:
        return None
    last = dict(rows[-1])
    last.pop("attempt", None)
    last["done"] = True
    return last


def iteration_rows(records: List[dict], attempts: List[dict]) -> List[Dict[str, Any]]:
    """Rank 0's reports in the order they count, each with its training_iteration.

    An attempt that resumed from a checkpoint goes on from the iteration of the report that
    named it; the rows an earlier attempt reported after that checkpoint were redone, and are left out.
    """
    by_attempt: Dict[int, List[dict]] = {}
    for record in records:
        if int(record.get("rank", 0)) == 0:
            by_attempt.setdefault(int(record.get("attempt", 0)), []).append(record)
    restored = {int(a.get("attempt", 0)): a.get("restored_checkpoint", "") for a in attempts}
    rows: List[Dict[str, Any]] = []
    iteration_of_checkpoint: Dict[str, int] = {}
    for attempt in sorted(by_attempt):
        start = iteration_of_checkpoint.get(restored.get(attempt, ""), 0)
        rows = [row for row in rows if row["training_iteration"] <= start]
        for record in sorted(by_attempt[attempt], key=lambda r: int(r.get("index", 0))):
            iteration = start + int(record.get("index", 0)) + 1
            row: Dict[str, Any] = {name: _as_number(v) for name, v in sorted(record.get("values", {}).items())}
            row["training_iteration"] = iteration
            row["timestamp"] = int(record.get("unix_ms", 0)) // 1000
            checkpoint = os.path.basename(record.get("checkpoint", ""))
            row["checkpoint_dir_name"] = checkpoint or None
            row["attempt"] = attempt
            rows.append(row)
            if checkpoint:
                iteration_of_checkpoint[checkpoint] = iteration
    return rows
