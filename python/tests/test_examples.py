"""The Python examples, run as their users run them, against a real local cluster, at a small scale.

- resnet18_fashion_mnist.py: Ray Train's PyTorch tutorial, two ranks; the trained model comes back from
  result.checkpoint and classifies test images on the client.
- dvc_pipeline/: DVC is not installed here, so each stage's ``cmd`` of dvc.yaml runs in order, as
  ``dvc repro`` would, and the stage's declared ``outs``, ``params`` and DVCLive metrics are checked.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from local_cluster import PYTHON, REPO

EXAMPLES = os.path.join(REPO, "examples", "python")
sys.path.insert(0, EXAMPLES)

import fashion_mnist_data  # noqa: E402  (beside the examples)


def user_env(cluster, **extra):
    # As a user runs it: Debian's python3, the package from the checkout, the cluster found by its session.
    env = dict(cluster.env, PYTHONPATH=os.path.join(REPO, "python"), PYTHONDONTWRITEBYTECODE="1")
    env.pop("CLUSTER_ADDRESS", None)
    env.update(extra)
    return env


def run(cmd, cwd, env, timeout=300):
    started = time.monotonic()
    done = subprocess.run(cmd, cwd=cwd, env=env, shell=isinstance(cmd, str), capture_output=True, text=True,
                          timeout=timeout)
    print(f"$ {cmd}  ({time.monotonic() - started:.1f} s, exit {done.returncode})")
    return done


# --- the data helper, on this machine --------------------------------------------------------------------------


def test_data_helper_unzips_debian_files_once_and_falls_back_to_fake_data(tmp_path, monkeypatch):
    if fashion_mnist_data.is_real():
        data = fashion_mnist_data.fashion_mnist(str(tmp_path / "data"), train=False, num_images=10)
        assert len(data) == 10
        image, label = data[0]
        assert image.size == (28, 28) and 0 <= label < 10
        raw = tmp_path / "data" / "FashionMNIST" / "raw"
        assert sorted(os.listdir(raw)) == sorted(fashion_mnist_data.FILES)  # no temporary file left behind
        before = os.stat(raw / "t10k-images-idx3-ubyte").st_mtime_ns
        fashion_mnist_data.fashion_mnist(str(tmp_path / "data"), train=False, num_images=10)
        assert os.stat(raw / "t10k-images-idx3-ubyte").st_mtime_ns == before
    monkeypatch.setenv("FASHION_MNIST_GZ_DIR", str(tmp_path / "absent"))
    assert not fashion_mnist_data.is_real()
    fake = fashion_mnist_data.fashion_mnist(str(tmp_path / "fake"), train=True, num_images=16)
    assert len(fake) == 16
    image, label = fake[0]
    assert image.size == (28, 28) and image.mode == "L" and 0 <= label < 10


# --- ResNet-18 on Fashion-MNIST ----------------------------------------------------------------------------------


def test_resnet18_tutorial_trains_two_ranks_and_classifies_on_the_client(local_cluster, tmp_path):
    results = tmp_path / "results"
    done = run([PYTHON, os.path.join(EXAMPLES, "resnet18_fashion_mnist.py"), "--num-workers", "2",
                "--num-epochs", "2", "--num-images", "1024", "--test-images", "500", "--storage-path", str(results)],
               cwd="/", env=user_env(local_cluster))
    assert done.returncode == 0, done.stdout + done.stderr
    # Rank 0 printed each epoch's metrics, as the tutorial does.
    assert "{'loss': " in done.stdout and "'epoch': 1}" in done.stdout
    metrics = re.search(r"^Result metrics: (.*)$", done.stdout, re.M)
    assert metrics and "'training_iteration': 2" in metrics.group(1), done.stdout
    checkpoint = re.search(r"^Result checkpoint: (.*)$", done.stdout, re.M).group(1)
    assert checkpoint.startswith(str(results / "resnet18_fashion_mnist")) and os.path.basename(checkpoint) == \
        "checkpoint_000001"
    assert os.path.isfile(os.path.join(checkpoint, "model.pt"))
    images = "Fashion-MNIST" if fashion_mnist_data.is_real() else "FakeData"
    line = re.search(rf"^Inference on 500 {images} test images: accuracy ([0-9.]+); "
                     rf"the first is a (.+), predicted (.+)$", done.stdout, re.M)
    assert line, done.stdout
    print(line.group(0))
    assert line.group(2) in fashion_mnist_data.CLASSES and line.group(3) in fashion_mnist_data.CLASSES
    if images == "Fashion-MNIST":
        # 16 steps of Adam on real images already beat chance (0.1) by far.
        assert float(line.group(1)) > 0.3, line.group(0)


# --- the DVC pipeline ---------------------------------------------------------------------------------------------


def declared_paths(entries):
    """Paths of a stage's deps/outs/metrics/plots list: each a string, or a one-key map of its options."""
    paths = []
    for entry in entries or []:
        paths.extend([entry] if isinstance(entry, str) else list(entry))
    return paths


