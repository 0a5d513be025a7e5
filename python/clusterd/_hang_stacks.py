"""A rank's Python stacks on SIGQUIT, for hung gangs.

When the head finds a gang hung (the job's ``hang_timeout_s``: no rank
printed, reported or used CPU for that long), the node agents send SIGQUIT
to the ranks' Python processes before ending the attempt. With this
handler each of them writes every thread's stack to stderr, which is the
rank's log: the diagnosis kept with the attempt quotes it. Outside a rank
(a client that only submits jobs) nothing is registered, so SIGQUIT keeps
its usual meaning there.
"""

import faulthandler
import os
import signal
import sys


def register_in_rank() -> bool:
    """Registers the stack dump when this process runs as (part of) a rank.

    Returns whether it did. Idempotent: registering again replaces the
    handler with the same one.
    """
    if not os.environ.get("CLUSTER_JOB_ID") or not hasattr(signal, "SIGQUIT"):
        return False
    try:
        faulthandler.register(signal.SIGQUIT, file=sys.stderr, all_threads=True)
    except (ValueError, RuntimeError, OSError, AttributeError):
        # No usable stderr (closed, or replaced by an object without a file
        # descriptor): no stacks, and SIGQUIT keeps its default.
        return False
    return True
