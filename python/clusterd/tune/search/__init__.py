"""ray.tune.search's names for the search clusterd's head runs (random draws and grids)."""

from clusterd.tune._search_alg import BasicVariantGenerator, Searcher

__all__ = ["BasicVariantGenerator", "Searcher"]