def declared_params(entries):
    """(file, keys) of a stage's params list: a bare key is params.yaml's, a map names its file's keys."""
    params = []
    for entry in entries or []:
        if isinstance(entry, str):
            params.append(("params.yaml", [entry]))
        else:
            params.extend((path, list(keys or [])) for path, keys in entry.items())
    return params


def test_dvc_pipeline_stages_run_in_order_and_leave_their_outs_params_and_dvclive_metrics(local_cluster, tmp_path):
    yaml = pytest.importorskip("yaml")  # Debian's python3-yaml; the stages read and write YAML with it too
    pipeline = tmp_path / "dvc_pipeline"
    shutil.copytree(os.path.join(EXAMPLES, "dvc_pipeline"), pipeline)
    with open(pipeline / "dvc.yaml") as f:
        stages = yaml.safe_load(f)["stages"]
    assert list(stages) == ["tune", "train"]
    # dvc repro runs each cmd in a shell in the stage's folder; "python3" there is Debian's, with torch.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(PYTHON, bin_dir / "python3")
    env = user_env(local_cluster, PATH=f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
                   HOME=str(tmp_path / "home"))  # results land under ~/clusterd_results
    produced = set()
    for name, stage in stages.items():
        for dep in declared_paths(stage.get("deps")):
            assert (pipeline / dep).exists(), f"stage {name}: dependency {dep} is missing"
        for params_file, keys in declared_params(stage.get("params")):
            assert params_file in produced, f"stage {name}: {params_file} comes from no earlier stage"
            with open(pipeline / params_file) as f:
                values = yaml.safe_load(f)
            assert set(keys) <= set(values), f"stage {name}: {params_file} lacks {set(keys) - set(values)}"
        done = run(stage["cmd"], cwd=str(pipeline / stage.get("wdir", ".")), env=env)
        assert done.returncode == 0, f"stage {name}: {done.stdout}{done.stderr}"
        for kind in ("outs", "metrics", "plots"):
            for out in declared_paths(stage.get(kind)):
                assert (pipeline / out).exists(), f"stage {name}: declared {kind[:-1]} {out} was not written"
                produced.add(out)

    with open(pipeline / "best_params.yaml") as f:
        best = yaml.safe_load(f)
    assert 1e-10 <= best["lr"] <= 1 and 0.1 <= best["momentum"] <= 0.9, best
    import torch
    state = torch.load(pipeline / "model.pt")
    assert state["fc.weight"].shape == (10, 192)
    with open(pipeline / "dvclive" / "metrics.json") as f:
        summary = json.load(f)
    assert summary["step"] == 2 and 0 <= summary["mean_accuracy"] <= 1 and summary["loss"] >= 0, summary
    plots = pipeline / "dvclive" / "plots" / "metrics"
    assert sorted(os.listdir(plots)) == ["loss.tsv", "mean_accuracy.tsv"]
    rows = (plots / "mean_accuracy.tsv").read_text().splitlines()
    assert rows[0] == "timestamp\tstep\tmean_accuracy" and len(rows) == 4, rows
    assert [row.split("\t")[1] for row in rows[1:]] == ["0", "1", "2"]
    assert float(rows[-1].split("\t")[2]) == summary["mean_accuracy"]
