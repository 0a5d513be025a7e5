"""report() and get_checkpoint() inside a rank.

On a cluster ($CLUSTER_AGENT_SOCKET set by the node), rank 0's reports go to
its node's agent, which keeps the metrics on the head and stores each
checkpoint where any machine can restore it. A reported checkpoint is first
copied into the job's checkpoint folder ($CLUSTER_CHECKPOINT_DIR) as
checkpoint_NNNNNN, because the agent stores only what lies there and because
Ray's scripts delete the folder they reported as soon as report() returns.
It is a copy, not a hard link: a script that saves into the same file again
(torch.save truncates it in place) would otherwise rewrite the stored one.

Off a cluster, report() prints its line and keeps checkpoints in a local
folder ($CLUSTER_CHECKPOINT_DIR, else a new temporary one), so the same
script runs on a laptop.
"""

from __future__ import annotations

import numbers
import os
import shutil
import sys
import tempfile
import threading
import time
from typing import Any, Dict, Mapping, Optional

from clusterd import _agent_wire
from clusterd.train._checkpoint import (Checkpoint, checkpoint_index, checkpoint_name, newest_in)


class _Session:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._folder: Optional[str] = None
        self._next_index: Optional[int] = None
        self._warned_unreachable = False
        self._warned_dropped: set = set()
        # get_checkpoint()'s answer, as Ray's: the checkpoint this process started from, until it
        # reports one of its own (rank 0 writes into a folder its node's other ranks share).
        self._started_from: Optional[str] = None
        self._start_taken = False
        self._reported: Optional[str] = None

    def start(self) -> None:
        """Takes note of the checkpoint this rank starts from (the one its node restored, if any)."""
        with self._lock:
            if self._start_taken:
                return
            self._start_taken = True
        if self.on_cluster() or os.environ.get("CLUSTER_CHECKPOINT_DIR"):
            self._started_from = newest_in(self.checkpoint_folder())

    @staticmethod
    def on_cluster() -> bool:
        return bool(os.environ.get("CLUSTER_AGENT_SOCKET") and os.environ.get("CLUSTER_JOB_ID"))

    def checkpoint_folder(self) -> str:
        if self._folder is None:
            given = os.environ.get("CLUSTER_CHECKPOINT_DIR")
            if given:
                self._folder = os.path.abspath(given)
            else:
                self._folder = tempfile.mkdtemp(prefix="clusterd-checkpoints-")
                print(f"[clusterd] not on a cluster: checkpoints are kept in {self._folder}", file=sys.stderr)
        return self._folder

    def _keep(self) -> int:
        try:
            return max(0, int(os.environ.get("CLUSTER_CHECKPOINT_KEEP", "2")))
        except ValueError:
            return 2

    def _take_index(self, folder: str) -> int:
        # Numbers go on from the newest checkpoint in the folder, the one a
        # retry restored included, so that a later checkpoint always has a
        # larger number (the head keeps the newest by it).
        if self._next_index is None:
            newest = newest_in(folder)
            self._next_index = checkpoint_index(os.path.basename(newest)) + 1 if newest else 0
        index = self._next_index
        self._next_index += 1
        return index

    def persist(self, checkpoint: Checkpoint) -> str:
        """Copies ``checkpoint`` into the checkpoint folder as the next checkpoint_N; returns its path."""
        source = checkpoint.path
        if not os.path.isdir(source):
            raise FileNotFoundError(f"clusterd.train.report: checkpoint folder {source!r} does not exist")
        folder = self.checkpoint_folder()
        os.makedirs(folder, exist_ok=True)
        with self._lock:
            if os.path.dirname(source) == folder and checkpoint_index(os.path.basename(source)) >= 0:
                # Already one of the folder's own (a script that saves there, as ctrain does).
                index = checkpoint_index(os.path.basename(source))
                self._next_index = max(self._next_index or 0, index + 1)
                return source
            index = self._take_index(folder)
        final = os.path.join(folder, checkpoint_name(index))
        temporary = os.path.join(folder, "." + "tmp-" + checkpoint_name(index))
        shutil.rmtree(temporary, ignore_errors=True)
        # Never a half-written checkpoint under its final name: a temporary folder, then rename.
        shutil.copytree(source, temporary, symlinks=True)
        _resolve_outside_links(source, temporary)
        os.rename(temporary, final)
        return final

    def prune(self, keep_path: str) -> None:
        """Leaves the newest CLUSTER_CHECKPOINT_KEEP checkpoints (0: all) in the folder."""
        keep = self._keep()
        if keep == 0 or self._folder is None:
            return
        try:
            names = sorted((n for n in os.listdir(self._folder) if checkpoint_index(n) >= 0), key=checkpoint_index)
        except OSError:
            return
        for name in names[:-keep]:
            path = os.path.join(self._folder, name)
            if path != keep_path:
                shutil.rmtree(path, ignore_errors=True)

    def report(self, metrics: Mapping[str, Any], checkpoint: Optional[Checkpoint]) -> None:
        dropped: list = []
        values = flatten_metrics(metrics, dropped=dropped)
        new_drops = [name for name in dropped if name not in self._warned_dropped]
        if new_drops:
            # Ray keeps any value; the head keeps numbers (metrics, charts, ASHA). Said once per name.
            self._warned_dropped.update(new_drops)
            print(f"[clusterd] warning: metrics {', '.join(map(repr, new_drops))} are not numbers and are not "
                  f"kept (the cluster keeps numbers)", file=sys.stderr, flush=True)
        rank = int(os.environ.get("RANK", "0") or 0)
        if rank != 0:
            # As Ray Train: every rank calls report(); rank 0's metrics and checkpoint are the job's.
            return
        stored = ""
        if checkpoint is not None:
            if not isinstance(checkpoint, Checkpoint):
                raise TypeError(f"clusterd.train.report: checkpoint must be a Checkpoint, not {type(checkpoint).__name__}")
            self.start()  # what this rank started from, before its own checkpoint joins the folder
            stored = self.persist(checkpoint)
            self._reported = stored
        line = "[report]" + "".join(f" {name}={value:g}" for name, value in values.items())
        if stored:
            line += f" checkpoint={os.path.basename(stored)}"
        print(line, flush=True)
        if self.on_cluster():
            self._send(values, stored)
        if stored:
            self.prune(stored)

    def _send(self, values: Dict[str, float], checkpoint: str) -> None:
        payload = _agent_wire.encode_report(os.environ.get("CLUSTER_JOB_ID", ""),
                                            int(os.environ.get("CLUSTER_ATTEMPT", "0") or 0), 0, values, checkpoint,
                                            int(time.time() * 1000))
        try:
            _agent_wire.send_report(os.environ["CLUSTER_AGENT_SOCKET"], payload)
        except _agent_wire.AgentRefused as e:
            raise ValueError(f"clusterd.train.report: the node refused the report: {e}") from None
        except _agent_wire.AgentUnreachable as e:
            # Training goes on: a report lost to a restarting agent is not worth the run.
            if not self._warned_unreachable:
                print(f"[clusterd] warning: report not delivered: {e}", file=sys.stderr, flush=True)
                self._warned_unreachable = True

    def get_checkpoint(self) -> Optional[Checkpoint]:
        if self._reported and os.path.isdir(self._reported):
            return Checkpoint(self._reported)
        self.start()
        return Checkpoint(self._started_from) if self._started_from else None


