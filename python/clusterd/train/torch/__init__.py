"""ray.train.torch's names: TorchTrainer, prepare_model, prepare_data_loader, get_device."""

from clusterd.train.torch._prepare import (enable_reproducibility, get_device, get_devices, prepare_data_loader,
                                           prepare_model)
from clusterd.train.torch._trainer import TorchTrainer

__all__ = ["TorchTrainer", "prepare_model", "prepare_data_loader", "get_device", "get_devices",
           "enable_reproducibility"]
