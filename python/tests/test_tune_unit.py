"""clusterd.tune without a cluster: a Ray param_space, TuneConfig and ASHAScheduler as the head's tune: section,
the values a rank gets back, the ResultGrid's choices, and one clear error for each bad input."""

from __future__ import annotations

import base64
import json
import math
import os
import subprocess

import pytest

from local_cluster import binaries

_, CLUSTERCTL = binaries()

from clusterd import train, tune
from clusterd._worker import apply_params
from clusterd.train import RunConfig, ScalingConfig
from clusterd.tune._result_grid import Result, ResultGrid
from clusterd.tune._trainable import TrialFunction
from clusterd.tune._tuner import best_params_yaml, trials_csv
from clusterd.tune.schedulers import ASHAScheduler, AsyncHyperBandScheduler, FIFOScheduler
from clusterd.tune.search import BasicVariantGenerator

SEEN = []  # what a shipped trainable was called with (the trainable below is pickled by reference)


def trainable(config):
    SEEN.append(config)


def make_tuner(param_space=None, tmp_path=None, trainable_fn=trainable, **tune_kwargs):
    tune_kwargs.setdefault("metric", "score")
    tune_kwargs.setdefault("mode", "max")
    return tune.Tuner(trainable_fn, param_space=param_space or {},
                      tune_config=tune.TuneConfig(**tune_kwargs),
                      run_config=RunConfig(name="unit", storage_path=str(tmp_path) if tmp_path else None))


def shipped(job):
    """The function and config a rank unpickles from the job."""
    import cloudpickle
    meta = job["config"]["__clusterd__"]
    return meta, cloudpickle.loads(base64.b64decode(meta["payload"]))


def test_param_space_becomes_the_heads_search_space_with_constants_shipped():
    tuner = make_tuner({
        "lr": tune.loguniform(1e-4, 1e-1),
        "momentum": tune.uniform(0.1, 0.9),
        "layers": tune.randint(1, 4),
        "optimizer": tune.choice(["adam", "sgd"]),
        "batch": tune.grid_search([32, 64]),
        "model": {"width": tune.grid_search([128, 256, 512]), "act": "relu"},
        "epochs": 3,
    }, num_samples=2, max_concurrent_trials=3, seed=11)
    job = tuner.job()
    spec = job["tune"]
    assert spec["search_space"] == {
        "lr": {"loguniform": [1e-4, 1e-1]},
        "momentum": {"uniform": [0.1, 0.9]},
        "layers": {"randint": [1, 4]},
        "optimizer": {"choice": ["adam", "sgd"]},
        "batch": {"grid": [32, 64]},
        "model/width": {"grid": [128, 256, 512]},
    }
    assert (spec["metric"], spec["mode"], spec["num_samples"], spec["max_concurrent"], spec["seed"]) == \
        ("score", "max", 2, 3, 11)
    assert "scheduler" not in spec and "stop" not in spec and "best_params" not in spec
    meta, payload = shipped(job)
    assert meta["kind"] == "function"
    assert meta["param_paths"]["model/width"] == ["model", "width"]
    assert meta["param_paths"]["lr"] == ["lr"]
    # Constants travel in the shipped config; a search space's place is kept for its value.
    assert payload["config"] == {"lr": None, "momentum": None, "layers": None, "optimizer": None, "batch": None,
                                 "model": {"width": None, "act": "relu"}, "epochs": 3}
    assert tuner.space.trial_count(2) == 2 * 2 * 3
    assert job["num_workers"] == 1 and job["resources_per_worker"] == {"CPU": 1}


