"""Trainables: a function (one process a trial), a TorchTrainer (a gang a trial), with_resources.

A function trainable is shipped wrapped in TrialFunction, which runs on the
rank: it turns the values the head drew as indexes back into the real ones
and reports a dict the function returns, as Ray takes a returned dict for
the trial's last result.
"""

from __future__ import annotations

import copy
import functools
import inspect
import numbers
import sys
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, Union

from clusterd.train._config import ScalingConfig


class TrialFunction:
    """What a trial's rank calls with its config: the user's function, with indexed values resolved."""

    def __init__(self, fn: Callable, indexed: Dict[Tuple[str, ...], List[Any]], report_return: bool):
        self.fn = fn
        self.indexed = indexed
        self.report_return = report_return
        self.__name__ = getattr(fn, "__name__", "trainable")

    def resolve(self, config: Any) -> Any:
        """The config with each indexed value replaced by the value it stands for."""
        if not self.indexed or not isinstance(config, dict):
            return config
        for path, values in self.indexed.items():
            node = config
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = copy.deepcopy(values[int(node[path[-1]])])
        return config

    def __call__(self, config: Any) -> Any:
        config = self.resolve(config)
        try:
            takes = len(inspect.signature(self.fn).parameters) > 0
        except (TypeError, ValueError):
            takes = True
        result = self.fn(config) if takes else self.fn()
        if self.report_return and isinstance(result, Mapping):
            from clusterd.train._session import report
            report(dict(result))
        return result


class WithResources:
    """A trainable with the resources each of its trials takes (what with_resources returns)."""

    def __init__(self, trainable: Any, scaling: ScalingConfig):
        self.trainable = trainable
        self.scaling = scaling
        self.__name__ = getattr(trainable, "__name__", "trainable")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.trainable(*args, **kwargs)

    def __repr__(self) -> str:
        return f"with_resources({self.__name__}, {self.scaling.worker_resources()})"


def _resources(resources: Mapping[str, Any]) -> ScalingConfig:
    if not resources:
        raise ValueError("with_resources: give at least one resource, e.g. {'CPU': 2, 'GPU': 1}")
    scaling_keys = {"num_workers", "use_gpu", "resources_per_worker", "placement_strategy", "trainer_resources"}
    if set(resources) & scaling_keys:
        # A ScalingConfig spelled as a dict.
        unknown = sorted(set(resources) - scaling_keys)
        if unknown:
            raise ValueError(f"with_resources: {unknown[0]!r} is neither a resource nor a ScalingConfig field")
        return ScalingConfig(**dict(resources))
    amounts: Dict[str, float] = {}
    for name, amount in resources.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"with_resources: resource names are strings, got {name!r}")
        if isinstance(amount, bool) or not isinstance(amount, numbers.Real) or amount < 0:
            raise ValueError(f"with_resources: {name} must be a number >= 0, got {amount!r}")
        amounts[{"cpu": "CPU", "gpu": "GPU"}.get(name.lower(), name)] = amount
    return ScalingConfig(num_workers=1, use_gpu=amounts.get("GPU", 0) > 0, resources_per_worker=amounts)


def with_resources(trainable: Any, resources: Union[Mapping[str, Any], ScalingConfig, Callable]) -> WithResources:
    """The trainable with what each of its trials takes, as Ray's tune.with_resources.

    ``resources``: a dict of amounts ({"CPU": 2, "GPU": 1}: one process with those), a ScalingConfig,
    or a dict of ScalingConfig's fields ({"num_workers": 2, "use_gpu": True}: a TorchTrainer's gang).
    Raises ValueError for an empty or negative request, and TypeError for a callable (Ray's
    per-config resources, not offered: every trial of a sweep takes the same).
    """
    if isinstance(resources, ScalingConfig):
        scaling = resources
    elif isinstance(resources, Mapping):
        scaling = _resources(resources)
    elif callable(resources):
        raise TypeError("with_resources: resources per config (a function) are not offered; every trial of a "
                        "sweep takes the same resources")
    else:
        raise TypeError(f"with_resources: resources must be a dict or a ScalingConfig, not {type(resources).__name__}")
    inner = trainable.trainable if isinstance(trainable, WithResources) else trainable
    return WithResources(inner, scaling)


def torch_trainer_class() -> Optional[type]:
    """TorchTrainer's class if it was imported (a TorchTrainer trainable was made), else None."""
    module = sys.modules.get("clusterd.train.torch._trainer")
    return getattr(module, "TorchTrainer", None) if module else None


def classify(trainable: Any) -> Tuple[str, Any, Optional[ScalingConfig]]:
    """("trainer" | "function", the bare trainable, the resources with_resources gave or None).

    Raises TypeError for a trainable that is neither a function nor a TorchTrainer.
    """
    scaling = None
    if isinstance(trainable, WithResources):
        trainable, scaling = trainable.trainable, trainable.scaling
    trainer_class = torch_trainer_class()
    if trainer_class is not None and isinstance(trainable, trainer_class):
        return "trainer", trainable, scaling
    if isinstance(trainable, str):
        raise TypeError(f"Tuner: trainable {trainable!r} is a registered name; pass the function itself")
    if isinstance(trainable, type):
        raise TypeError(f"Tuner: trainable {trainable.__name__} is a class; class Trainables are not offered, "
                        f"pass a function that takes the config and calls tune.report()")
    if not callable(trainable):
        raise TypeError(f"Tuner: trainable must be a function or a TorchTrainer, not {type(trainable).__name__}")
    if scaling is not None and scaling.num_workers != 1:
        raise ValueError(f"with_resources: a function trainable runs as one process, so num_workers must be 1 "
                         f"(got {scaling.num_workers}); use a TorchTrainer for a gang of ranks")
    return "function", trainable, scaling


def with_parameters(trainable: Callable, **kwargs: Any) -> Callable:
    """The function trainable with ``kwargs`` bound, as Ray's tune.with_parameters: each trial calls
    ``trainable(config, **kwargs)``. The objects ship with the function (cloudpickle), so large data is
    better loaded inside the trainable; TypeError for a class trainable or a TorchTrainer (bind its
    train_loop_per_worker instead)."""
    if isinstance(trainable, type) or not callable(trainable):
        raise TypeError("with_parameters: binds a function trainable's arguments; class trainables are not offered")
    trainer_class = torch_trainer_class()
    if trainer_class is not None and isinstance(trainable, trainer_class):
        raise TypeError("with_parameters: bind the TorchTrainer's train_loop_per_worker with functools.partial instead")
    bound = functools.partial(trainable, **kwargs)
    functools.update_wrapper(bound, trainable)
    return bound
