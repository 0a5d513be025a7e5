"""ray.train's names for clusterd: report, checkpoints, the rank's context, and the trainer's configs.

``clusterd.train.torch`` holds TorchTrainer and the helpers that need torch; this module does not import torch.
"""

from clusterd.train._checkpoint import Checkpoint
from clusterd.train._config import CheckpointConfig, FailureConfig, RunConfig, ScalingConfig, SyncConfig
from clusterd.train._context import TrainContext, get_context
from clusterd.train._result import Result, TrainingFailedError
from clusterd.train._session import get_checkpoint, report

__all__ = ["report", "get_checkpoint", "get_context", "Checkpoint", "TrainContext", "ScalingConfig", "RunConfig",
           "FailureConfig", "CheckpointConfig", "SyncConfig", "Result", "TrainingFailedError"]
