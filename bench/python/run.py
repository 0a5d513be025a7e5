#!/usr/bin/python3
"""bench/python: what the Python side of clusterd costs, each figure against a baseline taken in the same run.

  CLUSTERD_BUILD=build /usr/bin/python3 bench/python/run.py [--quick] [--only start,report,checkpoint,tune]

Parts (each on a local cluster of its own: real daemons of $CLUSTERD_BUILD on free loopback ports, in a scratch
folder with its own CLUSTER_TEMP_DIR, always stopped at the end):

- start: TorchTrainer.fit() to the first line of the function on every rank (start_job.py), 2 and 8 ranks,
  against the same script's ranks started by torchrun (``python3 -m torch.distributed.run --standalone
  --redirects 1 --tee 1``, as bench/jobs runs it) and by plain starts (N processes with RANK, WORLD_SIZE,
  MASTER_ADDR/PORT set: python, import torch, the Gloo process group; the floor), trials interleaved.
- report: train.report() of ten metrics in a real rank on its node's agent (report_job.py), p50/p99, against
  ctrain's C++ report() (report_rank.cc) and the bare socket round trip from the same rank, rounds interleaved.
- checkpoint: report() with a 100 MiB checkpoint: rank 0's time per step (steps and report() calls) against
  the same training without checkpoints (runs before and after it), with the copy, the upload window and
  ways of copying broken out (ckpt_job.py).
- tune: an ASHA sweep against the same trials with no scheduler (tune_job.py): 48 trials, max_t 16, rf 4.

Prints one table (metric | value | target | baseline | ratio | result) and how many targets were MISSED;
--quick runs a small version of every part in well under a minute (python/tests/test_bench_smoke.py).
Exit status: 0 when every part ran (missed targets included), 1 when one failed.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _cluster import PYTHON, REPO, LocalCluster, free_port  # noqa: E402

PARTS = ("start", "report", "checkpoint", "tune")


# ---------------------------------------------------------------------------------------------- the table


class Table:
    def __init__(self):
        self.rows = []
        self.missed = 0

    @staticmethod
    def fmt(value, unit):
        if value is None:
            return "-"
        if unit == "%":
            return f"{value:.2f} %"
        if unit == "x":
            return f"{value:.2f} x"
        if unit == "":
            return f"{value:g}" if isinstance(value, int) else f"{value:.2f}"
        if unit == "ms" and value < 1:
            return f"{value:.3f} ms"
        return f"{value:.1f} {unit}" if abs(value) < 1000 else f"{value:.0f} {unit}"

    def add(self, metric, value, unit, *, target=None, baseline=None, baseline_label="", ratio=None):
        """``target``: ("<", bound) or (">=", bound); ``baseline``: a value in ``unit``; ratio value/baseline."""
        if ratio is None and baseline:
            ratio = value / baseline
        result = "info"
        target_text = "-"
        if target is not None:
            op, bound = target
            ok = value < bound if op == "<" else value <= bound if op == "<=" else value >= bound
            result = "pass" if ok else "MISSED"
            self.missed += 0 if ok else 1
            target_text = f"{op} {self.fmt(bound, unit)}"
        base = "-" if baseline is None else f"{self.fmt(baseline, unit)} ({baseline_label})"
        self.rows.append((metric, self.fmt(value, unit), target_text, base,
                          "-" if ratio is None else f"{ratio:.2f}x", result))

    def print(self, out=sys.stdout):
        out.write("| metric | value | target | baseline | ratio | result |\n|---|---|---|---|---|---|\n")
        for row in self.rows:
            out.write("| " + " | ".join(row) + " |\n")
        out.write(f"\n{self.missed} target(s) MISSED\n")
        out.flush()


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def pct(xs, q):
    """The q-th percentile (nearest rank; the largest for a p99 of fewer than 100)."""
    s = sorted(xs)
    k = max(0, min(len(s) - 1, int(-(-q * len(s) // 100)) - 1))
    return s[k]


def mean(xs):
    return sum(xs) / len(xs) if xs else float("nan")


def log(msg):
    print(f"bench/python: {msg}", file=sys.stderr, flush=True)


def job_folder(scratch, *scripts):
    """A folder holding only ``scripts``: the job's working_dir, as a user's project folder would be."""
    folder = tempfile.mkdtemp(prefix="job-", dir=scratch)
    for script in scripts:
        shutil.copy(os.path.join(HERE, script), folder)
    return folder


def run_script(cluster, folder, args, timeout):
    done = subprocess.run([PYTHON, *args], cwd=folder, env=cluster.env, capture_output=True, text=True,
                          timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:2])} exited {done.returncode}: {done.stdout[-1500:]}{done.stderr[-3000:]}")
    return done.stdout


def read_ns(path):
    with open(path) as f:
        return int(f.read().split()[0])


def rank_stamps(out, n, t0):
    """(ms from t0 to the last rank's first line, ms from t0 to the last rank's exec)."""
    firsts, execs = [], []
    for r in range(n):
        with open(os.path.join(out, f"rank-{r}")) as f:
            first, exec_ns = (int(v) for v in f.read().split())
        firsts.append(first)
        execs.append(exec_ns)
    return (max(firsts) - t0) / 1e6, (max(execs) - t0) / 1e6


def wait_files(paths, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(os.path.exists(p) for p in paths):
            return True
        time.sleep(0.002)
    return False


# ---------------------------------------------------------------------------------------------- start


def start_fit(cluster, folder, n, out, results):
    stdout = run_script(cluster, folder, ["start_job.py", "fit", str(n), out, results], timeout=300)
    call = read_ns(os.path.join(out, "fit-call"))
    job_id = stdout.split()[-1]
    return rank_stamps(out, n, call), (read_ns(os.path.join(out, "fit-return")) - call) / 1e6, job_id, call


def start_torchrun(folder, n, out):
    args = [PYTHON, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(n), "--redirects", "1",
            "--tee", "1", "--monitor_interval", "0.1", "start_job.py", "rank", out]
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", OMP_NUM_THREADS="1")
    with open(os.path.join(out, "torchrun.log"), "w") as log_file:
        t0 = time.time_ns()
        proc = subprocess.Popen(args, cwd=folder, env=env, stdout=log_file, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            ok = wait_files([os.path.join(out, f"rank-{r}") for r in range(n)], 120)
            code = proc.wait(timeout=120)
        finally:
            if proc.poll() is None:  # never leave torchrun or its ranks behind
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    if not ok or code != 0:
        with open(os.path.join(out, "torchrun.log")) as f:
            raise RuntimeError(f"torchrun with {n} ranks failed ({code}): {f.read()[-2000:]}")
    return rank_stamps(out, n, t0)


def start_direct(folder, n, out, argv, extra_env=None):
    """N processes started by hand with the torchrun variables: the floor."""
    port = free_port()
    procs = []
    try:
        t0 = time.time_ns()
        for r in range(n):
            env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(n), LOCAL_RANK=str(r), LOCAL_WORLD_SIZE=str(n),
                       MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), PYTHONDONTWRITEBYTECODE="1",
                       OMP_NUM_THREADS="1", **(extra_env or {}))
            procs.append(subprocess.Popen([PYTHON, *argv], cwd=folder, env=env, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL))
        codes = [p.wait(timeout=120) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    if any(codes):
        raise RuntimeError(f"plain start of {n} ranks ({' '.join(argv)}) failed: exit codes {codes}")
    return rank_stamps(out, n, t0)


def part_start(args, scratch, table):
    sizes = [2] if args.quick else [2, 8]
    trials = 1 if args.quick else args.trials
    folder = job_folder(scratch, "start_job.py")
    results = os.path.join(scratch, "results")
    samples = {}
    with LocalCluster(scratch, max(sizes)) as cluster:
        for n in sizes:
            # Warm-up, not counted: the first submit of the folder uploads its package, the first ranks
            # of a size read torch from disk. Its job's config is the shipped function, for the worker row.
            warm_out = tempfile.mkdtemp(dir=scratch)
            _, _, job_id, _ = start_fit(cluster, folder, n, warm_out, results)
            config_file = os.path.join(scratch, f"worker-config-{n}.json")
            with open(config_file, "w") as f:
                f.write(cluster.ctl_json("job", job_id)["spec"]["config_json"])
            s = samples[n] = {k: [] for k in ("fit", "torchrun", "direct", "worker", "fit_return", "submitted")}
            for trial in range(trials):
                out = tempfile.mkdtemp(dir=scratch)
                stamps, ret, job_id, call = start_fit(cluster, folder, n, out, results)
                s["fit"].append(stamps)
                s["fit_return"].append(ret)
                s["submitted"].append(int(cluster.ctl_json("job", job_id)["submit_unix_ms"]) - call / 1e6)
                s["torchrun"].append(start_torchrun(folder, n, tempfile.mkdtemp(dir=scratch)))
                out = tempfile.mkdtemp(dir=scratch)
                s["direct"].append(start_direct(folder, n, out, ["start_job.py", "rank", out]))
                # The shipped function writes where the warm-up's did (its config is in the pickle).
                for stale in glob.glob(os.path.join(warm_out, "rank-*")):
                    os.unlink(stale)
                s["worker"].append(start_direct(folder, n, warm_out, ["-m", "clusterd._worker"],
                                                {"CLUSTER_CONFIG_FILE": config_file,
                                                 "PYTHONPATH": os.path.join(REPO, "python")}))
                log(f"start {n} ranks, trial {trial}: (first line, exec) ms: fit {s['fit'][-1]}, torchrun "
                    f"{s['torchrun'][-1]}, plain {s['direct'][-1]}, plain clusterd._worker {s['worker'][-1]}")
    for n in sizes:
        s = samples[n]
        first = {k: median([v[0] for v in s[k]]) for k in ("fit", "torchrun", "direct", "worker")}
        execd = {k: median([v[1] for v in s[k]]) for k in ("fit", "torchrun", "direct", "worker")}
        inner = {k: median([v[0] - v[1] for v in s[k]]) for k in ("fit", "torchrun", "direct", "worker")}
        fit, tr, floor = first["fit"], first["torchrun"], first["direct"]
        k = f"(n={len(s['fit'])})"
        table.add(f"start: fit() -> first line of every rank, {n} ranks, median {k}", fit, "ms",
                  baseline=tr, baseline_label="torchrun, same script")
        table.add(f"start: clusterd's overhead, {n} ranks: fit() -> first lines, minus the plain start's, median",
                  fit - floor, "ms", target=("<", 300.0), baseline=tr - floor,
                  baseline_label="torchrun's, the same way")
        table.add(f"start: plain start of the {n} ranks -> first lines (python, import torch, Gloo group), median",
                  floor, "ms", baseline=fit, baseline_label="fit()")
        table.add(f"start:   -> every rank's process exec'd (10 ms ticks), {n} ranks: fit(), median", execd["fit"],
                  "ms", baseline=execd["torchrun"], baseline_label="torchrun")
        table.add(f"start:   exec -> first line, last rank, {n} ranks: fit()'s ranks (`-m clusterd._worker`), median",
                  inner["fit"], "ms", baseline=inner["direct"], baseline_label="plain start of the script")
        table.add(f"start:   the same, `-m clusterd._worker` started plainly, {n} ranks, median", inner["worker"],
                  "ms", baseline=inner["direct"], baseline_label="plain start of the script")
        table.add(f"start:   fit() -> job on the head (pickle, clusterctl submit), {n} ranks, median",
                  median(s["submitted"]), "ms")
        table.add(f"start: fit() call -> fit() returns (job done, result read), {n} ranks, median",
                  median(s["fit_return"]), "ms", baseline=fit, baseline_label="fit() -> first lines")


# ---------------------------------------------------------------------------------------------- report


def compile_cc(scratch, name, *sources):
    binary = os.path.join(scratch, name)
    cmd = ["g++", "-O2", "-std=c++17", "-I", os.path.join(REPO, "train", "include"), *sources, "-o", binary]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"compiling {name} failed: {done.stderr[-2000:]}")
    return binary


def part_report(args, scratch, table):
    rounds, n = (2, 100) if args.quick else (5, 400)
    binary = compile_cc(scratch, "report_rank", os.path.join(HERE, "report_rank.cc"),
                        os.path.join(REPO, "train", "report.cc"), os.path.join(REPO, "train", "agent_wire.cc"))
    floor_bin = compile_cc(scratch, "socket_floor", os.path.join(HERE, "socket_floor.cc"))
    folder = job_folder(scratch, "report_job.py")
    out = tempfile.mkdtemp(dir=scratch)
    floor_socket, handoffs_socket = os.path.join(out, "floor.sock"), os.path.join(out, "handoffs.sock")
    floors = []
    try:
        floors.append(subprocess.Popen([floor_bin, floor_socket]))
        floors.append(subprocess.Popen([floor_bin, handoffs_socket, "--handoffs"]))
        if not wait_files([floor_socket, handoffs_socket], 10):
            raise RuntimeError("socket_floor did not start")
        # The report's own cost is measured: no report_rate_per_s holding back a rank that reports without pause.
        with LocalCluster(scratch, 2, flags=["--report-rate-per-s", "0"]) as cluster:
            run_script(cluster, folder, ["report_job.py", out, str(rounds), str(n), binary, floor_socket,
                                         handoffs_socket, os.path.join(scratch, "results")], timeout=600)
    finally:
        for floor in floors:
            floor.terminate()
            floor.wait(timeout=10)
    with open(os.path.join(out, "report.json")) as f:
        lat = {k: [v / 1e6 for v in vs] for k, vs in json.load(f).items()}
    py, cpp, wire, bare = lat["python"], lat["cpp"], lat["wire"], lat["floor"]
    count = f"(n={len(py)}, {rounds} rounds interleaved)"
    table.add(f"report: train.report(), 10 metrics, p50 {count}", median(py), "ms", baseline=median(cpp),
              baseline_label="ctrain::report(), C++, p50")
    table.add("report: train.report(), 10 metrics, p99", pct(py, 99), "ms", target=("<", 1.0), baseline=pct(cpp, 99),
              baseline_label="ctrain::report(), C++, p99")
    table.add("report:   the same report as a ready payload on the agent's socket, p50", median(wire), "ms",
              baseline=median(py), baseline_label="train.report(), p50")
    table.add("report:   the same on the agent's socket, p99", pct(wire, 99), "ms", baseline=pct(py, 99),
              baseline_label="train.report(), p99")
    table.add("report:   the same to a server that only answers (socket_floor), p50", median(bare), "ms",
              baseline=median(wire), baseline_label="the agent, p50")
    table.add("report:   the same to socket_floor, p99", pct(bare, 99), "ms", baseline=pct(wire, 99),
              baseline_label="the agent, p99")
    hops = lat["handoffs"]
    table.add("report:   the same to socket_floor --handoffs (the agent's thread hand-offs, no work), p50",
              median(hops), "ms", baseline=median(wire), baseline_label="the agent, p50")
    table.add("report:   the same to socket_floor --handoffs, p99", pct(hops, 99), "ms", baseline=pct(wire, 99),
              baseline_label="the agent, p99")
    slow = sum(1 for v in py if v > 1.0) / len(py) * 100
    table.add("report: train.report() calls over 1 ms", slow, "%", baseline=sum(1 for v in cpp if v > 1.0) / len(cpp) * 100,
              baseline_label="ctrain's")
    table.add("report: train.report(), max", max(py), "ms", baseline=max(cpp), baseline_label="ctrain, max")


# ---------------------------------------------------------------------------------------------- checkpoint


def stored_times(cluster, job_id):
    """{checkpoint name: unix ns the head logged it stored} for ``job_id``, from the head's log."""
    found = {}
    pattern = re.compile(r"^(\S+)Z I job " + re.escape(job_id) + r": stored (checkpoint_\d+)")
    for path in glob.glob(os.path.join(cluster.env["CLUSTER_TEMP_DIR"], "session_latest", "logs", "*.log")):
        with open(path, errors="replace") as f:
            for line in f:
                m = pattern.match(line)
                if m:
                    stamp = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f")
                    found[m.group(2)] = int(stamp.replace(tzinfo=datetime.timezone.utc).timestamp() * 1e9)
    return found


