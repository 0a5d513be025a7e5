"""TorchTrainer.fit() against a real local cluster: a script run as its user runs it, from a folder that only
the client has; the ranks find the package on the PYTHONPATH their node gives them."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap

import pytest

from local_cluster import PYTHON, REPO

# A Ray Train script with its imports changed: 2 ranks of DDP on a linear model, a checkpoint each epoch
# from a temporary folder deleted right after report(), and a resume from get_checkpoint().
SCRIPT = textwrap.dedent('''
    import json, os, sys, tempfile
    import torch
    import clusterd
    from clusterd import train
    from clusterd.train import Checkpoint, ScalingConfig, RunConfig, FailureConfig, CheckpointConfig
    from clusterd.train.torch import TorchTrainer, prepare_model, prepare_data_loader, get_device
    from helper_module import make_data  # beside the script: the working_dir is shipped

    def train_func(config):
        torch.manual_seed(0)
        model = prepare_model(torch.nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=config["lr"])
        loader = prepare_data_loader(torch.utils.data.DataLoader(make_data(), batch_size=16, shuffle=True))
        start = 0
        checkpoint = train.get_checkpoint()
        if checkpoint:
            with checkpoint.as_directory() as d:
                state = torch.load(os.path.join(d, "state.pt"))
            model.module.load_state_dict(state["model"]) if hasattr(model, "module") else model.load_state_dict(state["model"])
            start = state["epoch"] + 1
            print(f"resumed at epoch {start} on attempt {train.get_context().get_attempt()}", flush=True)
        for epoch in range(start, config["epochs"]):
            total = 0.0
            for x, y in loader:
                opt.zero_grad()
                loss = torch.nn.functional.mse_loss(model(x), y)
                loss.backward()
                opt.step()
                total += loss.item()
            with tempfile.TemporaryDirectory() as tmp:
                if train.get_context().get_world_rank() == 0:
                    inner = model.module if hasattr(model, "module") else model
                    torch.save({"model": inner.state_dict(), "epoch": epoch}, os.path.join(tmp, "state.pt"))
                train.report({"loss": total, "epoch": epoch}, checkpoint=Checkpoint.from_directory(tmp))
            if (epoch == config.get("crash_at_epoch") and train.get_context().get_attempt() == 0
                    and train.get_context().get_world_rank() == 1):
                sys.exit(3)

    if __name__ == "__main__":
        clusterd.init()
        config = json.loads(sys.argv[1])
        trainer = TorchTrainer(train_func, train_loop_config=config,
                               scaling_config=ScalingConfig(num_workers=2),
                               run_config=RunConfig(name="linear", storage_path=sys.argv[2],
                                                    failure_config=FailureConfig(max_failures=1),
                                                    checkpoint_config=CheckpointConfig(num_to_keep=2)))
        try:
            result = trainer.fit()
        except train.TrainingFailedError as e:
            print("FAILED:", e)
            sys.exit(7)
        with result.checkpoint.as_directory() as d:
            state = torch.load(os.path.join(d, "state.pt"))
        print("RESULT " + json.dumps({"metrics": result.metrics, "checkpoint": os.path.basename(result.checkpoint.path),
                                      "saved_epoch": state["epoch"], "path": result.path,
                                      "rows": len(result.metrics_dataframe)}))
''')

HELPER = textwrap.dedent('''
    import torch
    def make_data():
        g = torch.Generator().manual_seed(1)
        x = torch.randn(128, 4, generator=g)
        return torch.utils.data.TensorDataset(x, x.sum(dim=1, keepdim=True))
''')


@pytest.fixture
def script_dir(tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "train_linear.py").write_text(SCRIPT)
    (folder / "helper_module.py").write_text(HELPER)
    return folder


def run_client(cluster, folder, config, results, extra_env=None, timeout=300):
    # As a user runs it: Debian's python3, the package from the checkout, no cluster variables but the session.
    env = dict(cluster.env, PYTHONPATH=os.path.join(REPO, "python"), PYTHONDONTWRITEBYTECODE="1")
    env.pop("CLUSTER_ADDRESS", None)
    env.update(extra_env or {})
    return subprocess.run([PYTHON, str(folder / "train_linear.py"), json.dumps(config), str(results)], cwd="/",
                          env=env, capture_output=True, text=True, timeout=timeout)


def parse_result(done):
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, done.stdout + done.stderr
    return json.loads(lines[-1][len("RESULT "):])


def test_fit_trains_two_ranks_and_returns_the_final_checkpoint_on_the_client(local_cluster, script_dir, tmp_path):
    done = run_client(local_cluster, script_dir, {"lr": 0.05, "epochs": 3}, tmp_path / "results")
    assert done.returncode == 0, done.stdout + done.stderr
    result = parse_result(done)
    assert result["metrics"]["training_iteration"] == 3
    assert result["metrics"]["epoch"] == 2.0
    assert result["checkpoint"] == "checkpoint_000002" and result["saved_epoch"] == 2
    assert result["rows"] == 3
    assert result["path"].startswith(str(tmp_path / "results" / "linear" / "job-"))
    # Both ranks' output came to the client, prefixed by rank.
    assert "[report] loss=" in done.stdout


def test_a_failed_rank_restarts_the_gang_from_its_stored_checkpoint(local_cluster, script_dir, tmp_path):
    done = run_client(local_cluster, script_dir, {"lr": 0.05, "epochs": 3, "crash_at_epoch": 1}, tmp_path / "r")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "resumed at epoch 2 on attempt 1" in done.stdout
    result = parse_result(done)
    # Iterations go on from the restored checkpoint (epoch 1's, the second report): 3 in all, as Ray counts them.
    assert result["metrics"]["training_iteration"] == 3 and result["saved_epoch"] == 2
    assert result["rows"] == 3


def test_a_gang_that_fails_for_good_raises_naming_the_rank(local_cluster, script_dir, tmp_path):
    failing = script_dir / "fail.py"
    failing.write_text(textwrap.dedent('''
        import sys
        import clusterd
        from clusterd.train import ScalingConfig, TrainingFailedError, get_context
        from clusterd.train.torch import TorchTrainer
        def boom():
            if get_context().get_world_rank() == 1:
                raise RuntimeError("rank one gives up")
        try:
            TorchTrainer(boom, scaling_config=ScalingConfig(num_workers=2)).fit()
        except TrainingFailedError as e:
            print("ERROR:", e)
            sys.exit(0 if e.result is not None and e.result.error is e else 5)
        sys.exit(6)
    '''))
    env = dict(local_cluster.env, PYTHONPATH=os.path.join(REPO, "python"), PYTHONDONTWRITEBYTECODE="1",
               HOME=str(script_dir))  # its results folder: ~/clusterd_results
    done = subprocess.run([PYTHON, str(failing)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    error = [line for line in done.stdout.splitlines() if line.startswith("ERROR:")][0]
    assert "FAILED" in error and "rank 1" in error and "rank one gives up" in done.stdout


def test_bad_input_gets_one_clear_error(local_cluster, script_dir, monkeypatch):
    import clusterd
    from clusterd.train import ScalingConfig
    from clusterd.train.torch import TorchTrainer
    import threading

    lock = threading.Lock()
    with pytest.raises(TypeError, match="train_loop_per_worker 'f' cannot be shipped to the ranks"):
        def f():
            return lock  # a lock cannot be pickled
        TorchTrainer(f).job(working_dir=str(script_dir))
    with pytest.raises(ValueError, match="num_workers must be a whole number >= 1"):
        ScalingConfig(num_workers=0)
    monkeypatch.setenv("CLUSTERD_CLUSTERCTL", local_cluster.env["CLUSTERD_CLUSTERCTL"])
    monkeypatch.setenv("CLUSTER_TEMP_DIR", local_cluster.env["CLUSTER_TEMP_DIR"])
    with pytest.raises(ConnectionError, match="cannot use the clusterd head at 127.0.0.1:1"):
        clusterd.init("127.0.0.1:1", ignore_reinit_error=True)
    with pytest.raises(ConnectionError, match="token"):
        clusterd.init(local_cluster.address, token="0" * 32, ignore_reinit_error=True)
    clusterd.shutdown()
    monkeypatch.setenv("CLUSTER_TEMP_DIR", "/nonexistent-clusterd")
    monkeypatch.delenv("CLUSTER_ADDRESS", raising=False)
    with pytest.raises(ConnectionError, match="no clusterd head found"):
        clusterd.init()


def test_a_metric_the_node_refuses_fails_the_rank_with_the_nodes_reason(local_cluster, script_dir, tmp_path):
    refused = script_dir / "refused.py"
    refused.write_text(textwrap.dedent('''
        import sys
        from clusterd import train
        from clusterd.train import RunConfig, TrainingFailedError
        from clusterd.train.torch import TorchTrainer
        def loop():
            train.report({"train//loss": 1.0})
        try:
            TorchTrainer(loop, run_config=RunConfig(storage_path=sys.argv[1])).fit()
        except TrainingFailedError as e:
            print("ERROR:", e)
            sys.exit(0)
        sys.exit(6)
    '''))
    env = dict(local_cluster.env, PYTHONPATH=os.path.join(REPO, "python"), PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run([PYTHON, str(refused), str(tmp_path / "r")], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    # The real agent's words, through the rank's traceback, in the job's failure.
    assert 'the node refused the report: metric name "train//loss" has an empty' in done.stdout


def test_configs_a_ray_user_gets_wrong_are_refused_at_once(tmp_path, monkeypatch):
    import clusterd
    from clusterd.train import RunConfig, ScalingConfig
    from clusterd.train._job import job_spec
    with pytest.raises(ValueError, match="asks for GPUs but use_gpu is False"):
        ScalingConfig(num_workers=2, resources_per_worker={"CPU": 1, "GPU": 1})
    with pytest.raises(ValueError, match="storage_path 's3://b/p' must be a folder on this machine"):
        RunConfig(storage_path="s3://b/p")
    with pytest.raises(ValueError, match="runtime_env key 'pip' is not offered"):
        clusterd.init(runtime_env={"pip": ["torch"]}, check=False, ignore_reinit_error=True)
    project = tmp_path / "p"
    project.mkdir()
    monkeypatch.setenv("CLUSTER_ADDRESS", "127.0.0.1:1")
    clusterd.init(runtime_env={"working_dir": str(project), "env_vars": {"FOO": "bar"}, "excludes": ["data/"]},
                  check=False, ignore_reinit_error=True)
    try:
        from clusterd.train._job import caller_folder
        assert caller_folder() == str(project)
        job = job_spec("n", "payload", ScalingConfig(), RunConfig(env_vars={"FOO": "run's"}), caller_folder(),
                       experiment="n")
        assert job["working_dir"] == str(project) and "data/" in job["excludes"]
        assert job["env"]["FOO"] == "run's"  # the run's own env_vars over init's
        assert job["env"]["OMP_NUM_THREADS"] == "1"
    finally:
        clusterd.shutdown()
    # No script file (python -c, a notebook) and no runtime_env: nothing is shipped.
    job = job_spec("n", "payload", ScalingConfig(), RunConfig(), None, experiment="n")
    assert "working_dir" not in job and "excludes" not in job


INTERRUPTED = textwrap.dedent('''
    import time
    from clusterd import train
    from clusterd.train import ScalingConfig
    from clusterd.train.torch import TorchTrainer
    def loop():
        for i in range(600):
            train.report({"i": i})
            time.sleep(0.1)
    TorchTrainer(loop, scaling_config=ScalingConfig(num_workers=2)).fit()
''')


@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGTERM"])
def test_a_fit_interrupted_or_told_to_end_stops_its_job(local_cluster, script_dir, signal_name):
    import signal as signals
    script = script_dir / "interrupted.py"
    script.write_text(INTERRUPTED)
    env = dict(local_cluster.env, PYTHONPATH=os.path.join(REPO, "python"), PYTHONDONTWRITEBYTECODE="1",
               HOME=str(script_dir))
    client = subprocess.Popen([PYTHON, str(script)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
    seen = ""
    job_id = ""
    for line in client.stdout:
        seen += line
        if line.startswith("Submitted job "):
            job_id = line.split()[2]
        if job_id and "[report] i=3" in line:
            break
    assert job_id, seen
    client.send_signal(getattr(signals, signal_name))
    seen += client.communicate(timeout=120)[0]
    assert client.returncode != 0
    assert f"Stopped {job_id}" in seen, seen
    job = json.loads(local_cluster.ctl("job", job_id, "--json").stdout)
    assert job["state"] in ("STOPPED", "STOPPING"), job["state"]
