"""get_context(): where this rank stands in its gang, as Ray Train's TrainContext."""

from __future__ import annotations

import os


def _int(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


class TrainContext:
    """Read from the torchrun variables clusterd gives each rank; a lone process is rank 0 of 1."""

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


_context = TrainContext()


def get_context() -> TrainContext:
    """This rank's TrainContext."""
    return _context