def part_checkpoint(args, scratch, table):
    mib, pairs, steps = (20, 2, 60) if args.quick else (100, 6, 300)
    folder = job_folder(scratch, "ckpt_job.py")
    out = tempfile.mkdtemp(dir=scratch)
    with LocalCluster(scratch, 2) as cluster:
        stdout = run_script(cluster, folder, ["ckpt_job.py", out, "alt", str(mib), str(pairs), str(steps),
                                              os.path.join(scratch, "results")], timeout=900)
        stored = stored_times(cluster, stdout.split()[-1])
    with open(os.path.join(out, "steps-alt.json")) as f:
        rec = json.load(f)
    all_steps, blocks = rec["steps"], rec["blocks"]
    ends = [b[4] for b in blocks[1:]] + [len(all_steps)]

    def block_ms(i, with_save):
        with_ckpt, t0, t1, t2, first = blocks[i]
        stepping = sum(e - s for s, e in all_steps[first:ends[i]])
        return (stepping + (t2 - t1) + ((t1 - t0) if with_save else 0)) / 1e6

    on = [i for i, b in enumerate(blocks) if b[0]]
    off = [i for i, b in enumerate(blocks) if not b[0]]
    with_ms, without_ms = mean([block_ms(i, False) for i in on]), mean([block_ms(i, False) for i in off])
    per_block = mean([ends[i] - blocks[i][4] for i in on])
    table.add(f"checkpoint: rank 0's time for a block of steps ({per_block:.0f} on average: >= {steps}, until the "
              f"upload is stored) and the report() opening it, with a {mib} MiB checkpoint, mean of {len(on)}",
              with_ms, "ms", baseline=without_ms,
              baseline_label=f"the same without one, blocks interleaved in the same run, mean of {len(off)}")
    table.add(f"checkpoint: what report() with a {mib} MiB checkpoint costs rank 0's training, over without",
              (with_ms / without_ms - 1) * 100, "%", target=("<", 5.0))
    table.add("checkpoint:   the same, the script's own torch.save counted in",
              (mean([block_ms(i, True) for i in on]) / without_ms - 1) * 100, "%")
    reports = [(blocks[i][3] - blocks[i][2]) / 1e6 for i in on]
    plain = [(blocks[i][3] - blocks[i][2]) / 1e6 for i in off]
    table.add(f"checkpoint: report() with a {mib} MiB checkpoint (copied into CLUSTER_CHECKPOINT_DIR), median",
              median(reports), "ms", baseline=median(plain), baseline_label="report() without one")
    saves = [(blocks[i][2] - blocks[i][1]) / 1e6 for i in on]
    table.add(f"checkpoint:   the script's own torch.save of the {mib} MiB into a temporary folder, median",
              median(saves), "ms", baseline=median(reports), baseline_label="report()")
    # ctrain's definition (bench/checkpoints): steps wholly inside an upload (report() returned -> the head
    # logged it stored) against steps touching neither a checkpoint nor an upload (nor 200 ms after one).
    windows, uploads, busy = [], [], []
    for n, i in enumerate(on):
        _, t0, _, t2, _ = blocks[i]
        end = stored.get(f"checkpoint_{n:06d}")
        if end:
            windows.append((t2, end))
            uploads.append((end - t2) / 1e6)
        busy.append((t0, (end or t2) + 200_000_000))
    during = [(e - s) / 1e6 for s, e in all_steps if any(a <= s and e <= b for a, b in windows)]
    quiet = [(e - s) / 1e6 for s, e in all_steps if not any(s < b and e > a for a, b in busy)]
    if during and quiet:
        table.add(f"checkpoint: step time while a checkpoint uploads (ctrain's definition), mean (n={len(during)})",
                  mean(during), "ms", baseline=mean(quiet), baseline_label=f"steps without, same run, n={len(quiet)}")
    if uploads:
        table.add("checkpoint:   upload, report() returned -> stored on the head (upload_rate 100 MiB/s), median",
                  median(uploads), "ms")
    ways = rec.get("copy_ways")
    if ways:
        base_copy = median(ways["copytree"])
        for name, label in (("copytree", "shutil.copytree (what report() does)"),
                            ("copy_file_range", "os.copy_file_range per file"),
                            ("link", "os.link per file (hard links)")):
            table.add(f"checkpoint:   {mib} MiB into CLUSTER_CHECKPOINT_DIR by {label}, median of "
                      f"{len(ways[name])}", median(ways[name]), "ms", baseline=base_copy, baseline_label="copytree")