def test_a_rank_gets_the_trials_values_in_the_nested_config_lists_and_none_included():
    tuner = make_tuner({"model": {"layers": tune.choice([[64, 64], [128], None]), "act": "relu"},
                        "opt": tune.grid_search([{"name": "sgd", "momentum": 0.9}, {"name": "adam"}]),
                        "lr": tune.uniform(0.0, 1.0)})
    job = tuner.job()
    # Values that are not JSON scalars are drawn by the head as their index.
    assert job["tune"]["search_space"]["model/layers"] == {"choice": [0, 1, 2]}
    assert job["tune"]["search_space"]["opt"] == {"grid": [0, 1]}
    meta, payload = shipped(job)
    # What the head merges over the job's config for one trial, as clusterd._worker applies it.
    trial_params = {"model/layers": 1, "opt": 0, "lr": 0.25}
    config = apply_params(payload["config"], trial_params, meta["param_paths"])
    SEEN.clear()
    payload["fn"](config)
    assert SEEN == [{"model": {"layers": [128], "act": "relu"}, "opt": {"name": "sgd", "momentum": 0.9}, "lr": 0.25}]
    # The client rebuilds the same config from the head's record of the trial (JSON text by name).
    params_json = {name: json.dumps(value) for name, value in trial_params.items()}
    assert tuner.space.config_of(params_json) == SEEN[0]
    params_json["model/layers"] = "2"
    assert tuner.space.config_of(params_json)["model"]["layers"] is None


def test_a_trainable_that_takes_no_config_and_one_that_returns_its_result(monkeypatch):
    calls = []
    monkeypatch.setattr(train._session, "report", lambda metrics, checkpoint=None: calls.append(metrics))
    assert TrialFunction(lambda: 5, {}, report_return=True)({"x": 1}) == 5
    assert TrialFunction(lambda config: {"score": config["x"]}, {}, report_return=True)({"x": 2}) == {"score": 2}
    assert calls == [{"score": 2}]


def test_asha_maps_to_the_heads_scheduler_with_rays_defaults():
    default = ASHAScheduler()
    assert default.asha() == {"asha": {"time_attr": "training_iteration", "max_t": 100, "grace_period": 1,
                                       "reduction_factor": 4}}
    tuner = make_tuner({"x": tune.uniform(0, 1)}, metric=None, mode=None,
                       scheduler=ASHAScheduler(metric="loss", mode="min", max_t=8, grace_period=2, reduction_factor=3))
    spec = tuner.job()["tune"]
    assert spec["scheduler"] == {"asha": {"time_attr": "training_iteration", "max_t": 8, "grace_period": 2,
                                          "reduction_factor": 3}}
    assert (spec["metric"], spec["mode"]) == ("loss", "min")
    assert AsyncHyperBandScheduler is ASHAScheduler
    assert "scheduler" not in make_tuner({}, scheduler=FIFOScheduler()).job()["tune"]
    # time_attr may be a metric the trials report (the head's ASHA counts in it).
    assert ASHAScheduler(time_attr="epoch").asha()["asha"]["time_attr"] == "epoch"


@pytest.mark.parametrize("kwargs, message", [
    ({"brackets": 3}, "brackets=3 is not offered"),
    ({"time_attr": "time_total_s"}, "time_attr 'time_total_s' is not offered"),
    ({"max_t": 2, "grace_period": 4}, r"max_t \(2\) must be at least grace_period \(4\)"),
    ({"reduction_factor": 1}, "reduction_factor must be a number above 1"),
    ({"grace_period": 0}, "grace_period must be a number above 0"),
    ({"mode": "maximize"}, "mode must be 'max' or 'min'"),
])
def test_asha_settings_the_head_cannot_run_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ASHAScheduler(**kwargs)


def test_metric_and_mode_come_from_tune_config_or_the_scheduler_and_must_agree():
    with pytest.raises(ValueError, match="no metric to optimise"):
        make_tuner({}, metric=None, mode=None)
    with pytest.raises(ValueError, match="has no mode"):
        make_tuner({}, metric="score", mode=None)
    with pytest.raises(ValueError, match="the scheduler was made with metric='loss'"):
        make_tuner({}, metric="score", mode="max", scheduler=ASHAScheduler(metric="loss", mode="max"))
    spec = make_tuner({}, metric="score", mode=None, scheduler=ASHAScheduler(mode="min")).job()["tune"]
    assert (spec["metric"], spec["mode"]) == ("score", "min")
    with pytest.raises(ValueError, match="scheduler HyperBandScheduler is not offered"):
        class HyperBandScheduler:
            pass
        make_tuner({}, scheduler=HyperBandScheduler())


