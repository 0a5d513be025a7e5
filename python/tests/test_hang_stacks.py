"""The clusterd package in a rank prints every thread's stack on SIGQUIT
(hung gangs, docs/RELIABILITY.md); outside a rank SIGQUIT keeps its meaning."""

import os
import signal
import subprocess
import sys

PACKAGE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PROGRAM = """
import os, signal, threading, time
import clusterd

def helper_waits():
    time.sleep(30)

threading.Thread(target=helper_waits, daemon=True).start()
time.sleep(0.2)
os.kill(os.getpid(), signal.SIGQUIT)
time.sleep(0.2)
print("still running", flush=True)
"""


def run(env_extra):
    env = {k: v for k, v in os.environ.items() if k != "CLUSTER_JOB_ID"}
    env.update(PYTHONPATH=PACKAGE_DIR, PYTHONDONTWRITEBYTECODE="1", **env_extra)
    return subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, timeout=60)


def test_a_rank_prints_all_threads_stacks_on_sigquit_and_goes_on():
    done = run({"CLUSTER_JOB_ID": "job-0001"})
    assert done.returncode == 0, done.stderr
    assert "still running" in done.stdout
    assert "in helper_waits" in done.stderr  # the other thread's stack too
    assert "Current thread" in done.stderr


def test_outside_a_rank_sigquit_keeps_its_default():
    done = run({})
    assert done.returncode == -signal.SIGQUIT
    assert "still running" not in done.stdout
