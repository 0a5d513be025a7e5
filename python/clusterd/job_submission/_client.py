"""``JobSubmissionClient``: Ray's job-submission client, speaking a clusterd head's HTTP API."""

from __future__ import annotations

import asyncio
import base64
import time
import urllib.parse
from typing import Any, AsyncIterator, Dict, Iterator, List, Optional

from clusterd._connection import resolve_token, temp_dir
from clusterd.job_submission import _package
from clusterd.job_submission._http import Head, address_token, default_address
from clusterd.job_submission._models import JobDetails, JobStatus, details_of, status_of

# runtime_env keys this client acts on; Ray's others (pip, conda, py_modules, ...) install things per job,
# which clusterd does not do (nothing is installed per job: the nodes' Python is the job's).
_RUNTIME_ENV_KEYS = ("working_dir", "env_vars", "excludes")
# How often tail_job_logs asks for more.
_POLL_S = 0.5


def _quote(value: str) -> str:
    return urllib.parse.quote(value, safe="")


class JobSubmissionClient:
    """Submits and manages jobs on a clusterd head, as Ray's JobSubmissionClient does on a Ray cluster.

    ``address``: the head's dashboard, as ``clusterd start --head`` printed it (``http://127.0.0.1:8265``,
    with or without its ``/?token=...``; ``HOST:PORT`` works too). None: ``$CLUSTER_DASHBOARD_ADDRESS``,
    then ``$RAY_ADDRESS`` when it is an http address, else ``http://127.0.0.1:8265``.
    ``token``: the cluster token; else the one in the address, then ``$CLUSTER_TOKEN``, then the local
    session's (``$CLUSTER_TEMP_DIR`` or ``/tmp/clusterd-<uid>``, ``session_latest/token``). It is sent
    in an Authorization header only.
    ``headers``: more HTTP headers for every request. ``timeout``: seconds per request.

    A head that does not answer raises ``clusterd.ClusterdError`` (a ConnectionError) here already; a
    refused request (wrong token, unknown job, a spec the head refuses) raises RuntimeError with the
    head's reason.
    """

    def __init__(self, address: Optional[str] = None, create_cluster_if_needed: bool = False,
                 cookies: Optional[Dict[str, Any]] = None, metadata: Optional[Dict[str, Any]] = None,
                 headers: Optional[Dict[str, Any]] = None, verify: Any = True, *, token: Optional[str] = None,
                 timeout: float = 60.0):
        if create_cluster_if_needed:
            raise ValueError("create_cluster_if_needed: start a head with `clusterd start --head` first")
        address = address or default_address()
        token = token or address_token(address) or resolve_token(None)
        if not token:
            raise RuntimeError(
                f"no cluster token: pass token=, set CLUSTER_TOKEN, or run where the head's session is "
                f"({temp_dir()}/session_latest/token)")
        self._head = Head(address, token, {k: str(v) for k, v in (headers or {}).items()}, timeout)
        # Ray's client-wide metadata, added to each job's.
        self._default_metadata = {str(k): str(v) for k, v in (metadata or {}).items()}
        # Ray checks the address at once: so does this (and the token with it).
        self._head.request("GET", "/api/status")

    @property
    def address(self) -> str:
        return self._head.address

    # ---- submitting -----------------------------------------------------------------------------------

    def submit_job(self, *, entrypoint: str, job_id: Optional[str] = None,
                   runtime_env: Optional[Dict[str, Any]] = None, metadata: Optional[Dict[str, str]] = None,
                   submission_id: Optional[str] = None, entrypoint_num_cpus: Optional[float] = None,
                   entrypoint_num_gpus: Optional[float] = None, entrypoint_memory: Optional[int] = None,
                   entrypoint_resources: Optional[Dict[str, float]] = None) -> str:
        """Runs ``entrypoint`` (a shell command) as a one-worker job; returns its submission id.

        ``runtime_env``: ``working_dir`` (a local folder, packed and shipped to the node that runs it, where
        the command starts), ``env_vars``, ``excludes`` (gitignore patterns left out of the package).
        ``submission_id``: chosen by the caller (letters, digits, ``_-.``), unique among the head's jobs;
        None: the head's job id (job-0001) is the submission id. ``entrypoint_num_cpus`` etc. are the
        worker's resources (none given: it takes none, as in Ray).
        """
        if not isinstance(entrypoint, str) or not entrypoint.strip():
            raise ValueError("entrypoint: a shell command, such as 'python train.py'")
        submission_id = submission_id or job_id
        runtime_env = dict(runtime_env or {})
        unknown = sorted(set(runtime_env) - set(_RUNTIME_ENV_KEYS))
        if unknown:
            raise ValueError(f"runtime_env: {', '.join(unknown)} not supported by clusterd (it takes "
                             f"{', '.join(_RUNTIME_ENV_KEYS)}; the nodes' own Python packages serve every job)")
        metadata = {**self._default_metadata, **{str(k): str(v) for k, v in (metadata or {}).items()}}
        amounts: Dict[str, float] = {}
        for name, value in (("CPU", entrypoint_num_cpus), ("GPU", entrypoint_num_gpus),
                            ("memory", entrypoint_memory)):
            if value is not None:
                amounts[name] = float(value)
        for name, value in (entrypoint_resources or {}).items():
            if name in ("CPU", "GPU", "memory"):
                raise ValueError(f"entrypoint_resources: give {name} with entrypoint_num_cpus, "
                                 f"entrypoint_num_gpus or entrypoint_memory")
            amounts[str(name)] = float(value)
        spec: Dict[str, Any] = {
            "name": metadata.get("job_name") or submission_id or "job_submission",
            "entrypoint": ["/bin/sh", "-c", entrypoint],
            "num_workers": 1,
            "resources_per_worker": {"amounts": amounts},
            "checkpoint": {"keep": 2},
            "env": {str(k): str(v) for k, v in (runtime_env.get("env_vars") or {}).items()},
            "metadata": metadata,
        }
        if submission_id:
            spec["submission_id"] = submission_id
        working_dir = runtime_env.get("working_dir")
        if working_dir:
            if not isinstance(working_dir, str) or "://" in working_dir:
                raise ValueError(f"runtime_env working_dir {working_dir!r}: give a local folder (clusterd packs "
                                 f"and ships it; remote URIs are not supported)")
            excludes = list(runtime_env.get("excludes") or [])
            package_id, size = self._ship(working_dir, excludes)
            spec.update(working_dir=_package.os.path.abspath(working_dir), package_id=package_id,
                        package_bytes=str(size), excludes=excludes)
        _, reply = self._head.request("POST", "/api/jobs", spec)
        return reply["submission_id"]

    def _ship(self, working_dir: str, excludes: List[str]) -> tuple:
        """Packs the folder and uploads it unless the head's store has it: (package id, size)."""
        package = _package.build(working_dir, excludes)
        try:
            path = f"/api/packages/{package.id}"
            status, stat = self._head.request("GET", path, ok=(200, 404))
            if status == 200:
                return package.id, package.size
            limit = int(stat.get("max_bytes", 0)) if isinstance(stat, dict) else 0
            if limit and package.size > limit:
                raise ValueError(f"working_dir {working_dir} packs into {package.size} bytes; the head takes "
                                 f"packages of at most {limit} (leave files out with runtime_env excludes)")
            self._head.request("PUT", path, package.file, extra_headers={
                "Content-Length": str(package.size), "Content-Type": "application/x-tar"})
            return package.id, package.size
        finally:
            package.file.close()

    # ---- reading --------------------------------------------------------------------------------------

    def _info(self, job_id: str) -> Dict[str, Any]:
        return self._head.request("GET", f"/api/job?id={_quote(job_id)}")[1]

    def get_job_info(self, job_id: str) -> JobDetails:
        """The job's record; RuntimeError when the head has no such job (a job id or a submission id)."""
        return details_of(self._info(job_id))

    def get_job_status(self, job_id: str) -> JobStatus:
        return status_of(self._info(job_id).get("state") or "PENDING")

    def list_jobs(self) -> List[JobDetails]:
        """Every job the head holds (finished ones until its retention forgets them), oldest first."""
        jobs: List[JobDetails] = []
        page = ""
        while True:
            reply = self._head.request("GET", "/api/jobs" + (f"?page_token={_quote(page)}" if page else ""))[1]
            jobs.extend(details_of(info) for info in reply.get("jobs") or [])
            page = reply.get("next_page_token") or ""
            if not page:
                return jobs

    def _log_piece(self, job_id: str, offset: int) -> tuple:
        """(bytes from offset, the next offset, the job's state name) of rank 0's output."""
        reply = self._head.request("GET", f"/api/logs?id={_quote(job_id)}&rank=0&offset={offset}")[1]
        data = b""
        end = offset
        for chunk in reply.get("chunks") or []:
            if int(chunk.get("rank", 0)) != 0:
                continue
            piece = base64.b64decode(chunk.get("data") or "")
            data += piece
            end = max(end, int(chunk.get("end_offset") or 0), offset + len(data))
        return data, end, reply.get("state") or ""

    def _pieces(self, job_id: str) -> Iterator[tuple]:
        offset = 0
        while True:
            data, offset, state = self._log_piece(job_id, offset)
            yield data, state
            if not data:
                return

    def get_job_logs(self, job_id: str) -> str:
        """The job's output so far (its worker's stdout and stderr, every attempt), whole."""
        return b"".join(data for data, _ in self._pieces(job_id)).decode(errors="replace")

    async def tail_job_logs(self, job_id: str) -> AsyncIterator[str]:
        """Yields the job's output as it comes, from the start; ends once the job has ended and all is read."""
        loop = asyncio.get_running_loop()
        offset = 0
        while True:
            data, offset, state = await loop.run_in_executor(None, self._log_piece, job_id, offset)
            if data:
                yield data.decode(errors="replace")
                continue
            if status_of(state or "PENDING").is_terminal():
                # The head takes the last lines before it marks the job ended; one more look gets any
                # that raced with the state.
                data, offset, _ = await loop.run_in_executor(None, self._log_piece, job_id, offset)
                if data:
                    yield data.decode(errors="replace")
                    continue
                return
            await asyncio.sleep(_POLL_S)

    # ---- ending ---------------------------------------------------------------------------------------

    def stop_job(self, job_id: str) -> bool:
        """Stops the job (SIGTERM, a grace period, SIGKILL); False when it had already ended."""
        return bool(self._head.request("POST", f"/api/job/stop?id={_quote(job_id)}")[1].get("stopped"))

    def delete_job(self, job_id: str) -> bool:
        """Forgets an ended job, its logs and stored data; RuntimeError while it has not ended."""
        return bool(self._head.request("DELETE", f"/api/job?id={_quote(job_id)}")[1].get("deleted"))

    def get_version(self) -> str:
        import clusterd
        return getattr(clusterd, "__version__", "")

    def wait_until_status(self, job_id: str, statuses, timeout_seconds: float = 600) -> JobStatus:
        """Polls until the job's status is one of ``statuses``; TimeoutError after ``timeout_seconds``."""
        wanted = {JobStatus(s) for s in statuses}
        deadline = time.monotonic() + timeout_seconds
        while True:
            status = self.get_job_status(job_id)
            if status in wanted:
                return status
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {job_id} is {status}, not {', '.join(sorted(wanted))}, after "
                                   f"{timeout_seconds:g} s")
            time.sleep(_POLL_S)
