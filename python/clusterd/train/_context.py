"""get_context(): where this rank stands in its gang, as Ray Train's TrainContext."""

from __future__ import annotations

import os
from typing import Optional


def _int(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


class TrainContext:
    """Read from the torchrun variables clusterd gives each rank; a lone process is rank 0 of 1."""

    def __init__(self) -> None:
        self._notice_key: Optional[tuple] = None  # (inode, ctime, size) of the notice file last read
        self._deadline: Optional[float] = None

    def get_world_rank(self) -> int:
        return _int("RANK", 0)

    def get_world_size(self) -> int:
        return _int("WORLD_SIZE", 1)

    def get_local_rank(self) -> int:
        return _int("LOCAL_RANK", 0)

    def get_local_world_size(self) -> int:
        return _int("LOCAL_WORLD_SIZE", 1)

    def get_node_rank(self) -> int:
        return _int("NODE_RANK", 0)

    def get_trial_name(self) -> str:
        """The job's name: for a trial of a sweep, <sweep>-trial-NNN."""
        return os.environ.get("CLUSTER_JOB_NAME", "")

    def get_trial_id(self) -> str:
        return os.environ.get("CLUSTER_JOB_ID", "")

    def get_experiment_name(self) -> str:
        """RunConfig.name of the trainer or tuner that started this rank (the job's name otherwise)."""
        return os.environ.get("CLUSTERD_EXPERIMENT_NAME") or os.environ.get("CLUSTER_JOB_NAME", "")

    def get_attempt(self) -> int:
        """The gang's attempt: 0, then 1, 2, ... after each restart."""
        return _int("CLUSTER_ATTEMPT", 0)

    def should_preempt(self) -> Optional[float]:
        """The deadline (unix seconds) of a preemption notice to this gang, None when there is none.

        A higher-priority job took the gang's room: at the deadline the ranks get SIGTERM,
        then the job's preemption_grace_s, then SIGKILL, and the job is queued again to
        resume from its newest stored checkpoint. Checking it every step costs one stat()
        of the file the node writes ($CLUSTER_PREEMPTION_FILE); it is read once.
        """
        path = os.environ.get("CLUSTER_PREEMPTION_FILE")
        if not path:
            return None
        try:
            st = os.stat(path)
        except OSError:
            return None
        key = (st.st_ino, st.st_ctime_ns, st.st_size)  # the node renames a new file into place
        if key != self._notice_key:
            try:
                with open(path) as f:
                    deadline_ms = int(f.read().split()[0])
            except (OSError, ValueError, IndexError):
                return None
            self._notice_key = key
            self._deadline = deadline_ms / 1000.0 if deadline_ms > 0 else None
        return self._deadline


_context = TrainContext()


def get_context() -> TrainContext:
    """This rank's TrainContext."""
    return _context