def test_search_alg_basic_variant_seeds_the_sweep_others_are_refused():
    spec = make_tuner({"x": tune.uniform(0, 1)}, search_alg=BasicVariantGenerator(random_state=5,
                                                                                 max_concurrent=2)).job()["tune"]
    assert spec["seed"] == 5 and spec["max_concurrent"] == 2

    class OptunaSearch:
        pass
    with pytest.raises(ValueError, match="search_alg OptunaSearch is not offered"):
        make_tuner({}, search_alg=OptunaSearch())
    with pytest.raises(ValueError, match="set one of them"):
        make_tuner({}, seed=1, search_alg=BasicVariantGenerator(random_state=2))
    # Unseeded, each Tuner draws afresh (as Ray's).
    seeds = {make_tuner({"x": tune.uniform(0, 1)}).job()["tune"]["seed"] for _ in range(5)}
    assert len(seeds) > 1


def test_stop_criteria_come_from_run_config():
    tuner = tune.Tuner(trainable, param_space={}, tune_config=tune.TuneConfig(metric="acc", mode="max"),
                       run_config=RunConfig(stop={"acc": 0.95, "training_iteration": 10}))
    assert tuner.job()["tune"]["stop"] == {"acc": 0.95, "training_iteration": 10.0}
    with pytest.raises(ValueError, match="stop must be a dict"):
        tune.Tuner(trainable, tune_config=tune.TuneConfig(metric="acc", mode="max"),
                   run_config=RunConfig(stop=lambda trial_id, result: False))


def test_with_resources_sets_what_each_trial_takes():
    job = tune.Tuner(tune.with_resources(trainable, {"CPU": 2, "GPU": 1}),
                     tune_config=tune.TuneConfig(metric="s", mode="max")).job()
    assert job["resources_per_worker"] == {"CPU": 2, "GPU": 1} and job["env"]["CLUSTERD_USE_GPU"] == "1"
    job = tune.Tuner(tune.with_resources(trainable, ScalingConfig(resources_per_worker={"CPU": 3})),
                     tune_config=tune.TuneConfig(metric="s", mode="max")).job()
    assert job["resources_per_worker"] == {"CPU": 3} and job["num_workers"] == 1
    with pytest.raises(ValueError, match="a function trainable runs as one process"):
        tune.Tuner(tune.with_resources(trainable, {"num_workers": 2}), tune_config=tune.TuneConfig(metric="s", mode="max"))
    with pytest.raises(ValueError, match="give at least one resource"):
        tune.with_resources(trainable, {})
    with pytest.raises(ValueError, match="CPU must be a number >= 0"):
        tune.with_resources(trainable, {"CPU": -1})
    with pytest.raises(TypeError, match="resources per config"):
        tune.with_resources(trainable, lambda config: {"CPU": 1})


