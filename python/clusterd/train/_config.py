"""ScalingConfig, RunConfig, FailureConfig and CheckpointConfig, with Ray Train's names and defaults."""

from __future__ import annotations

import dataclasses
import os
import warnings
from typing import Any, Dict, Optional

_PLACEMENTS = {"PACK": "PACK", "SPREAD": "SPREAD", "STRICT_SPREAD": "STRICT_SPREAD", "STRICT_PACK": "PACK"}


@dataclasses.dataclass
class ScalingConfig:
    """How many ranks, and what each needs.

    ``resources_per_worker`` defaults to one CPU, and one GPU more with ``use_gpu`` (as Ray's).
    ``placement_strategy``: PACK (fewest nodes), SPREAD, STRICT_SPREAD (one rank a node); Ray's
    STRICT_PACK is taken as PACK.
    """

    num_workers: int = 1
    use_gpu: bool = False
    resources_per_worker: Optional[Dict[str, float]] = None
    placement_strategy: str = "PACK"
    trainer_resources: Optional[Dict[str, float]] = None  # Ray's driver-side actor; there is none here

    def __post_init__(self) -> None:
        if not isinstance(self.num_workers, int) or isinstance(self.num_workers, bool) or self.num_workers < 1:
            raise ValueError(f"ScalingConfig: num_workers must be a whole number >= 1, got {self.num_workers!r}")
        if not self.use_gpu and float((self.resources_per_worker or {}).get("GPU", 0) or 0) > 0:
            raise ValueError("ScalingConfig: resources_per_worker asks for GPUs but use_gpu is False; pass "
                             "use_gpu=True (as Ray requires), so that each rank gets its GPU and NCCL")
        if str(self.placement_strategy).upper() not in _PLACEMENTS:
            raise ValueError(f"ScalingConfig: placement_strategy {self.placement_strategy!r} is not one of "
                             f"{', '.join(_PLACEMENTS)}")

    def worker_resources(self) -> Dict[str, float]:
        if self.resources_per_worker is not None:
            resources = {str(k): v for k, v in self.resources_per_worker.items()}
            if self.use_gpu and "GPU" not in resources:
                resources["GPU"] = 1
            return resources
        return {"CPU": 1, "GPU": 1} if self.use_gpu else {"CPU": 1}

    def placement(self) -> str:
        return _PLACEMENTS[str(self.placement_strategy).upper()]


@dataclasses.dataclass
class FailureConfig:
    """``max_failures``: restarts of the whole gang from its newest stored checkpoint (-1: as many as it takes)."""

    max_failures: int = 0
    fail_fast: bool = False


@dataclasses.dataclass
class CheckpointConfig:
    """``num_to_keep``: the newest checkpoints kept, on the nodes and in the store (None: all)."""

    num_to_keep: Optional[int] = None
    checkpoint_score_attribute: Optional[str] = None  # the newest are kept here, whatever their score
    checkpoint_score_order: str = "max"
    checkpoint_frequency: int = 0
    checkpoint_at_end: Optional[bool] = None


@dataclasses.dataclass
class SyncConfig:
    """Ray's syncing of results to storage: accepted and unused (results come back to this machine)."""

    sync_period: int = 300
    sync_timeout: int = 1800
    sync_artifacts: bool = False


# What max_failures=-1 ("retry for ever", Ray's) becomes: the head's own bound on attempts.
UNLIMITED_FAILURES = 1000000


@dataclasses.dataclass
class RunConfig:
    """The run's name, where its results land on this machine, and its failure and checkpoint policies.

    ``storage_path`` defaults to ~/clusterd_results (Ray's is ~/ray_results); a run's results go to
    ``storage_path/name``. ``env_vars`` are set in every rank.
    """

    name: Optional[str] = None
    storage_path: Optional[str] = None
    failure_config: Optional[FailureConfig] = None
    checkpoint_config: Optional[CheckpointConfig] = None
    verbose: int = 1
    stop: Optional[Dict[str, float]] = None
    callbacks: Optional[Any] = None
    env_vars: Optional[Dict[str, str]] = None
    sync_config: Optional[Any] = None  # Ray's syncing to storage: results come back to this machine here

    def __post_init__(self) -> None:
        if self.storage_path and "://" in str(self.storage_path):
            raise ValueError(f"RunConfig: storage_path {self.storage_path!r} must be a folder on this machine: "
                             "results come back here (checkpoints go to the cluster's store, or to S3 with the "
                             "head's --store)")
        keep = self.checkpoint_config
        if keep is not None and keep.checkpoint_score_attribute:
            warnings.warn("CheckpointConfig: checkpoint_score_attribute is not used: the newest num_to_keep "
                          "checkpoints are kept, whatever their score", stacklevel=3)

    def results_root(self) -> str:
        return os.path.abspath(os.path.expanduser(self.storage_path or os.path.join("~", "clusterd_results")))

    def max_failures(self) -> int:
        failures = (self.failure_config or FailureConfig()).max_failures
        return UNLIMITED_FAILURES if failures < 0 else int(failures)

    def keep(self) -> int:
        keep = (self.checkpoint_config or CheckpointConfig()).num_to_keep
        return 0 if keep is None else int(keep)
