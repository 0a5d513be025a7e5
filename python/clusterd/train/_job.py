"""A training function as a clusterd job: shipped, submitted, followed, and read back as a Result.

The function goes by value (cloudpickle, as Ray ships it), so one defined in
``__main__`` works; the calling script's folder goes as the job's working_dir,
so the modules beside it import on every rank. Each rank runs
``python -m clusterd._worker``, which the node finds on its PYTHONPATH.
"""

from __future__ import annotations

import base64
import datetime
import os
import sys
from typing import Any, Dict, Optional

from clusterd import _clusterctl, _connection
from clusterd._connection import ConnectionInfo
from clusterd.train._checkpoint import Checkpoint, newest_in
from clusterd.train._config import RunConfig, ScalingConfig
from clusterd.train._result import Result, TrainingFailedError, iteration_rows, last_metrics

# A job file may be 1 MiB; the payload rides in it as base64 (4/3 of its size).
MAX_PAYLOAD_BYTES = 640 << 10
PAYLOAD_KEY = "__clusterd__"


def worker_python() -> str:
    """The interpreter the ranks run: $CLUSTERD_WORKER_PYTHON, else this one (Ray also wants the same Python)."""
    return os.environ.get("CLUSTERD_WORKER_PYTHON") or sys.executable or "python3"


def caller_folder() -> Optional[str]:
    """The folder a job ships: init(runtime_env={"working_dir": ...})'s, else the running script's, else None
    (a notebook, ``python -c``: nothing is shipped, rather than whatever folder the session sits in)."""
    given = _connection.runtime_env().get("working_dir")
    if given:
        return given
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    return os.path.dirname(os.path.abspath(path)) if path else None


def default_name(prefix: str) -> str:
    return f"{prefix}_{datetime.datetime.now().strftime('%Y-%m-%d_%H-%M-%S')}"


def pack_payload(what: str, fn, config: Optional[Dict[str, Any]], *, takes_trainer_config: bool = True) -> str:
    """The function and its config for the ranks, base64 of a cloudpickle.

    Raises TypeError naming ``what`` when cloudpickle cannot ship it, and ValueError when it is too large.
    """
    try:
        import cloudpickle
    except ImportError as e:
        raise ImportError("clusterd ships functions with cloudpickle: apt install python3-cloudpickle") from e
    if not callable(fn):
        raise TypeError(f"{what} must be a function, not {type(fn).__name__}")
    try:
        data = cloudpickle.dumps({"fn": fn, "config": config})
    except Exception as e:  # cloudpickle raises many kinds: PicklingError, TypeError, AttributeError...
        raise TypeError(f"{what} {getattr(fn, '__name__', fn)!r} cannot be shipped to the ranks: "
                        f"{type(e).__name__}: {e}") from e
    if len(data) > MAX_PAYLOAD_BYTES:
        raise ValueError(f"{what} {getattr(fn, '__name__', fn)!r} and its config pickle to {len(data)} bytes, more "
                         f"than the {MAX_PAYLOAD_BYTES} a job carries: load large data inside the function, "
                         f"or put it in the script's folder")
    return base64.b64encode(data).decode("ascii")


def job_spec(name: str, payload: str, scaling: ScalingConfig, run_config: RunConfig, working_dir: Optional[str],
             *, experiment: str, meta: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The job file's map for a gang running the shipped function (shipping ``working_dir`` unless None)."""
    runtime_env = _connection.runtime_env()
    excludes = ["__pycache__/", ".git/"] + [str(e) for e in runtime_env.get("excludes", [])]
    results = run_config.results_root()
    if working_dir and (results == working_dir or results.startswith(working_dir.rstrip("/") + "/")):
        excludes.append("/" + os.path.relpath(results, working_dir) + "/")
    # As Ray sets it for its workers: each rank's intra-op threads fit the CPUs it was given, so ranks
    # placed side by side on a node do not each take every core.
    threads = max(1, int(scaling.worker_resources().get("CPU", 1) or 1))
    env = {"PYTHONUNBUFFERED": "1", "CLUSTERD_EXPERIMENT_NAME": experiment,
           "CLUSTERD_USE_GPU": "1" if scaling.use_gpu else "0", "OMP_NUM_THREADS": str(threads)}
    for variables in (runtime_env.get("env_vars") or {}, run_config.env_vars or {}):
        env.update({str(k): str(v) for k, v in variables.items()})
    job: Dict[str, Any] = {
        "name": name,
        "entrypoint": [worker_python(), "-m", "clusterd._worker"],
        "num_workers": scaling.num_workers,
        "resources_per_worker": scaling.worker_resources(),
        "placement": scaling.placement(),
        "max_failures": run_config.max_failures(),
        "checkpoint": {"keep": run_config.keep()},
        "env": env,
        "config": {PAYLOAD_KEY: dict(meta or {}, payload=payload)},
    }
    if working_dir:
        job.update(working_dir=working_dir, excludes=excludes)
    return job


def submit(job: Dict[str, Any], info: ConnectionInfo, verbose: int) -> tuple:
    """Submits and follows; the ranks' output is streamed here unless ``verbose`` is 0."""
    out = sys.stdout if verbose else open(os.devnull, "w")
    try:
        return _clusterctl.submit(job, info, follow=True, out=out)
    finally:
        if out is not sys.stdout:
            out.close()


def _failure_message(job: dict) -> str:
    state = job.get("state", "")
    attempts = job.get("attempts", [])
    failure = attempts[-1].get("failure_reason", "") if attempts else ""
    reason = job.get("reason", "")
    text = f"job {job.get('job_id', '')} {state}"
    for part in (reason, failure):
        if part and part not in text:
            text += f": {part}"
    return text


def collect_result(job_id: str, info: ConnectionInfo, results_dir: str, *, config=None,
                   fetch_checkpoint: bool = True) -> Result:
    """Reads the job's record and metrics from the head; fetches its newest stored checkpoint into results_dir.

    A job SUCCEEDS once rank 0's last reported checkpoint is stored (or its node said why not), and
    ``clusterctl fetch --checkpoint`` waits for one still on its way: the checkpoint is the last one.
    """
    job = _clusterctl.run_json(["job", job_id], info)
    metrics = _clusterctl.run_json(["metrics", job_id], info)
    rows = iteration_rows(metrics.get("records", []), job.get("attempts", []))
    last = last_metrics(rows)
    checkpoint = None
    os.makedirs(results_dir, exist_ok=True)
    if fetch_checkpoint and job.get("stored_checkpoints") and newest_in(results_dir) is None:
        _clusterctl.run(["fetch", job_id, "--checkpoint", "--out", results_dir], info, timeout=None)
    newest = newest_in(results_dir) if fetch_checkpoint else None
    if newest:
        checkpoint = Checkpoint(newest)
    if job.get("checkpoint_refused"):
        # The job ended with an older checkpoint than the last one reported: say why, here.
        print(f"[clusterd] warning: {job['checkpoint_refused']}", file=sys.stderr, flush=True)
    error = None
    if job.get("state") != "SUCCEEDED":
        error = TrainingFailedError(_failure_message(job), job_id)
    result = Result(metrics=last, checkpoint=checkpoint, error=error, path=results_dir, job_id=job_id, config=config,
                    rows=rows)
    if error is not None:
        error.result = result
    return result
