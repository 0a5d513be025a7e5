"""Tuner.fit() against a real local cluster, run as its user runs a script: a sweep of the head whose ASHA stops
the weak trials and whose best result is the known best; a TorchTrainer as the trainable."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap

from local_cluster import PYTHON, REPO

# score(x, iteration) = 10 - |x - 3| + 0.1 * iteration: x = 3 is best at every iteration, so ASHA
# (grace 1, rf 2, max_t 4) may stop any trial but that one, and the best result is x = 3.
# The grid puts weak values first and last so that some meet a rung with a better value recorded.
TUNE_SCRIPT = textwrap.dedent('''
    import json, os, sys, time
    import clusterd
    from clusterd import tune
    from clusterd.tune.schedulers import ASHAScheduler
    from clusterd.train import RunConfig

    def objective(config):
        for i in range(1, 5):
            time.sleep(0.3)
            tune.report({"score": 10 - abs(config["x"] - 3) + 0.1 * i, "width": sum(config["model"]["widths"])})

    if __name__ == "__main__":
        clusterd.init()
        tuner = tune.Tuner(
            objective,
            param_space={"x": tune.grid_search([2, 3, 0, 6, 1, 5]),
                         "model": {"widths": tune.choice([[8, 8], [16]]), "act": "relu"}},
            tune_config=tune.TuneConfig(metric="score", mode="max", max_concurrent_trials=2, seed=4,
                                        scheduler=ASHAScheduler(max_t=4, grace_period=1, reduction_factor=2)),
            run_config=RunConfig(name="asha_sweep", storage_path=sys.argv[1]))
        grid = tuner.fit()
        best = grid.get_best_result()
        print("RESULT " + json.dumps({
            "sweep_id": grid.sweep_id, "experiment_path": grid.experiment_path, "num_errors": grid.num_errors,
            "num_terminated": grid.num_terminated, "len": len(grid),
            "trials": [{"index": r.trial_index, "state": r.trial_state, "reason": r.stop_reason, "config": r.config,
                        "iteration": r.metrics["training_iteration"], "score": r.metrics["score"],
                        "width": r.metrics["width"], "path": r.path} for r in grid],
            "best": {"config": best.config, "score": best.metrics["score"], "index": best.trial_index}}))
''')

TRAINER_SCRIPT = textwrap.dedent('''
    import json, sys
    import clusterd
    from clusterd import train, tune
    from clusterd.train import RunConfig, ScalingConfig
    from clusterd.train.torch import TorchTrainer

    def loop(config):
        import torch.distributed as dist
        for i in range(2):
            train.report({"loss": config["lr"] * (2 - i), "world": dist.get_world_size(), "epochs": config["epochs"]})

    if __name__ == "__main__":
        clusterd.init()
        trainer = TorchTrainer(loop, train_loop_config={"epochs": 2}, scaling_config=ScalingConfig(num_workers=2))
        grid = tune.Tuner(trainer, param_space={"train_loop_config": {"lr": tune.grid_search([0.3, 0.1, 0.2])}},
                          tune_config=tune.TuneConfig(metric="loss", mode="min"),
                          run_config=RunConfig(name="trainer_sweep", storage_path=sys.argv[1], verbose=0)).fit()
        best = grid.get_best_result()
        print("RESULT " + json.dumps({"best": best.config, "metrics": best.metrics, "errors": grid.num_errors,
                                      "len": len(grid)}))
''')


def run_script(cluster, folder, text, results, timeout=120):
    # As a user runs it: Debian's python3, the package from the checkout, the session found by clusterd.init().
    script = folder / "tune_script.py"
    script.write_text(text)
    env = dict(cluster.env, PYTHONPATH=os.path.join(REPO, "python"), PYTHONDONTWRITEBYTECODE="1")
    env.pop("CLUSTER_ADDRESS", None)
    done = subprocess.run([PYTHON, str(script), str(results)], cwd="/", env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, done.stdout + done.stderr
    return json.loads(lines[-1][len("RESULT "):]), done.stdout


def test_a_tuner_with_asha_stops_weak_trials_and_finds_the_known_best(local_cluster, tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    result, stdout = run_script(local_cluster, folder, TUNE_SCRIPT, tmp_path / "results")
    trials = {t["index"]: t for t in result["trials"]}
    assert result["len"] == 6 and result["num_errors"] == 0 and result["num_terminated"] == 6
    # Every trial's config has the param_space's shape, constants and whole lists included.
    assert [trials[i]["config"]["x"] for i in range(6)] == [2, 3, 0, 6, 1, 5]
    assert all(t["config"]["model"]["act"] == "relu" and t["config"]["model"]["widths"] in ([8, 8], [16])
               and t["width"] == 16 for t in trials.values())
    # ASHA stopped some, on the head, saying why; the best ran to max_t.
    stopped = [t for t in trials.values() if t["state"] == "TRIAL_EARLY_STOPPED"]
    assert stopped, trials
    assert all(t["reason"].startswith("early-stopped by ASHA at rung") and t["iteration"] < 4 for t in stopped)
    assert trials[1]["state"] == "TRIAL_DONE" and trials[1]["iteration"] == 4
    assert result["best"]["index"] == 1 and result["best"]["config"]["x"] == 3
    assert abs(result["best"]["score"] - 10.4) < 1e-9
    # best_params.yaml holds the best trial's parameters (as the head names them), beside trials.csv and
    # the trials' folders; nothing was written into the script's folder.
    experiment = tmp_path / "results" / "asha_sweep"
    assert result["experiment_path"] == str(experiment)
    best_params = (experiment / "best_params.yaml").read_text().splitlines()
    assert best_params[0] == "x: 3" and best_params[1].startswith("model/widths: ")
    csv = (experiment / "trials.csv").read_text().splitlines()
    assert csv[0] == "trial,job_id,state,x,model/widths,iterations,score,reason" and len(csv) == 7
    assert all(t["path"].startswith(str(experiment / "asha_sweep-trial-")) for t in trials.values())
    assert sorted(os.listdir(folder)) == ["tune_script.py"]
    # It is the head's sweep, as `clusterctl sweep` shows it, with the same best trial.
    sweep = json.loads(local_cluster.ctl("sweep", result["sweep_id"], "--json").stdout)
    assert sweep["state"] == "SWEEP_SUCCEEDED" and sweep["best_trial"] == 1
    assert "EARLY_STOPPED" in stdout


def test_a_torch_trainer_as_the_trainable_runs_a_gang_per_trial(local_cluster, tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    result, _ = run_script(local_cluster, folder, TRAINER_SCRIPT, tmp_path / "results")
    assert result["len"] == 3 and result["errors"] == 0
    assert result["best"] == {"train_loop_config": {"lr": 0.1}}
    metrics = result["metrics"]
    assert metrics["world"] == 2 and metrics["epochs"] == 2 and metrics["training_iteration"] == 2
    assert abs(metrics["loss"] - 0.1) < 1e-9


FAILING_SCRIPT = textwrap.dedent('''
    import json, sys
    import clusterd
    from clusterd import tune
    from clusterd.train import RunConfig

    def objective(config):
        tune.report({"score": config["x"]})
        if config["x"] == 2:
            raise RuntimeError("x two gives up")
        return {"score": config["x"] + 0.5}     # a returned dict is the trial's last result, as in Ray

    if __name__ == "__main__":
        clusterd.init()
        grid = tune.Tuner(objective, param_space={"x": tune.grid_search([1, 2])},
                          tune_config=tune.TuneConfig(metric="score", mode="max"),
                          run_config=RunConfig(name="failing", storage_path=sys.argv[1], verbose=0)).fit()
        print("RESULT " + json.dumps({
            "errors": [str(e) for e in grid.errors], "num_errors": grid.num_errors,
            "num_terminated": grid.num_terminated, "states": [r.trial_state for r in grid],
            "best": grid.get_best_result().config, "best_score": grid.get_best_result().metrics["score"],
            "error_has_result": grid.errors[0].result is grid[1]}))
''')


def test_a_failed_trial_is_an_error_of_the_grid_not_of_fit(local_cluster, tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    result, _ = run_script(local_cluster, folder, FAILING_SCRIPT, tmp_path / "results")
    assert result["states"] == ["TRIAL_DONE", "TRIAL_FAILED"]
    assert result["num_errors"] == 1 and result["num_terminated"] == 1 and result["error_has_result"]
    assert "FAILED" in result["errors"][0] and "x two gives up" in result["errors"][0]
    # The failed trial reported 2 before it failed, but a failed trial is never best.
    assert result["best"] == {"x": 1} and result["best_score"] == 1.5


MAX_T_SCRIPT = textwrap.dedent('''
    import json, sys
    import clusterd
    from clusterd import tune
    from clusterd.tune.schedulers import ASHAScheduler
    from clusterd.train import RunConfig

    def objective(config):
        # grace_period = max_t: no rung below max_t, so no trial is stopped before it.
        for i in range(10):  # far past max_t, faster than the head stops it
            tune.report({"score": config["x"] + i})

    if __name__ == "__main__":
        clusterd.init()
        grid = tune.Tuner(objective, param_space={"x": tune.grid_search([1, 2])},
                          tune_config=tune.TuneConfig(metric="score", mode="max",
                                                      scheduler=ASHAScheduler(max_t=2, grace_period=2)),
                          run_config=RunConfig(name="max_t", storage_path=sys.argv[1], verbose=0)).fit()
        print("RESULT " + json.dumps([[r.metrics["training_iteration"], r.metrics["score"],
                                       len(r.metrics_dataframe)] for r in grid]))
''')


def test_a_trial_that_reached_max_t_ends_its_result_there(local_cluster, tmp_path):
    result, _ = run_script(local_cluster, tmp_path, MAX_T_SCRIPT, tmp_path / "results")
    # As Ray records it: the last result is at max_t, whatever the trial reported while it was let go.
    assert sorted(result) == [[2, 2.0, 2], [2, 3.0, 2]]
