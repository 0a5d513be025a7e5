"""The tune benchmark's script: a Ray Tune sweep with clusterd.tune, under ASHA or with no scheduler.

The trainable is synthetic: each iteration sleeps EPOCH_S (the "epoch", no CPU, so the 2 cores do not set
the wall time) and reports an accuracy on a learning curve set by its config: final accuracy peaks at
lr = 1e-2 and falls with the square of log10(lr) away from it, momentum speeds learning up, and a small fixed
wobble per trial and iteration makes neighbours cross. Early ranks mostly predict final ones, which is what
ASHA's rule needs to save time (bench/tune's analysis).

  tune_job.py OUT LABEL asha|none SAMPLES MAX_T RF EPOCH_S SLOTS RESULTS
writes OUT/tune-LABEL.json: the fit() call's wall time, the sweep's, the best accuracy and trial, epochs run.
"""

import json
import math
import os
import sys
import time


def accuracy(lr, momentum, t, index_seed):
    final = 92.0 - 9.0 * (math.log10(lr) + 2.0) ** 2
    speed = 0.15 + 0.5 * momentum
    wobble = 0.6 * math.sin(7.3 * index_seed + 1.7 * t)
    return max(0.0, final * (1.0 - math.exp(-speed * t)) + wobble)


def trainable(config):
    from clusterd import tune
    seed = config["lr"] * 1e4 + config["momentum"]
    for t in range(1, config["max_t"] + 1):
        time.sleep(config["epoch_s"])
        tune.report({"accuracy": accuracy(config["lr"], config["momentum"], t, seed)})


def main():
    import clusterd
    from clusterd import tune
    from clusterd.tune.schedulers import ASHAScheduler
    out, label, scheduler, samples, max_t, rf, epoch_s, slots, results = sys.argv[1:10]
    clusterd.init()
    sched = ASHAScheduler(max_t=int(max_t), grace_period=1, reduction_factor=float(rf)) if scheduler == "asha" else None
    tuner = tune.Tuner(
        tune.with_resources(trainable, {"CPU": 1}),
        param_space={"lr": tune.loguniform(1e-4, 1e-1), "momentum": tune.uniform(0.0, 0.99),
                     "max_t": int(max_t), "epoch_s": float(epoch_s)},
        tune_config=tune.TuneConfig(metric="accuracy", mode="max", num_samples=int(samples), scheduler=sched,
                                    max_concurrent_trials=int(slots), seed=7),
        run_config=tune.RunConfig(name=f"tune-{label}", storage_path=results, verbose=0))
    t0 = time.time()
    grid = tuner.fit()
    wall = time.time() - t0
    best = grid.get_best_result()
    sweep = grid.sweep if hasattr(grid, "sweep") else {}
    record = {"fit_s": wall, "best": best.metrics["accuracy"], "best_config": {k: best.config[k] for k in ("lr", "momentum")},
              "epochs": sum(int(t.get("iterations", 0)) for t in sweep.get("trials", [])),
              "stopped_early": sum(1 for t in sweep.get("trials", []) if t.get("state") == "TRIAL_EARLY_STOPPED"),
              "trials": len(sweep.get("trials", [])),
              "sweep_s": (int(sweep.get("end_unix_ms", 0)) - int(sweep.get("submit_unix_ms", 0))) / 1000.0,
              "errors": sum(1 for r in grid if r.error is not None)}
    path = os.path.join(out, f"tune-{label}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(record, f)
    os.rename(path + ".tmp", path)


if __name__ == "__main__":
    main()
