"""Ray Tune's search-space functions: choice, uniform, loguniform, randint and grid_search.

Each returns what the head's ``tune.search_space`` can draw from
(common/jobspec/search_space.h): the head samples every trial, reproducibly from
the sweep's seed, so these objects only describe a dimension; ``sample()``
draws one value here, for trying a space out locally.
"""

from __future__ import annotations

import math
import numbers
import random
from typing import Any, Dict, List, Optional, Sequence


class Domain:
    """One dimension of a search space; the head draws its values."""

    distribution = ""

    def spec(self) -> Any:
        """The value of this dimension's ``{distribution: ...}`` entry in a job file."""
        raise NotImplementedError

    def sample(self, rng: Optional[random.Random] = None) -> Any:
        """One value drawn here, as the head would draw it (not the same numbers)."""
        raise NotImplementedError


def _number(what: str, name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(float(value)):
        raise TypeError(f"tune.{what}: {name} must be a finite number, got {value!r}")
    return float(value)


class Float(Domain):
    """uniform(lower, upper) or loguniform(lower, upper): a float in [lower, upper)."""

    def __init__(self, lower: float, upper: float, log: bool = False):
        what = "loguniform" if log else "uniform"
        self.lower = _number(what, "lower", lower)
        self.upper = _number(what, "upper", upper)
        if not self.lower < self.upper:
            raise ValueError(f"tune.{what}({lower!r}, {upper!r}): lower must be below upper")
        if log and self.lower <= 0:
            raise ValueError(f"tune.loguniform({lower!r}, {upper!r}): lower must be above 0")
        self.log = log
        self.distribution = what

    def spec(self) -> List[float]:
        return [self.lower, self.upper]

    def sample(self, rng: Optional[random.Random] = None) -> float:
        u = (rng or random).random()
        if self.log:
            return math.exp(math.log(self.lower) + u * (math.log(self.upper) - math.log(self.lower)))
        return self.lower + u * (self.upper - self.lower)

    def __repr__(self) -> str:
        return f"tune.{self.distribution}({self.lower!r}, {self.upper!r})"


class Integer(Domain):
    """randint(lower, upper): an integer in [lower, upper), upper excluded as in Ray."""

    distribution = "randint"

    def __init__(self, lower: int, upper: int):
        for name, value in (("lower", lower), ("upper", upper)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise TypeError(f"tune.randint: {name} must be an integer, got {value!r}")
        if not lower < upper:
            raise ValueError(f"tune.randint({lower!r}, {upper!r}): lower must be below upper (upper is excluded)")
        self.lower = int(lower)
        self.upper = int(upper)

    def spec(self) -> List[int]:
        return [self.lower, self.upper]

    def sample(self, rng: Optional[random.Random] = None) -> int:
        return (rng or random).randrange(self.lower, self.upper)

    def __repr__(self) -> str:
        return f"tune.randint({self.lower!r}, {self.upper!r})"


class Categorical(Domain):
    """choice(categories): one of the values, each as likely (any Python values)."""

    distribution = "choice"

    def __init__(self, categories: Sequence[Any]):
        if isinstance(categories, (str, bytes)) or not isinstance(categories, Sequence):
            raise TypeError(f"tune.choice takes a list of values, got {type(categories).__name__}")
        if len(categories) == 0:
            raise ValueError("tune.choice([]): give at least one value")
        self.categories = list(categories)

    def spec(self) -> List[Any]:
        return list(self.categories)

    def sample(self, rng: Optional[random.Random] = None) -> Any:
        return (rng or random).choice(self.categories)

    def __repr__(self) -> str:
        return f"tune.choice({self.categories!r})"


def choice(categories: Sequence[Any]) -> Categorical:
    """A value drawn from ``categories``, each as likely (Ray's tune.choice).

    Raises TypeError when ``categories`` is not a list, ValueError when it is empty.
    """
    return Categorical(categories)


def uniform(lower: float, upper: float) -> Float:
    """A float drawn uniformly from [lower, upper). Raises ValueError unless lower < upper."""
    return Float(lower, upper)


def loguniform(lower: float, upper: float, base: float = 10) -> Float:
    """A float whose logarithm is uniform over [log lower, log upper) (``base`` changes nothing of that).

    Raises ValueError unless 0 < lower < upper.
    """
    return Float(lower, upper, log=True)


def randint(lower: int, upper: int) -> Integer:
    """An integer drawn uniformly from [lower, upper): upper is excluded, as in Ray.

    Raises TypeError for a bound that is not an integer, ValueError unless lower < upper.
    """
    return Integer(lower, upper)


GRID_KEY = "grid_search"


def grid_search(values: Sequence[Any]) -> Dict[str, List[Any]]:
    """Every one of ``values``, each combined with every other grid, num_samples times (Ray's tune.grid_search).

    Returns Ray's marker, ``{"grid_search": [...]}``, so a param_space that spells it out works too.
    Raises TypeError when ``values`` is not a list, ValueError when it is empty.
    """
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TypeError(f"tune.grid_search takes a list of values, got {type(values).__name__}")
    if len(values) == 0:
        raise ValueError("tune.grid_search([]): give at least one value")
    return {GRID_KEY: list(values)}


def is_grid(value: Any) -> bool:
    """Whether ``value`` is grid_search's marker: a dict whose only key is "grid_search", holding a list."""
    return (isinstance(value, dict) and len(value) == 1 and GRID_KEY in value
            and isinstance(value[GRID_KEY], (list, tuple)))