def _resolve_outside_links(source: str, copy: str) -> None:
    """In ``copy`` (of ``source``), a symlink that leaves ``source`` or is absolute becomes a copy of what it
    points to, as Ray copies a checkpoint's files: the node stores only what lies inside the folder. A
    link to nothing is dropped, with a warning."""
    root = os.path.realpath(source)
    for here, dirs, files in os.walk(copy):
        for name in dirs + files:
            path = os.path.join(here, name)
            if not os.path.islink(path):
                continue
            original = os.path.join(source, os.path.relpath(path, copy))
            target = os.path.realpath(original)
            if not os.path.isabs(os.readlink(path)) and (target == root or target.startswith(root + os.sep)):
                continue
            os.unlink(path)
            if os.path.isdir(target):
                shutil.copytree(target, path, symlinks=False)
            elif os.path.exists(target):
                shutil.copy2(target, path)
            else:
                print(f"[clusterd] warning: checkpoint link {os.path.relpath(original, source)} points to "
                      f"nothing; left out", file=sys.stderr, flush=True)


def _as_float(name: str, value: Any) -> float:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, numbers.Real):
        return float(value)
    item = getattr(value, "item", None)  # a one-element torch tensor or numpy value
    if callable(item):
        try:
            got = item()
        except (ValueError, RuntimeError):
            got = None
        if isinstance(got, (numbers.Real, bool)):
            return float(got)
    raise TypeError(f"clusterd.train.report: metric {name!r} is a {type(value).__name__}, not a number "
                    f"(metrics are numbers; report a string as part of a checkpoint instead)")


def flatten_metrics(metrics: Mapping[str, Any], prefix: str = "", dropped: Optional[list] = None) -> Dict[str, float]:
    """Numbers by name; a nested dict's names join with '/' (DVCLive's folders, Ray Tune's flattening).

    A value that is no number (a string, None, a list) is left out and named in ``dropped`` when given,
    else it raises TypeError.
    """
    if not isinstance(metrics, Mapping):
        raise TypeError(f"clusterd.train.report: metrics must be a dict, not {type(metrics).__name__}")
    values: Dict[str, float] = {}
    for key, value in metrics.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            values.update(flatten_metrics(value, name + "/", dropped))
            continue
        try:
            values[name] = _as_float(name, value)
        except TypeError:
            if dropped is None:
                raise
            dropped.append(name)
    return values


_session = _Session()


def report(metrics: Mapping[str, Any], checkpoint: Optional[Checkpoint] = None, **_ray_options) -> None:
    """Reports this iteration's metrics and, optionally, a checkpoint, as ray.train.report does.

    Rank 0's report is the job's: its metrics reach the head (``clusterctl metrics``, the dashboard,
    a sweep's ASHA) and its checkpoint is copied at once into the job's checkpoint folder and stored
    where any machine can restore it; the reported folder may be deleted as soon as this returns.
    Other ranks' reports are accepted and dropped.

    A value that is no number (a string, None) is left out, with a warning naming it once: the cluster
    keeps numbers.

    Raises FileNotFoundError for a checkpoint folder that does not exist, and ValueError with the node's
    reason for a report it refuses (a bad metric name).
    """
    _session.report(metrics, checkpoint)


def get_checkpoint() -> Optional[Checkpoint]:
    """The checkpoint this rank started from (its node restored it from the store before a retry started;
    None at first), or the newest it reported itself since, as Ray's."""
    return _session.get_checkpoint()
