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

from conftest import PYTHON, REPO

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