def test_a_torch_trainer_is_a_trainable_with_its_train_loop_config_searched(tmp_path):
    from clusterd.train.torch import TorchTrainer
    trainer = TorchTrainer(trainable, train_loop_config={"epochs": 5, "lr": 0.1, "nested": {"a": 1}},
                           scaling_config=ScalingConfig(num_workers=2))
    tuner = tune.Tuner(trainer, param_space={"train_loop_config": {"lr": tune.loguniform(1e-3, 1e-1),
                                                                   "nested": {"b": tune.grid_search([1, 2])}}},
                       tune_config=tune.TuneConfig(metric="loss", mode="min", num_samples=3))
    job = tuner.job()
    assert job["num_workers"] == 2
    assert job["tune"]["search_space"] == {"lr": {"loguniform": [1e-3, 1e-1]}, "nested/b": {"grid": [1, 2]}}
    meta, payload = shipped(job)
    assert meta["kind"] == "trainer"
    assert meta["param_paths"] == {"lr": ["lr"], "nested/b": ["nested", "b"]}
    # param_space's train_loop_config is merged over the trainer's, as Ray merges it.
    assert payload["config"] == {"epochs": 5, "lr": None, "nested": {"a": 1, "b": None}}
    # A Result's config has the param_space's shape, as in Ray.
    assert tuner.space.config_of({"lr": "0.01", "nested/b": "2"}) == {"train_loop_config": {"lr": 0.01,
                                                                                          "nested": {"b": 2}}}
    # A constant ScalingConfig in the param_space, and with_resources, give the gang's size.
    job = tune.Tuner(trainer, param_space={"scaling_config": ScalingConfig(num_workers=3)},
                     tune_config=tune.TuneConfig(metric="loss", mode="min")).job()
    assert job["num_workers"] == 3
    job = tune.Tuner(tune.with_resources(trainer, {"num_workers": 4, "resources_per_worker": {"CPU": 2}}),
                     tune_config=tune.TuneConfig(metric="loss", mode="min")).job()
    assert job["num_workers"] == 4 and job["resources_per_worker"] == {"CPU": 2}
    with pytest.raises(ValueError, match="put it under 'train_loop_config'"):
        tune.Tuner(trainer, param_space={"scaling_config": {"num_workers": tune.grid_search([1, 2])}},
                   tune_config=tune.TuneConfig(metric="loss", mode="min"))
    with pytest.raises(ValueError, match="param_space key 'lr' is not offered for a TorchTrainer"):
        tune.Tuner(trainer, param_space={"lr": tune.uniform(0, 1)}, tune_config=tune.TuneConfig(metric="l", mode="min"))


@pytest.mark.parametrize("make, error, message", [
    (lambda: tune.uniform(1, 0), ValueError, "lower must be below upper"),
    (lambda: tune.loguniform(0, 1), ValueError, "lower must be above 0"),
    (lambda: tune.randint(1.5, 3), TypeError, "lower must be an integer"),
    (lambda: tune.choice([]), ValueError, "at least one value"),
    (lambda: tune.choice("abc"), TypeError, "takes a list"),
    (lambda: tune.grid_search([]), ValueError, "at least one value"),
    (lambda: tune.uniform(0, float("inf")), TypeError, "upper must be a finite number"),
    (lambda: tune.TuneConfig(num_samples=-1), ValueError, "num_samples must be an int >= 1"),
    (lambda: tune.TuneConfig(mode="best"), ValueError, "mode must be 'max' or 'min'"),
    (lambda: tune.TuneConfig(time_budget_s=60), ValueError, "time_budget_s is not offered"),
    (lambda: tune.TuneConfig(max_concurrent_trials=-2), ValueError, "max_concurrent_trials must be"),
    (lambda: make_tuner({"x": [tune.uniform(0, 1)]}), ValueError, "search spaces inside a list are not offered"),
    (lambda: make_tuner({"a b": tune.uniform(0, 1)}), ValueError, "the key 'a b' cannot name a sweep parameter"),
    (lambda: make_tuner({1: tune.uniform(0, 1)}), TypeError, "param_space keys are strings"),
    (lambda: make_tuner([1, 2]), TypeError, "param_space must be a dict"),
    (lambda: make_tuner({"x": tune.grid_search(list(range(101)))}, num_samples=100), ValueError,
     "10100 trials"),
    (lambda: tune.Tuner(tune.Tuner, tune_config=tune.TuneConfig(metric="s", mode="max")), TypeError,
     "class Trainables are not offered"),
    (lambda: tune.Tuner("my_trainable", tune_config=tune.TuneConfig(metric="s", mode="max")), TypeError,
     "registered name"),
    (lambda: tune.Tuner(trainable, tune_config=tune.TuneConfig(metric="s", mode="max"),
                        run_config=RunConfig(name="a/b")), ValueError, "may not contain '/'"),
])
def test_bad_input_gets_one_clear_error(make, error, message):
    with pytest.raises(error, match=message) as caught:
        make()
    assert "\n" not in str(caught.value)


