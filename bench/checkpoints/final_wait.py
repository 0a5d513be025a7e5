#!/usr/bin/python3
"""How long a job's final state waits for its last checkpoint (issue: a job that SUCCEEDED has its last
checkpoint stored), against that checkpoint's upload at full speed in the same run.

  CLUSTERD_BUILD=build /usr/bin/python3 bench/checkpoints/final_wait.py [--mib 500] [--runs 3]

On a local cluster (real daemons of $CLUSTERD_BUILD on free loopback ports, stopped at the end), per run:
- final: a rank reports a checkpoint of --mib MiB that does not repeat, then exits at once; the wait is
  from its exit to the job's end (SUCCEEDED, with that checkpoint stored);
- baseline: the same report with checkpoint.upload_rate unlimited, the rank living on; the upload is from
  the report's return to the head's record of it stored.
The ratio final / baseline near 1 says the final state waits for the upload and for nothing else.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import tempfile
import textwrap
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
from _cluster import PYTHON, LocalCluster  # noqa: E402  (bench/python's local cluster)

RANK = textwrap.dedent('''
    import os, sys, tempfile, time
    from clusterd import train
    mib, live = int(sys.argv[1]), sys.argv[2] == "live"
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "w.bin"), "wb") as f:
            for _ in range(mib):
                f.write(os.urandom(1 << 20))
        train.report({"mib": mib}, checkpoint=train.Checkpoint.from_directory(tmp))
    print(f"reported_ms={int(time.time() * 1000)}", flush=True)
    if live:
        time.sleep(600)
''')


def stamp(logs: str, key: str) -> int:
    for line in logs.splitlines():
        if key + "=" in line:
            return int(line.split(key + "=")[1].split()[0])
    raise RuntimeError(f"no {key} in the rank's log:\n{logs}")


def run_job(cluster: LocalCluster, folder: str, mib: int, live: bool) -> float:
    name = "live" if live else "final"
    job_file = os.path.join(folder, f"{name}.yaml")
    with open(job_file, "w") as f:
        f.write(f"name: {name}\nentrypoint: [{PYTHON}, rank.py, '{mib}', {name}]\nworking_dir: {folder}\n"
                f"checkpoint: {{keep: 1{', upload_rate: unlimited' if live else ''}}}\n")
    job_id = cluster.ctl_json("submit", job_file)["job_id"]
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        job = cluster.ctl_json("job", job_id)
        logs = cluster.ctl("logs", job_id).stdout
        if "reported_ms=" in logs:
            reported = stamp(logs, "reported_ms")
            if live and job.get("stored_checkpoints"):
                stored = int(job["stored_checkpoints"][-1]["unix_ms"])
                cluster.ctl("stop", job_id)
                return (stored - reported) / 1e3
            if not live and job["state"] in ("SUCCEEDED", "FAILED"):
                if job["state"] != "SUCCEEDED" or not job.get("stored_checkpoints"):
                    raise RuntimeError(f"job {job_id} {job['state']}: {job.get('reason')}")
                # The rank exits right after it prints: its exit is within a few ms of the stamp.
                return (int(job["end_unix_ms"]) - reported) / 1e3
        time.sleep(0.1)
    raise RuntimeError(f"job {job_id} did not finish in time")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=500)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    finals, uploads = [], []
    with tempfile.TemporaryDirectory(prefix="final-wait-") as scratch, LocalCluster(scratch, 2) as cluster:
        folder = os.path.join(scratch, "job")
        os.makedirs(folder)
        with open(os.path.join(folder, "rank.py"), "w") as f:
            f.write(RANK)
        for _ in range(args.runs):  # interleaved: a slow spell of the machine hits both alike
            finals.append(run_job(cluster, folder, args.mib, live=False))
            uploads.append(run_job(cluster, folder, args.mib, live=True))
    final, upload = statistics.median(finals), statistics.median(uploads)
    print(f"final_wait {args.mib} MiB, {args.runs} runs, {datetime.date.today()}, {platform.node()} "
          f"({os.cpu_count()} cores)")
    print("| figure | median s | runs (s) |")
    print("| --- | --- | --- |")
    print(f"| rank 0's exit to SUCCEEDED (the final wait) | {final:.2f} | {', '.join(f'{x:.2f}' for x in finals)} |")
    print(f"| baseline: the same upload at full speed, rank living | {upload:.2f} | "
          f"{', '.join(f'{x:.2f}' for x in uploads)} |")
    print(f"| ratio final / baseline | {final / upload:.2f} | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
