"""The start benchmark's training script: its function's first line writes the time (CLOCK_REALTIME, ns) to
OUT/rank-R, with when its process was exec'd, so the same script can be started three ways and timed to it:

  start_job.py fit N OUT RESULTS  a user's script: TorchTrainer(train_func, N workers).fit() against
                              $CLUSTER_ADDRESS; writes OUT/fit-call (ns, right before fit()) and OUT/fit-return
  start_job.py rank OUT       one rank, as torchrun or a plain start runs it: RANK, WORLD_SIZE,
                              MASTER_ADDR, MASTER_PORT from the environment, a Gloo process group, then train_func
"""

import os
import sys
import time


def exec_ns():
    """When this process was exec'd (CLOCK_REALTIME ns, to the kernel's 10 ms clock tick): /proc/self/stat's
    start time, in ticks since boot, set against CLOCK_BOOTTIME now."""
    with open("/proc/self/stat") as f:
        start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
    age = time.clock_gettime(time.CLOCK_BOOTTIME) - start_ticks / os.sysconf("SC_CLK_TCK")
    return time.time_ns() - int(age * 1e9)


def train_func(config):
    first = time.time_ns()  # the function's first line: what every start is timed to
    rank = int(os.environ.get("RANK", "0"))
    out = config["out_dir"]
    tmp = os.path.join(out, f".rank-{rank}.tmp")
    with open(tmp, "w") as f:
        f.write(f"{first} {exec_ns()}\n")
    os.rename(tmp, os.path.join(out, f"rank-{rank}"))


def write_stamp(path, ns):
    with open(path + ".tmp", "w") as f:
        f.write(f"{ns}\n")
    os.rename(path + ".tmp", path)


def main():
    mode = sys.argv[1]
    if mode == "rank":
        import torch.distributed as dist
        dist.init_process_group("gloo", init_method="env://")
        try:
            train_func({"out_dir": sys.argv[2]})
        finally:
            dist.destroy_process_group()
        return
    import clusterd
    from clusterd.train import RunConfig, ScalingConfig
    from clusterd.train.torch import TorchTrainer
    n, out, results = int(sys.argv[2]), sys.argv[3], sys.argv[4]
    clusterd.init()
    trainer = TorchTrainer(train_func, train_loop_config={"out_dir": out},
                           scaling_config=ScalingConfig(num_workers=n),
                           run_config=RunConfig(name=f"start-{n}", storage_path=results, verbose=0))
    call = time.time_ns()
    result = trainer.fit()
    write_stamp(os.path.join(out, "fit-return"), time.time_ns())
    write_stamp(os.path.join(out, "fit-call"), call)
    print(f"job {result.job_id}", flush=True)


if __name__ == "__main__":
    main()
