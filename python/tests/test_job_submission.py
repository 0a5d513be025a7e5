"""clusterd.job_submission.JobSubmissionClient against a real local head (conftest.local_cluster), as a Ray
script uses it: a working_dir that exists only in a temporary folder here is shipped and runs, logs are read
and tailed, jobs are stopped, deleted and listed, and a wrong token or an address with no head gets one clear
error."""

from __future__ import annotations

import asyncio
import os
import tarfile
import time

import pytest

from local_cluster import PYTHON, free_port

from clusterd._errors import ClusterdError
from clusterd.job_submission import JobDetails, JobStatus, JobSubmissionClient
from clusterd.job_submission import _package
from clusterd.job_submission._models import details_of


@pytest.fixture
def client(cluster_env):
    return JobSubmissionClient(f"http://127.0.0.1:{cluster_env.dashboard_port}")


def wait_for(client, job, statuses, timeout=90.0):
    return client.wait_until_status(job, statuses, timeout_seconds=timeout)


def make_project(root):
    os.makedirs(os.path.join(root, "data"))
    with open(os.path.join(root, "main.py"), "w") as f:
        f.write("import os, sys\n"
                "print('greeting:', os.environ['GREETING'])\n"
                "print('data:', open('data/input.txt').read().strip())\n"
                "for gone in ('.git', '__pycache__', 'big.log', 'data/skip.tmp'):\n"
                "    print(gone, 'present' if os.path.exists(gone) else 'absent')\n"
                "sys.stdout.flush()\n")
    with open(os.path.join(root, "data", "input.txt"), "w") as f:
        f.write("shipped-bytes-42\n")
    for folder in (".git", "__pycache__"):
        os.makedirs(os.path.join(root, folder))
        with open(os.path.join(root, folder, "x"), "w") as f:
            f.write("x")
    with open(os.path.join(root, "big.log"), "w") as f:
        f.write("left out by .clusterignore\n")
    with open(os.path.join(root, "data", "skip.tmp"), "w") as f:
        f.write("left out by excludes\n")
    with open(os.path.join(root, ".clusterignore"), "w") as f:
        f.write("*.log\n")


def test_a_working_dir_only_here_is_shipped_and_runs(client, tmp_path):
    project = tmp_path / "project"
    make_project(str(project))
    job = client.submit_job(
        entrypoint=f"{PYTHON} main.py",
        runtime_env={"working_dir": str(project), "env_vars": {"GREETING": "hi there"}, "excludes": ["*.tmp"]},
        metadata={"owner": "tests"}, entrypoint_num_cpus=1)
    assert job.startswith("job-")
    assert wait_for(client, job, {JobStatus.SUCCEEDED, JobStatus.FAILED}) == JobStatus.SUCCEEDED, \
        client.get_job_logs(job)
    logs = client.get_job_logs(job)
    assert "greeting: hi there" in logs
    assert "data: shipped-bytes-42" in logs
    for gone in (".git", "__pycache__", "big.log", "data/skip.tmp"):
        assert f"{gone} absent" in logs
    info = client.get_job_info(job)
    assert isinstance(info, JobDetails)
    assert info.submission_id == job and info.job_id == job
    assert info.status == JobStatus.SUCCEEDED and info.status.is_terminal()
    assert info.entrypoint == f"{PYTHON} main.py"
    assert info.metadata == {"owner": "tests"}
    assert info.runtime_env["env_vars"] == {"GREETING": "hi there"}
    assert info.entrypoint_num_cpus == 1
    assert info.start_time and info.end_time and info.end_time >= info.start_time
    assert info.driver_exit_code == 0
    # The same folder again: the head has the package, nothing is uploaded, and it runs the same.
    again = client.submit_job(entrypoint=f"{PYTHON} main.py",
                              runtime_env={"working_dir": str(project), "env_vars": {"GREETING": "again"},
                                           "excludes": ["*.tmp"]})
    assert wait_for(client, again, {JobStatus.SUCCEEDED, JobStatus.FAILED}) == JobStatus.SUCCEEDED
    assert "greeting: again" in client.get_job_logs(again)


def test_a_chosen_submission_id_is_unique_and_finds_the_job(client):
    sid = f"ray-style-{int(time.time() * 1000)}"
    assert client.submit_job(entrypoint="echo chosen", submission_id=sid) == sid
    with pytest.raises(RuntimeError, match="already"):
        client.submit_job(entrypoint="echo twice", submission_id=sid)
    assert wait_for(client, sid, {JobStatus.SUCCEEDED, JobStatus.FAILED}) == JobStatus.SUCCEEDED
    info = client.get_job_info(sid)
    assert info.submission_id == sid and info.job_id.startswith("job-")
    # The head marks where each attempt begins, on which machine.
    logs = client.get_job_logs(sid)
    assert logs.startswith("--- attempt 0 on ") and logs.endswith(" ---\nchosen\n")
    assert sid in [j.submission_id for j in client.list_jobs()]
    with pytest.raises(ValueError, match="runtime_env: pip"):
        client.submit_job(entrypoint="true", runtime_env={"pip": ["torch"]})