# ---------------------------------------------------------------------------------------------- tune


def part_tune(args, scratch, table):
    if args.quick:
        samples, max_t, rf, epoch_s, slots = 8, 4, 2, 0.05, 4
    else:
        samples, max_t, rf, epoch_s, slots = 48, 16, 4, 0.25, 8
    folder = job_folder(scratch, "tune_job.py")
    out = tempfile.mkdtemp(dir=scratch)
    with LocalCluster(scratch, slots) as cluster:
        for label in ("asha", "none"):
            run_script(cluster, folder, ["tune_job.py", out, label, label, str(samples), str(max_t), str(rf),
                                         str(epoch_s), str(slots), os.path.join(scratch, "results")], timeout=1800)
    rec = {}
    for label in ("asha", "none"):
        with open(os.path.join(out, f"tune-{label}.json")) as f:
            rec[label] = json.load(f)
    a, b = rec["asha"], rec["none"]
    shape = f"{samples} trials, max_t {max_t}, rf {rf}, {slots} at once, {epoch_s:g} s epochs"
    table.add(f"tune: Tuner.fit() wall time under ASHA, x no scheduler ({shape})", a["fit_s"] / b["fit_s"], "x",
              target=("<=", 0.35))
    table.add("tune:   Tuner.fit() wall time under ASHA", a["fit_s"], "s", baseline=b["fit_s"],
              baseline_label="no scheduler")
    table.add("tune:   the sweep on the head (submit -> end) under ASHA", a["sweep_s"], "s", baseline=b["sweep_s"],
              baseline_label="no scheduler")
    table.add("tune: best accuracy lost to ASHA", b["best"] - a["best"], "points", target=("<", 1.0))
    table.add("tune:   best accuracy under ASHA", a["best"], "points", baseline=b["best"],
              baseline_label="no scheduler")
    table.add("tune:   trial epochs run under ASHA", a["epochs"], "", baseline=b["epochs"],
              baseline_label="no scheduler")
    table.add("tune:   trials stopped early by ASHA", a["stopped_early"], "", baseline=a["trials"],
              baseline_label="trials")
    if a["errors"] or b["errors"]:
        raise RuntimeError(f"tune: trials failed (ASHA {a['errors']}, none {b['errors']})")


# ---------------------------------------------------------------------------------------------- main


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a small version of every part (under a minute)")
    parser.add_argument("--only", default=",".join(PARTS), help="comma-separated parts: " + ",".join(PARTS))
    parser.add_argument("--trials", type=int, default=5, help="start trials per size and way (default 5)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    args = parser.parse_args()
    only = [p for p in args.only.split(",") if p]
    for p in only:
        if p not in PARTS:
            parser.error(f"unknown part {p!r}")
    scratch = tempfile.mkdtemp(prefix="bench-python-")
    table = Table()
    failed = []
    started = time.time()
    try:
        for part in only:
            t0 = time.time()
            try:
                globals()[f"part_{part}"](args, scratch, table)
            except Exception:
                failed.append(part)
                traceback.print_exc()
            log(f"{part}: {time.time() - t0:.1f} s")
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
        else:
            log(f"scratch kept in {scratch}")
    print(f"{os.cpu_count()} cores, {platform.release()}, "
          f"{datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%MZ')}, "
          f"load average {os.getloadavg()[0]:.1f}, {time.time() - started:.0f} s"
          + (", --quick" if args.quick else ""))
    print()
    table.print()
    if failed:
        print(f"parts that failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
