"""Ray's job records: ``JobStatus`` and ``JobDetails``, made from the head's JobInfo (proto/cluster.proto)."""

from __future__ import annotations

import dataclasses
import enum
from typing import Any, Dict, Optional


class JobStatus(str, enum.Enum):
    """Ray's job states. clusterd's map onto them: INFEASIBLE (no node set can fit it yet) is PENDING,
    RESTARTING (between attempts after a failure) is RUNNING; the message says which."""

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    STOPPED = "STOPPED"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"

    def __str__(self) -> str:
        return f"{self.value}"

    def is_terminal(self) -> bool:
        return self in (JobStatus.STOPPED, JobStatus.SUCCEEDED, JobStatus.FAILED)


class JobType(str, enum.Enum):
    SUBMISSION = "SUBMISSION"
    DRIVER = "DRIVER"


_STATES = {
    "PENDING": JobStatus.PENDING,
    "INFEASIBLE": JobStatus.PENDING,
    "RUNNING": JobStatus.RUNNING,
    "RESTARTING": JobStatus.RUNNING,
    "SUCCEEDED": JobStatus.SUCCEEDED,
    "FAILED": JobStatus.FAILED,
    "STOPPED": JobStatus.STOPPED,
}


def status_of(state: str) -> JobStatus:
    """Ray's status for one of clusterd's JobState names."""
    try:
        return _STATES[state]
    except KeyError:
        raise RuntimeError(f"the head reported job state {state!r}, which this client does not know") from None


@dataclasses.dataclass
class JobDetails:
    """One job, with Ray's fields. ``submission_id`` is the id the submitter chose, else the head's job id;
    ``job_id`` is the head's (job-0001). Times are milliseconds since the epoch, as Ray's."""

    type: JobType = JobType.SUBMISSION
    job_id: Optional[str] = None
    submission_id: Optional[str] = None
    status: JobStatus = JobStatus.PENDING
    entrypoint: str = ""
    message: Optional[str] = None
    error_type: Optional[str] = None
    start_time: Optional[int] = None
    end_time: Optional[int] = None
    metadata: Optional[Dict[str, str]] = None
    runtime_env: Optional[Dict[str, Any]] = None
    driver_info: Optional[Dict[str, Any]] = None
    driver_exit_code: Optional[int] = None
    entrypoint_num_cpus: Optional[float] = None
    entrypoint_num_gpus: Optional[float] = None
    entrypoint_memory: Optional[int] = None
    entrypoint_resources: Optional[Dict[str, float]] = None
    # clusterd's own: the state before mapping (INFEASIBLE, RESTARTING, ...), the attempts made.
    state: str = ""
    attempts: int = 0


# Ray < 2.3 called it JobInfo.
JobInfo = JobDetails


def _entrypoint_text(argv: list) -> str:
    if len(argv) == 3 and argv[0] == "/bin/sh" and argv[1] == "-c":
        return argv[2]
    import shlex
    return " ".join(shlex.quote(a) for a in argv)


def _int(value: Any) -> int:
    # Protobuf's JSON writes 64-bit integers as strings.
    return int(value) if value not in (None, "") else 0


def details_of(info: Dict[str, Any]) -> JobDetails:
    """Ray's JobDetails from the head's JobInfo as JSON (proto field names)."""
    spec = info.get("spec") or {}
    state = info.get("state") or "PENDING"
    amounts = dict((spec.get("resources_per_worker") or {}).get("amounts") or {})
    cpus = amounts.pop("CPU", None)
    gpus = amounts.pop("GPU", None)
    memory = amounts.pop("memory", None)
    runtime_env: Dict[str, Any] = {}
    if spec.get("working_dir"):
        runtime_env["working_dir"] = spec["working_dir"]
    if spec.get("env"):
        runtime_env["env_vars"] = dict(spec["env"])
    if spec.get("excludes"):
        runtime_env["excludes"] = list(spec["excludes"])
    attempts = info.get("attempts") or []
    start = _int(attempts[0].get("start_unix_ms")) if attempts else 0
    older = info.get("older_attempts") or {}
    if _int(older.get("first_start_unix_ms")):
        start = _int(older.get("first_start_unix_ms"))
    end = _int(info.get("end_unix_ms"))
    exit_code = None
    for rank in (attempts[-1].get("ranks") or []) if attempts else []:
        if rank.get("rank", 0) == 0 and rank.get("exited"):
            exit_code = rank.get("exit_code", 0)
    status = status_of(state)
    message = info.get("reason") or ""
    if state in ("INFEASIBLE", "RESTARTING"):
        message = f"{state}: {message}" if message else state
    job_id = info.get("job_id") or None
    return JobDetails(
        job_id=job_id,
        submission_id=spec.get("submission_id") or job_id,
        status=status,
        entrypoint=_entrypoint_text(list(spec.get("entrypoint") or [])),
        message=message or None,
        error_type="JOB_FAILED" if status == JobStatus.FAILED else None,
        start_time=start or _int(info.get("submit_unix_ms")) or None,
        end_time=end or None,
        metadata=dict(spec.get("metadata") or {}),
        runtime_env=runtime_env,
        driver_exit_code=exit_code,
        entrypoint_num_cpus=cpus,
        entrypoint_num_gpus=gpus,
        entrypoint_memory=int(memory) if memory is not None else None,
        entrypoint_resources=amounts or None,
        state=state,
        attempts=_int(older.get("count")) + len(attempts),
    )