def test_tail_job_logs_streams_until_the_job_ends(client):
    job = client.submit_job(entrypoint="for i in 1 2 3 4; do echo line-$i; sleep 0.4; done")

    async def tail():
        chunks = []
        async for chunk in client.tail_job_logs(job):
            chunks.append(chunk)
        return chunks

    chunks = asyncio.run(asyncio.wait_for(tail(), timeout=90))
    assert "".join(chunks).endswith("---\nline-1\nline-2\nline-3\nline-4\n")
    assert len(chunks) > 1  # it came as it was written, not at the end only
    assert client.get_job_status(job) == JobStatus.SUCCEEDED


def test_stop_then_delete(client):
    job = client.submit_job(entrypoint="echo started; sleep 300")
    assert wait_for(client, job, {JobStatus.RUNNING}) == JobStatus.RUNNING
    with pytest.raises(RuntimeError, match="stop it first"):
        client.delete_job(job)
    began = time.monotonic()
    assert client.stop_job(job) is True
    assert wait_for(client, job, {JobStatus.STOPPED}, timeout=60) == JobStatus.STOPPED
    assert time.monotonic() - began < 60
    assert client.stop_job(job) is False  # had ended
    assert client.delete_job(job) is True
    with pytest.raises(RuntimeError, match="404"):
        client.get_job_info(job)
    assert job not in [j.job_id for j in client.list_jobs()]


def test_a_failed_job_is_failed_with_its_output(client):
    job = client.submit_job(entrypoint="echo about to fail; exit 3")
    assert wait_for(client, job, {JobStatus.SUCCEEDED, JobStatus.FAILED}) == JobStatus.FAILED
    info = client.get_job_info(job)
    assert info.error_type == "JOB_FAILED" and info.message
    assert "about to fail" in client.get_job_logs(job)


def test_unknown_job_and_bad_input_are_one_clear_error(client):
    with pytest.raises(RuntimeError, match="no job 'no-such-job'"):
        client.get_job_status("no-such-job")
    with pytest.raises(RuntimeError, match="submission_id"):
        client.submit_job(entrypoint="true", submission_id="has spaces")
    with pytest.raises(ValueError, match="not a folder"):
        client.submit_job(entrypoint="true", runtime_env={"working_dir": "/no/such/folder"})
    with pytest.raises(ValueError, match="remote URIs"):
        client.submit_job(entrypoint="true", runtime_env={"working_dir": "s3://bucket/code.zip"})


def test_token_sources_and_a_wrong_token(cluster_env, monkeypatch):
    url = f"http://127.0.0.1:{cluster_env.dashboard_port}"
    # The address as clusterd printed it carries the token; it is sent in a header.
    JobSubmissionClient(f"{url}/?token={cluster_env.token}").list_jobs()
    monkeypatch.setenv("CLUSTER_DASHBOARD_ADDRESS", url)
    assert JobSubmissionClient().address == url  # token from the local session
    with pytest.raises(RuntimeError, match="wrong cluster token") as refused:
        JobSubmissionClient(url, token="not-the-token")
    assert "refused the cluster token" in str(refused.value)
    monkeypatch.setenv("CLUSTER_TOKEN", "also-wrong")
    with pytest.raises(RuntimeError, match="wrong cluster token"):
        JobSubmissionClient(url)


def test_no_head_at_the_address(cluster_env):
    port = free_port()
    with pytest.raises(ClusterdError, match=f"no clusterd head answers at http://127.0.0.1:{port}"):
        JobSubmissionClient(f"http://127.0.0.1:{port}", token="anything", timeout=10)
    assert issubclass(ClusterdError, ConnectionError)


def test_a_package_is_the_same_bytes_for_the_same_content(tmp_path):
    root = tmp_path / "p"
    make_project(str(root))
    os.symlink("data/input.txt", root / "link")
    first = _package.build(str(root), ["*.tmp"])
    os.utime(root / "data", (1, 1))  # a folder's time is not content
    second = _package.build(str(root), ["*.tmp"])
    assert (first.id, first.size) == (second.id, second.size)
    with tarfile.open(fileobj=first.file) as tar:
        names = sorted(m.name for m in tar.getmembers())
        assert names == [".clusterignore", "data", "data/input.txt", "link", "main.py"]
        assert tar.getmember("link").issym() and tar.getmember("link").linkname == "data/input.txt"
        assert all(m.uid == 0 and m.uname == "" for m in tar.getmembers())
    (root / "main.py").write_text("changed\n")
    assert _package.build(str(root), ["*.tmp"]).id != first.id
    # A negation takes .git back, as for clusterctl.
    with tarfile.open(fileobj=_package.build(str(root), ["!.git"]).file) as tar:
        assert ".git/x" in tar.getnames()
    os.symlink("/etc/passwd", root / "out")
    with pytest.raises(ValueError, match="points out of the folder"):
        _package.build(str(root))


def test_clusterd_states_map_onto_rays():
    def status(state):
        return details_of({"job_id": "job-0001", "state": state, "reason": "why", "spec": {}})

    assert status("INFEASIBLE").status == JobStatus.PENDING
    assert status("INFEASIBLE").message == "INFEASIBLE: why"
    assert status("RESTARTING").status == JobStatus.RUNNING
    assert status("STOPPED").status == JobStatus.STOPPED
    assert [s.value for s in JobStatus] == ["PENDING", "RUNNING", "STOPPED", "SUCCEEDED", "FAILED"]
