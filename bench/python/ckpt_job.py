"""The checkpoint benchmark's training script: one rank (TorchTrainer, 1 worker) stepping a fixed matmul on one
thread in blocks, each opened by a report. Blocks alternate: in one the report carries a MIB MiB checkpoint,
which the script saves with torch.save into a temporary folder deleted right after report() returns (Ray's
pattern), and the block lasts STEPS steps or until the head has logged it stored, whichever is longer; the next
block's report carries only the metrics, and it runs as many steps. So the same training with and without
checkpoints is interleaved within one run, a few seconds at a time, and the machine's drift cancels. Every step's start and end, and each block's save and report, go to OUT/steps-LABEL.json
(CLOCK_REALTIME ns, to line up with the head's log).

Then the same rank times ways of getting one such folder into CLUSTER_CHECKPOINT_DIR (report()'s
shutil.copytree, copy_file_range, hard links), for the report's proposal.

  ckpt_job.py OUT LABEL MIB PAIRS STEPS RESULTS
"""

import json
import os
import shutil
import sys
import time

MATMUL = 300  # ~9 ms of one core here, as bench/checkpoints' ckpt_rank step


def copy_ways(source, folder, repeats):
    """ms of each way of putting ``source`` (a checkpoint folder) into ``folder``, ``repeats`` times each."""
    def copytree(dst):
        shutil.copytree(source, dst, symlinks=True)

    def copy_file_range(dst):
        os.mkdir(dst)
        for name in os.listdir(source):
            with open(os.path.join(source, name), "rb") as fi, open(os.path.join(dst, name), "wb") as fo:
                left = os.fstat(fi.fileno()).st_size
                while left > 0:
                    n = os.copy_file_range(fi.fileno(), fo.fileno(), left)
                    if n == 0:
                        break
                    left -= n

    def link(dst):
        os.mkdir(dst)
        for name in os.listdir(source):
            os.link(os.path.join(source, name), os.path.join(dst, name))

    ways = {"copytree": copytree, "copy_file_range": copy_file_range, "link": link}
    times = {name: [] for name in ways}
    for i in range(repeats):
        for name, way in ways.items():
            dst = os.path.join(folder, f".bench-{name}-{i}")
            t0 = time.perf_counter_ns()
            way(dst)
            times[name].append((time.perf_counter_ns() - t0) / 1e6)
            shutil.rmtree(dst)
    return times


class HeadLog:
    """Whether the head has logged a checkpoint of this job stored (the bench's cluster is on this machine)."""

    def __init__(self, folder, job_id):
        self.folder, self.job_id, self.offsets, self.seen = folder, job_id, {}, set()

    def stored(self, name):
        for entry in os.listdir(self.folder):
            if not (entry.startswith("head-") and entry.endswith(".log")):
                continue
            path = os.path.join(self.folder, entry)
            with open(path, errors="replace") as f:
                f.seek(self.offsets.get(path, 0))
                text = f.read()
            cut = text.rfind("\n") + 1
            self.offsets[path] = self.offsets.get(path, 0) + len(text[:cut].encode())
            for line in text[:cut].splitlines():
                if f"job {self.job_id}: stored checkpoint_" in line:
                    self.seen.add(line.split(": stored ", 1)[1].split()[0])
        return name in self.seen


def train_func(config):
    import tempfile
    import torch
    from clusterd import train
    from clusterd.train import Checkpoint
    torch.set_num_threads(1)
    a, b = torch.rand(MATMUL, MATMUL), torch.rand(MATMUL, MATMUL)
    state = {"weights": torch.rand(config["mib"] * (1 << 20) // 4)}
    steps = []

    def run_steps(k):
        for _ in range(k):
            t0 = time.time_ns()
            a @ b
            steps.append((t0, time.time_ns()))

    run_steps(50)  # warm-up, not recorded
    steps.clear()
    blocks = []  # per block: with a checkpoint?, save start, save end (= report start), report end, first step
    head_log = HeadLog(config["head_logs"], os.environ["CLUSTER_JOB_ID"])
    count = config["steps"]
    for block in range(2 * config["pairs"]):
        with_ckpt = block % 2 == 0
        metrics = {"loss": 1.0 / (block + 1), "block": block}
        t0 = time.time_ns()
        if with_ckpt:
            state["weights"].add_(1.0)  # new bytes each time, so the store never has them already
            with tempfile.TemporaryDirectory() as tmp:
                torch.save(state, os.path.join(tmp, "model.pt"))
                t1 = time.time_ns()
                train.report(metrics, checkpoint=Checkpoint.from_directory(tmp))
                t2 = time.time_ns()
        else:
            t1 = t0
            train.report(metrics)
            t2 = time.time_ns()
        blocks.append((with_ckpt, t0, t1, t2, len(steps)))
        first = len(steps)
        if with_ckpt:
            # A block with a checkpoint lasts at least STEPS steps and until the head has logged it stored,
            # so the upload's whole cost falls in its block; the next block, without one, runs as many steps.
            name = os.path.basename(train.get_checkpoint().path)
            run_steps(config["steps"])
            deadline = time.monotonic() + 60
            while not head_log.stored(name) and time.monotonic() < deadline:
                run_steps(10)
            count = len(steps) - first
        else:
            run_steps(count)
    record = {"steps": steps, "blocks": blocks}
    if config.get("copy_repeats"):
        with tempfile.TemporaryDirectory() as tmp:
            torch.save(state, os.path.join(tmp, "model.pt"))
            record["copy_ways"] = copy_ways(tmp, os.environ["CLUSTER_CHECKPOINT_DIR"], config["copy_repeats"])
    path = os.path.join(config["out_dir"], f"steps-{config['label']}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(record, f)
    os.rename(path + ".tmp", path)


def main():
    import clusterd
    from clusterd.train import CheckpointConfig, RunConfig, ScalingConfig
    from clusterd.train.torch import TorchTrainer
    out, label, mib, pairs, steps, results = sys.argv[1:7]
    clusterd.init()
    config = {"out_dir": out, "label": label, "mib": int(mib), "pairs": int(pairs), "steps": int(steps),
              "copy_repeats": 3,
              "head_logs": os.path.join(os.environ["CLUSTER_TEMP_DIR"], "session_latest", "logs")}
    result = TorchTrainer(train_func, train_loop_config=config, scaling_config=ScalingConfig(num_workers=1),
                          run_config=RunConfig(name=f"ckpt-{label}", storage_path=results, verbose=0,
                                               checkpoint_config=CheckpointConfig(num_to_keep=2))).fit()
    print(f"job {result.job_id}", flush=True)


if __name__ == "__main__":
    main()
