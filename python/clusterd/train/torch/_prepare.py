"""prepare_model, prepare_data_loader and get_device inside a rank, as ray.train.torch's."""

from __future__ import annotations

import os
from typing import Any, Optional

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, RandomSampler, SequentialSampler


def _world_size() -> int:
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else int(
        os.environ.get("WORLD_SIZE", "1"))


def get_device() -> torch.device:
    """This rank's device: its GPU when the trainer asked for GPUs and one is visible, else the CPU."""
    if os.environ.get("CLUSTERD_USE_GPU") == "1" and torch.cuda.is_available():
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())
    return torch.device("cpu")


def get_devices() -> list:
    """This rank's devices (one: get_device()), as Ray's."""
    return [get_device()]


def enable_reproducibility(seed: int = 0) -> None:
    """Seeds Python's, numpy's (when installed) and torch's generators and asks torch for deterministic
    algorithms, as Ray's does; slower, and some operations then raise."""
    import random
    random.seed(seed)
    try:
        import numpy
        numpy.random.seed(seed)
    except ImportError:
        pass
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")


def prepare_model(model: torch.nn.Module, move_to_device: bool = True, parallel_strategy: Optional[str] = "ddp",
                  parallel_strategy_kwargs: Optional[dict] = None) -> torch.nn.Module:
    """Moves the model to this rank's device and, with more than one rank, wraps it in DistributedDataParallel.

    ``parallel_strategy``: "ddp" or None (Ray's "fsdp" is not offered: ValueError).
    """
    if parallel_strategy not in ("ddp", None):
        raise ValueError(f"prepare_model: parallel_strategy {parallel_strategy!r} is not offered; use 'ddp' or None")
    device = get_device()
    if move_to_device:
        model = model.to(device)
    if parallel_strategy == "ddp" and _world_size() > 1:
        kwargs = dict(parallel_strategy_kwargs or {})
        if device.type == "cuda":
            kwargs.setdefault("device_ids", [device.index])
            kwargs.setdefault("output_device", device.index)
        model = torch.nn.parallel.DistributedDataParallel(model, **kwargs)
    return model


def _to_device(batch: Any, device: torch.device) -> Any:
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, (list, tuple)):
        moved = [_to_device(b, device) for b in batch]
        return type(batch)(moved) if not hasattr(batch, "_fields") else type(batch)(*moved)
    if isinstance(batch, dict):
        return {k: _to_device(v, device) for k, v in batch.items()}
    return batch


class _DeviceLoader:
    """A DataLoader whose batches arrive on the rank's device. Its DistributedSampler is the script's to
    move on with ``loader.sampler.set_epoch(epoch)``, as under Ray, so a resumed run picks its epoch's order."""

    def __init__(self, loader: DataLoader, device: torch.device, move: bool):
        self._loader = loader
        self._device = device
        self._move = move

    def __len__(self) -> int:
        return len(self._loader)

    def __getattr__(self, name: str):
        return getattr(self._loader, name)

    def __iter__(self):
        for batch in self._loader:
            yield _to_device(batch, self._device) if self._move else batch


def prepare_data_loader(data_loader: DataLoader, add_dist_sampler: bool = True, move_to_device: bool = True,
                        auto_transfer: bool = True):
    """This rank's share of the loader: a DistributedSampler over its dataset (shuffling as the loader did)
    and batches moved to the rank's device."""
    loader = data_loader
    if add_dist_sampler and _world_size() > 1 and not isinstance(loader.sampler, DistributedSampler):
        if loader.batch_sampler is not None and not hasattr(loader.batch_sampler, "sampler"):
            raise ValueError("prepare_data_loader: a loader with its own batch_sampler cannot be sharded; "
                             "give it a batch_size instead")
        shuffle = isinstance(loader.sampler, RandomSampler)
        if not shuffle and not isinstance(loader.sampler, SequentialSampler):
            raise ValueError(f"prepare_data_loader: a loader with a {type(loader.sampler).__name__} cannot be "
                             "sharded; pass add_dist_sampler=False and shard it yourself")
        loader = DataLoader(loader.dataset, batch_size=loader.batch_size, shuffle=False,
                            sampler=DistributedSampler(loader.dataset, shuffle=shuffle),
                            num_workers=loader.num_workers, collate_fn=loader.collate_fn,
                            pin_memory=loader.pin_memory, drop_last=loader.drop_last, timeout=loader.timeout,
                            worker_init_fn=loader.worker_init_fn, generator=loader.generator,
                            persistent_workers=loader.persistent_workers)
    return _DeviceLoader(loader, get_device(), move_to_device)
