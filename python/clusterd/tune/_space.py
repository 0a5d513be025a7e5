"""A Ray param_space as the head's ``tune.search_space``, and a trial's parameters back as a config.

Each search function found in the param_space (at any depth of nested dicts)
becomes one dimension of the sweep, named by its path in the config the
ranks get, joined with "/" (``lr``, or ``model/lr`` for
``{"model": {"lr": ...}}``), as Ray flattens a config. Everything else is a
constant and travels in the shipped config. The head merges each trial's
values over the job's config by name; ``param_paths`` tells the rank where
each one goes back into the nested config (clusterd/_worker.py).

The head draws choice and grid values that are JSON scalars (strings,
numbers, booleans) as they are. Any other values (None, lists, dicts,
objects) are drawn as their index in the list, which the trial function
turns back into the value before the user's function sees it
(_trainable.TrialFunction), and so does ``config_of`` here.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import numbers
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

from clusterd.tune._search import GRID_KEY, Categorical, Domain, Float, Integer, is_grid

# What a search dimension's name may be made of: it is a key of the job's config, a column of
# trials.csv and a key of best_params.yaml, written there as is.
_SEGMENT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")
_INT64 = 2 ** 63
RESERVED_NAME = "__clusterd__"
MAX_TRIALS = 10000  # the head's bound (common/jobspec/search_space.h kMaxTrials)


@dataclasses.dataclass
class Dimension:
    """One search dimension: its head name, where it sits, and what the head draws from."""

    name: str
    path: Tuple[str, ...]            # in the param_space
    ship_path: Tuple[str, ...]       # in the config the ranks get
    distribution: str                # loguniform, uniform, randint, choice or grid
    spec: List[Any]                  # [low, high], or the values the head draws
    values: Optional[List[Any]] = None  # the real values when the head draws indexes


def _json_scalar(value: Any) -> bool:
    """Whether the head's YAML reader gives ``value`` back as itself (type included)."""
    if isinstance(value, bool) or isinstance(value, str):
        return True
    if isinstance(value, numbers.Integral):
        return -_INT64 <= int(value) < _INT64
    if isinstance(value, float):
        return math.isfinite(value)
    return False


def _dimension(name: str, path: Tuple[str, ...], ship_path: Tuple[str, ...], value: Any) -> Dimension:
    if is_grid(value):
        kind, values = "grid", list(value[GRID_KEY])
        if not values:
            raise ValueError(f"param_space {'/'.join(path)!r}: grid_search of no values")
    elif isinstance(value, Categorical):
        kind, values = "choice", list(value.categories)
    elif isinstance(value, (Float, Integer)):
        return Dimension(name, path, ship_path, value.distribution, value.spec())
    else:
        raise TypeError(f"param_space {'/'.join(path)!r}: {type(value).__name__} is not a search space clusterd "
                        f"offers (choice, uniform, loguniform, randint, grid_search)")
    if all(_json_scalar(v) for v in values):
        return Dimension(name, path, ship_path, kind, values)
    return Dimension(name, path, ship_path, kind, list(range(len(values))), values=values)


