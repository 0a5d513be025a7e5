"""TorchTrainer: a training function as a gang of ranks on the cluster, as ray.train.torch.TorchTrainer."""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, Optional

from clusterd import _connection
from clusterd.train import _job
from clusterd.train._checkpoint import Checkpoint
from clusterd.train._config import RunConfig, ScalingConfig
from clusterd.train._result import Result


class TorchTrainer:
    """Runs ``train_loop_per_worker(train_loop_config)`` on ``scaling_config.num_workers`` ranks.

    ``fit()`` ships the function by value and the calling script's folder as the job's working_dir,
    submits the gang, streams its ranks' output here, and returns a Result once the job has ended
    and its last checkpoint is stored (raising TrainingFailedError if it failed).
    """

    def __init__(self, train_loop_per_worker: Callable, *, train_loop_config: Optional[Dict[str, Any]] = None,
                 scaling_config: Optional[ScalingConfig] = None, run_config: Optional[RunConfig] = None,
                 resume_from_checkpoint: Optional[Checkpoint] = None, datasets: Optional[dict] = None,
                 torch_config: Any = None, metadata: Optional[dict] = None):
        if datasets:
            raise ValueError("TorchTrainer: datasets= (Ray Data) is not offered; load data inside "
                             "train_loop_per_worker and shard it with prepare_data_loader")
        if resume_from_checkpoint is not None:
            raise ValueError("TorchTrainer: resume_from_checkpoint is not offered yet; a job resumes by itself "
                             "from its newest stored checkpoint after a failure")
        self.train_loop_per_worker = train_loop_per_worker
        self.train_loop_config = train_loop_config
        self.scaling_config = scaling_config or ScalingConfig()
        self.run_config = run_config or RunConfig()

    def job(self, *, name: Optional[str] = None, working_dir: Optional[str] = None,
            meta: Optional[dict] = None) -> dict:
        """The job file's map this trainer submits (a Tuner adds its sweep to it)."""
        name = name or self.run_config.name or _job.default_name("TorchTrainer")
        payload = _job.pack_payload("train_loop_per_worker", self.train_loop_per_worker, self.train_loop_config)
        return _job.job_spec(name, payload, self.scaling_config, self.run_config, working_dir or _job.caller_folder(),
                             experiment=name, meta=dict(meta or {}, kind="trainer"))

    def fit(self) -> Result:
        """Runs the gang to its end. Raises TrainingFailedError (with .result) if it failed or was stopped,
        ClusterdError when there is no head to run it, TypeError when the function cannot be shipped."""
        info = _connection.current()
        job = self.job()
        job_id, _ = _job.submit(job, info, self.run_config.verbose)
        result = _job.collect_result(job_id, info, os.path.join(self.run_config.results_root(), job["name"], job_id),
                                     config=self.train_loop_config)
        if result.error is not None:
            raise result.error
        return result
