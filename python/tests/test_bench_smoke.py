"""bench/python's quick mode runs end to end against real daemons of this build and prints its table whole:
every part's rows, six cells each, and the count of missed targets. The figures and targets are not checked
here (docs/BENCHMARKS.md keeps them); a quick run on a busy machine may miss any of them."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from local_cluster import PYTHON, REPO, binaries, build_dir

BUILD = build_dir()
CLUSTERD, _ = binaries()

RUN = os.path.join(REPO, "bench", "python", "run.py")


def test_quick_mode_prints_the_whole_table():
    if not os.access(CLUSTERD, os.X_OK):
        pytest.skip(f"no clusterd build at {BUILD} (set CLUSTERD_BUILD)")
    env = dict(os.environ, CLUSTERD_BUILD=BUILD)
    for key in ("CLUSTER_ADDRESS", "CLUSTER_TOKEN", "CLUSTER_TEMP_DIR"):
        env.pop(key, None)
    done = subprocess.run([PYTHON, RUN, "--quick"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"run.py --quick exited {done.returncode}:\n{done.stdout}\n{done.stderr[-4000:]}"
    lines = done.stdout.splitlines()
    assert re.match(r"^\d+ cores, .*, --quick$", lines[0]), lines[0]
    header = lines.index("| metric | value | target | baseline | ratio | result |")
    assert lines[header + 1] == "|---|---|---|---|---|---|"
    rows = []
    for line in lines[header + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert len(cells) == 6, line
        assert cells[5] in ("pass", "MISSED", "info"), line
        assert cells[4] == "-" or re.match(r"^-?\d+\.\d\dx$", cells[4]), line
        rows.append(cells)
    parts = {row[0].split(":", 1)[0] for row in rows}
    assert parts == {"start", "report", "checkpoint", "tune"}, parts
    targets = [row for row in rows if row[2] != "-"]
    # One target each for start, report p99, checkpoint cost; two for tune (wall time, best metric).
    assert len(targets) == 5, targets
    missed = sum(1 for row in rows if row[5] == "MISSED")
    assert f"{missed} target(s) MISSED" in done.stdout