def _holds_search(value: Any) -> bool:
    if isinstance(value, Domain) or is_grid(value):
        return True
    if isinstance(value, dict):
        return any(_holds_search(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_holds_search(v) for v in value)
    return False


@dataclasses.dataclass
class SearchSpace:
    """A param_space split into the head's dimensions and the constants shipped to the ranks."""

    param_space: Dict[str, Any]
    dimensions: List[Dimension]
    shipped: Dict[str, Any]          # the ranks' config: constants, None where a dimension goes

    def search_space(self) -> Dict[str, Dict[str, Any]]:
        """The job file's ``tune.search_space`` map."""
        return {d.name: {d.distribution: list(d.spec)} for d in self.dimensions}

    def param_paths(self) -> Dict[str, List[str]]:
        """Where each parameter goes in the ranks' config, for ``__clusterd__.param_paths``."""
        return {d.name: list(d.ship_path) for d in self.dimensions}

    def indexed_values(self) -> Dict[Tuple[str, ...], List[Any]]:
        """Ship path -> real values, for the dimensions the head draws as indexes."""
        return {d.ship_path: d.values for d in self.dimensions if d.values is not None}

    def trial_count(self, num_samples: int) -> int:
        """num_samples x the product of the grids' sizes, as the head counts its trials."""
        count = num_samples
        for d in self.dimensions:
            if d.distribution == "grid":
                count *= len(d.spec)
        return count

    def value_of(self, dimension: Dimension, params: Dict[str, str]) -> Any:
        """A dimension's value in a trial whose parameters (JSON text by name) the head gave."""
        text = params.get(dimension.name)
        if text is None:
            return None
        value = json.loads(text)
        if dimension.values is not None:
            value = dimension.values[int(value)]
        return value

    def config_of(self, params: Dict[str, str]) -> Dict[str, Any]:
        """The trial's config in the param_space's shape: its values where the search spaces were."""
        config = _copy(self.param_space)
        for d in self.dimensions:
            _set(config, d.path, self.value_of(d, params))
        return config


def _copy(value: Any) -> Any:
    try:
        return copy.deepcopy(value)
    except Exception:  # an object that cannot be copied is shared, as Ray shares a constant it cannot copy
        return copy.copy(value)


def _set(tree: Dict[str, Any], path: Sequence[str], value: Any) -> None:
    for key in path[:-1]:
        tree = tree.setdefault(key, {})
    tree[path[-1]] = value


def _walk(node: Dict[str, Any], path: Tuple[str, ...], root: Tuple[str, ...], found: List[Dimension]) -> Dict[str, Any]:
    """The node with its search spaces replaced by None; their dimensions appended to ``found``."""
    out: Dict[str, Any] = {}
    for key, value in node.items():
        here = path + (key,)
        if not isinstance(key, str):
            raise TypeError(f"param_space keys are strings; {'/'.join(path) or 'the top level'} has {key!r}")
        if isinstance(value, Domain) or is_grid(value):
            if here[:len(root)] != root:
                raise ValueError(f"param_space {'/'.join(here)!r}: a search space here is not offered; "
                                 f"put it under {'/'.join(root)!r}")
            ship_path = here[len(root):]
            bad = [s for s in ship_path if not _SEGMENT.match(s)]
            if bad:
                raise ValueError(f"param_space {'/'.join(here)!r}: the key {bad[0]!r} cannot name a sweep parameter "
                                 f"(letters, digits, '_', '.' and '-'; not starting with '.' or '-')")
            name = "/".join(ship_path)
            if name == RESERVED_NAME:
                raise ValueError(f"param_space: {RESERVED_NAME!r} is clusterd's own key")
            found.append(_dimension(name, here, ship_path, value))
            out[key] = None
        elif isinstance(value, dict):
            out[key] = _walk(value, here, root, found)
        elif isinstance(value, (list, tuple)) and _holds_search(value):
            raise ValueError(f"param_space {'/'.join(here)!r}: search spaces inside a list are not offered; "
                             f"use a dict, or grid_search/choice over whole lists")
        else:
            out[key] = _copy(value)
    return out


def parse(param_space: Optional[Dict[str, Any]], root: Tuple[str, ...] = ()) -> SearchSpace:
    """Splits a Ray param_space; ``root`` is where the ranks' config starts (("train_loop_config",) for a trainer).

    Raises TypeError for a param_space that is not a dict or a key that is not a string, ValueError for
    a search space the head cannot draw (one inside a list, outside ``root``, under an unusable key).
    """
    if param_space is None:
        param_space = {}
    if not isinstance(param_space, dict):
        raise TypeError(f"Tuner: param_space must be a dict, not {type(param_space).__name__}")
    if is_grid(param_space):
        raise ValueError("Tuner: param_space is a grid_search itself; name it: {'x': tune.grid_search([...])}")
    found: List[Dimension] = []
    shipped = _walk(param_space, (), root, found)
    for key in root:
        shipped = shipped.get(key) if isinstance(shipped, dict) else None
    return SearchSpace(param_space=param_space, dimensions=found, shipped=shipped if isinstance(shipped, dict) else {})
