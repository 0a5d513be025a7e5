"""ray.tune.schedulers' names for the schedulers clusterd's head runs."""

from clusterd.tune._schedulers import ASHAScheduler, AsyncHyperBandScheduler, FIFOScheduler, TrialScheduler

__all__ = ["ASHAScheduler", "AsyncHyperBandScheduler", "FIFOScheduler", "TrialScheduler"]
