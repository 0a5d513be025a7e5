"""Ray's job-submission API against a clusterd head: ``JobSubmissionClient``, ``JobStatus``, ``JobDetails``.

A Ray script changes its import and nothing else::

    from clusterd.job_submission import JobSubmissionClient, JobStatus

The client speaks the head's HTTP API on its dashboard port (docs/PYTHON.md).
"""

from clusterd.job_submission._client import JobSubmissionClient
from clusterd.job_submission._models import JobDetails, JobInfo, JobStatus, JobType

__all__ = ["JobSubmissionClient", "JobStatus", "JobDetails", "JobInfo", "JobType"]
