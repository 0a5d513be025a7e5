"""The one search algorithm the head runs: Ray's BasicVariantGenerator (random and grid values)."""

from __future__ import annotations

import numbers
from typing import Any, Optional


class Searcher:
    """The base of the search algorithms offered here."""


class BasicVariantGenerator(Searcher):
    """Random draws and grids, as Ray's default search: the head draws every trial's values.

    ``random_state`` (an int) is the sweep's seed: the same seed gives the same trials. ``max_concurrent``
    limits trials running at once (0: as many as fit), as TuneConfig.max_concurrent_trials.
    Raises ValueError for points_to_evaluate (not offered) or a seed that is not an int.
    """

    def __init__(self, points_to_evaluate: Optional[list] = None, max_concurrent: int = 0,
                 constant_grid_search: bool = False, random_state: Any = None):
        if points_to_evaluate:
            raise ValueError("BasicVariantGenerator: points_to_evaluate is not offered; the head draws every trial")
        if random_state is not None and (isinstance(random_state, bool)
                                         or not isinstance(random_state, numbers.Integral)):
            raise ValueError(f"BasicVariantGenerator: random_state must be an int seed, got "
                             f"{type(random_state).__name__}")
        if isinstance(max_concurrent, bool) or not isinstance(max_concurrent, int) or max_concurrent < 0:
            raise ValueError(f"BasicVariantGenerator: max_concurrent must be an int >= 0, got {max_concurrent!r}")
        self.random_state = None if random_state is None else int(random_state)
        self.max_concurrent = max_concurrent
