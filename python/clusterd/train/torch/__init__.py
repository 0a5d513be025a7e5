"""ray.train.torch's names: TorchTrainer, prepare_model, prepare_data_loader, get_device."""

from clusterd.train.torch._prepare import get_device, prepare_data_loader, prepare_model
from clusterd.train.torch._trainer import TorchTrainer

__all__ = ["TorchTrainer", "prepare_model", "prepare_data_loader", "get_device"]
