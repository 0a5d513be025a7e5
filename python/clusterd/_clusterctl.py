"""Runs clusterctl for the client side of the package.

clusterctl already packs a working_dir into a content-addressed package,
uploads only what the head lacks, follows a job's logs across retries and
fetches checkpoints; the Python client drives it rather than doing each of
those a second time. A job is handed over as a job file written as JSON
(JSON is YAML), so the head checks it exactly as it checks a user's file.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from typing import Callable, Iterator, Optional, TextIO

from clusterd._connection import ConnectionInfo
from clusterd._errors import ClusterdError

_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # python/ of a checkout


def clusterctl_path() -> str:
    """$CLUSTERD_CLUSTERCTL, else clusterctl on PATH, else the one a checkout's build/ made.

    Raises ClusterdError when there is none.
    """
    given = os.environ.get("CLUSTERD_CLUSTERCTL")
    if given:
        return given
    found = shutil.which("clusterctl")
    if found:
        return found
    for build in (os.environ.get("CLUSTERD_BUILD", ""), os.path.join(os.path.dirname(_PACKAGE_ROOT), "build")):
        candidate = os.path.join(build, "cli", "clusterctl") if build else ""
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise ClusterdError("clusterctl not found: install clusterd, put clusterctl on PATH, or set CLUSTERD_CLUSTERCTL")


def _env(info: ConnectionInfo) -> dict:
    env = dict(os.environ)
    env.update(info.clusterctl_env())
    return env


def run(args: list, info: ConnectionInfo, *, timeout: Optional[float] = 120) -> subprocess.CompletedProcess:
    """clusterctl ARGS, its output captured. Raises ClusterdError with clusterctl's own words on failure."""
    try:
        done = subprocess.run([clusterctl_path(), *args], env=_env(info), capture_output=True, text=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired as e:
        raise ClusterdError(f"clusterctl {args[0]} did not answer within {timeout:g} s (head {info.address})") from e
    if done.returncode != 0:
        raise ClusterdError(_last_line(done.stderr) or f"clusterctl {args[0]} exited with {done.returncode}")
    return done


def run_json(args: list, info: ConnectionInfo, **kwargs):
    """clusterctl ARGS --json, parsed."""
    return json.loads(run([*args, "--json"], info, **kwargs).stdout)


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def check_head(info: ConnectionInfo) -> None:
    """Asks the head for its status; raises ClusterdError naming the address when it does not answer."""
    try:
        run(["status", "--json"], info, timeout=30)
    except ClusterdError as e:
        raise ClusterdError(f"cannot use the clusterd head at {info.address}: {e}") from None


_SUBMITTED = re.compile(r"^Submitted (?:job|sweep|array) (\S+)")


def submit(job: dict, info: ConnectionInfo, *, follow: bool = True, out: Optional[TextIO] = None,
           on_submitted: Optional[Callable[[str], None]] = None) -> tuple:
    """Submits ``job`` (a job file's map) and, with ``follow``, streams its output to ``out`` until it ends.

    Returns (id, exit code): the exit code is clusterctl's, 0 when the job (or every trial's job of a
    sweep) SUCCEEDED. ``on_submitted`` is told the id as soon as the head gave it.
    Raises ClusterdError when the job was not submitted (a refused spec, no head), with clusterctl's words.
    """
    out = out if out is not None else sys.stdout
    with tempfile.TemporaryDirectory(prefix="clusterd-job-") as tmp:
        path = os.path.join(tmp, f"{_file_name(job.get('name', 'job'))}.yaml")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(job, f, indent=1)
        args = [clusterctl_path(), "submit", path] + (["--follow"] if follow else [])
        proc = subprocess.Popen(args, env=_env(info), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                bufsize=1, errors="replace")
        job_id = ""
        errors: list = []
        # stderr is read beside stdout, so that neither pipe fills and stalls clusterctl.
        def drain_stderr():
            for line in proc.stderr:
                errors.append(line)
                out.write(line)
                out.flush()

        reader = threading.Thread(target=drain_stderr, daemon=True)
        reader.start()
        try:
            with terminated_as_interrupt():
                for line in proc.stdout:
                    if not job_id:
                        match = _SUBMITTED.match(line)
                        if match:
                            job_id = match.group(1)
                            if on_submitted:
                                on_submitted(job_id)
                    out.write(line)
                    out.flush()
                code = proc.wait()
        except BaseException:
            # Ctrl-C, or the caller told to end: what it started ends with it, as Ray's driver takes its
            # trainer with it (a job left queued would start unattended later).
            proc.kill()
            proc.wait()
            if job_id and follow:
                stop_quietly(job_id, info, out)
            raise
        finally:
            reader.join(timeout=5)
    if not job_id:
        raise ClusterdError(_last_line("".join(errors)) or f"clusterctl submit exited with {code}")
    return job_id, code


def stop_quietly(job_id: str, info: ConnectionInfo, out: TextIO) -> None:
    """Stops a job or sweep this process started; says so, or why it could not."""
    try:
        run(["stop", job_id], info, timeout=60)
        out.write(f"Stopped {job_id}\n")
    except ClusterdError as e:
        out.write(f"could not stop {job_id}: {e}\n")
    out.flush()


@contextlib.contextmanager
def terminated_as_interrupt() -> Iterator[None]:
    """While it lasts, SIGTERM and SIGHUP (a job driver stopped, a terminal closed) raise KeyboardInterrupt
    in the main thread, so that whatever a fit() started is stopped as for Ctrl-C."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, _frame):
        raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")

    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _file_name(name: str) -> str:
    # The job file's name is what clusterctl shows in messages; keep it a plain name.
    return re.sub(r"[^A-Za-z0-9_.-]", "_", str(name))[:64] or "job"