def test_a_function_cloudpickle_cannot_ship_is_named():
    import threading
    lock = threading.Lock()

    def holds_a_lock(config):
        return lock
    with pytest.raises(TypeError, match="trainable 'holds_a_lock' cannot be shipped to the ranks"):
        make_tuner({}, trainable_fn=holds_a_lock)


def test_report_and_checkpoints_are_train_s_own():
    assert tune.report is train.report
    assert tune.get_checkpoint is train.get_checkpoint
    assert tune.Checkpoint is train.Checkpoint
    assert tune.get_context is train.get_context


@pytest.mark.skipif(not os.access(CLUSTERCTL, os.X_OK), reason="no clusterctl build (set CLUSTERD_BUILD)")
def test_the_heads_own_parser_accepts_the_sweep(tmp_path):
    job = make_tuner({"lr": tune.loguniform(1e-4, 1e-1), "opt": tune.choice(["adam", True, 1.5, 3]),
                      "model": {"w": tune.grid_search([[1], [2]])}, "k": 1},
                     scheduler=ASHAScheduler(max_t=4, grace_period=1, reduction_factor=2), num_samples=2,
                     seed=3).job()
    path = tmp_path / "sweep.yaml"
    path.write_text(json.dumps(job))
    done = subprocess.run([CLUSTERCTL, "validate", str(path), "--json"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    spec = json.loads(done.stdout)["tune"]
    dims = {d["name"]: d for d in spec["search_space"]}
    assert list(dims) == ["lr", "opt", "model/w"]
    assert dims["lr"]["distribution"] == "loguniform" and (dims["lr"]["low"], dims["lr"]["high"]) == (1e-4, 1e-1)
    assert dims["opt"]["values_json"] == ['"adam"', "true", "1.5", "3"]
    assert dims["model/w"]["distribution"] == "grid" and dims["model/w"]["values_json"] == ["0", "1"]
    assert spec["asha"] == {"time_attr": "training_iteration", "max_t": 4, "grace_period": 1, "reduction_factor": 2}
    assert spec["metric"] == "score" and spec["mode_min"] is False and int(spec["seed"]) == 3


def result(index, rows, state="TRIAL_DONE", config=None, error=None):
    metrics = dict(rows[-1]) if rows else None
    return Result(metrics=metrics, checkpoint=None, error=error, path=f"/r/t{index}", job_id=f"job-{index}",
                  config=config or {"x": index}, rows=rows, trial_index=index, trial_state=state)


def test_get_best_result_by_the_last_value_or_another_scope():
    a = result(0, [{"acc": 0.9, "training_iteration": 1}, {"acc": 0.5, "training_iteration": 2}])
    b = result(1, [{"acc": 0.6, "training_iteration": 1}, {"acc": 0.7, "training_iteration": 2}],
               state="TRIAL_EARLY_STOPPED")
    c = result(2, [{"acc": 0.99, "training_iteration": 1}], state="TRIAL_FAILED", error=RuntimeError("boom"))
    d = result(3, [{"acc": float("nan"), "training_iteration": 1}])
    e = result(4, [], state="TRIAL_CANCELLED", error=RuntimeError("cancelled"))
    grid = ResultGrid([a, b, c, d, e], experiment_path="/r", sweep_id="sweep-1", metric="acc", mode="max")
    assert len(grid) == 5 and grid[1] is b and list(grid) == [a, b, c, d, e]
    assert grid.get_best_result() is b                    # Ray's scope "last"; a failed trial is never best
    assert grid.get_best_result(scope="all") is a
    assert grid.get_best_result(scope="avg") is a         # 0.7 vs 0.65
    assert grid.get_best_result(mode="min") is a          # mode alone for the Tuner's metric
    assert grid.get_best_result("training_iteration", "min") is d
    assert grid.num_errors == 2 and grid.num_terminated == 3
    assert b.status == "TERMINATED" and b.early_stopped and c.status == "ERROR"
    # The head's best trial is what best_params.yaml holds: it wins for the Tuner's own objective.
    grid = ResultGrid([a, b], experiment_path="/r", sweep_id="s", metric="acc", mode="max", best_index=0)
    assert grid.get_best_result() is a and grid.get_best_result(scope="last-5-avg") is a
    with pytest.raises(ValueError, match="No metric is provided"):
        ResultGrid([a], experiment_path="/r", sweep_id="s", metric=None, mode=None).get_best_result()
    with pytest.raises(ValueError, match="No mode is provided"):
        grid.get_best_result(metric="loss")
    with pytest.raises(RuntimeError, match="no trial has reported this metric"):
        grid.get_best_result(metric="loss", mode="min")
    with pytest.raises(ValueError, match="scope must be one of"):
        grid.get_best_result(scope="best")


def test_get_dataframe_has_a_row_per_trial_with_config_columns():
    a = result(0, [{"acc": 0.9, "training_iteration": 1}, {"acc": 0.5, "training_iteration": 2}],
               config={"lr": 0.1, "model": {"w": 4}})
    b = result(1, [{"acc": 0.6, "training_iteration": 1}], config={"lr": 0.2, "model": {"w": 8}})
    grid = ResultGrid([a, b], experiment_path="/r", sweep_id="s", metric="acc", mode="max")
    frame = grid.get_dataframe()
    rows = frame.to_dict("records") if hasattr(frame, "to_dict") else frame
    assert [r["acc"] for r in rows] == [0.5, 0.6]
    assert [r["config/model/w"] for r in rows] == [4, 8] and rows[0]["config/lr"] == 0.1
    assert rows[0]["trial_id"] == "job-0" and rows[0]["logdir"] == "/r/t0"
    frame = grid.get_dataframe(filter_metric="acc", filter_mode="max")
    rows = frame.to_dict("records") if hasattr(frame, "to_dict") else frame
    assert [r["acc"] for r in rows] == [0.9, 0.6]


def test_best_params_and_trials_csv_are_written_as_clusterctl_writes_them():
    sweep = {"sweep_id": "sweep-1", "best_trial": 1,
             "spec": {"tune": {"metric": "acc", "search_space": [{"name": "lr"}, {"name": "opt"}]}},
             "trials": [
                 {"index": 0, "job_id": "job-1", "params": {"lr": "0.1", "opt": "\"sgd\""}, "state": "TRIAL_EARLY_STOPPED",
                  "iterations": "1", "has_metric": True, "metric": 0.5, "reason": "early-stopped by ASHA, at rung 0"},
                 {"index": 1, "job_id": "job-2", "params": {"lr": "0.01", "opt": "\"adam\""}, "state": "TRIAL_DONE",
                  "iterations": "4", "has_metric": True, "metric": 0.9, "reason": ""}]}
    assert best_params_yaml(sweep) == 'lr: 0.01\nopt: "adam"\n'
    lines = trials_csv(sweep).splitlines()
    assert lines[0] == "trial,job_id,state,lr,opt,iterations,acc,reason"
    assert lines[1] == '0,job-1,EARLY_STOPPED,0.1,sgd,1,0.5,"early-stopped by ASHA, at rung 0"'
    assert best_params_yaml(dict(sweep, best_trial=-1)) == ""


def test_sampling_here_stays_in_the_domain():
    import random
    rng = random.Random(0)
    assert all(1e-4 <= tune.loguniform(1e-4, 1e-1).sample(rng) < 1e-1 for _ in range(100))
    assert {tune.randint(0, 3).sample(rng) for _ in range(100)} == {0, 1, 2}
    assert tune.grid_search([1, 2]) == {"grid_search": [1, 2]}
    assert not math.isnan(tune.uniform(-1, 1).sample(rng))


def test_with_parameters_binds_a_function_trainables_arguments():
    from clusterd import tune

    def trainable(config, data=None, scale=1):
        return {"score": config["x"] * scale + len(data)}

    bound = tune.with_parameters(trainable, data=[1, 2, 3], scale=10)
    assert bound({"x": 2}) == {"score": 23}
    assert bound.__name__ == "trainable"
    with pytest.raises(TypeError, match="class trainables are not offered"):
        tune.with_parameters(dict, data=1)
