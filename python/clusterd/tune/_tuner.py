"""Tuner: a Ray Tune experiment as one sweep of the clusterd head.

``fit()`` submits the trainable's job with a ``tune:`` section, exactly what
a job file's sweep is (config/README.md "Sweeps: tune"): the head draws the
trials, runs its ASHA over their reports and journals the sweep, so
``clusterctl sweep SWEEP`` and the dashboard show it as any other. The
Tuner follows the sweep with ``clusterctl sweep SWEEP --json`` and then
reads each trial's job back as a Result.

Where results go: nothing is written into the script's folder (Ray writes
nothing there either). ``clusterctl submit --follow`` would write the
sweep's best_params.yaml and trials.csv under the job's working_dir, which
is the script's folder here, so the Tuner does not follow through
clusterctl; it writes the same two files, from the head's sweep record,
into ``storage_path/name`` beside the trials' folders.
"""

from __future__ import annotations

import copy
import csv
import io
import json
import os
import random
import sys
import time
from typing import Any, Dict, List, Optional, TextIO

from clusterd import _clusterctl, _connection
from clusterd._errors import ClusterdError
from clusterd.train import _job
from clusterd.train._config import RunConfig, ScalingConfig
from clusterd.train._result import TrainingFailedError, last_metrics
from clusterd.tune import _space
from clusterd.tune._config import TuneConfig
from clusterd.tune._result_grid import Result, ResultGrid
from clusterd.tune._schedulers import FIFOScheduler, TrialScheduler
from clusterd.tune._search_alg import BasicVariantGenerator
from clusterd.tune._trainable import TrialFunction, classify

POLL_S = 0.5
HEAD_OUTAGE_S = 120.0  # how long fit() waits for a head that stopped answering
_TRAINER_KEYS = ("train_loop_config", "scaling_config")
_TRIAL_OVER = ("TRIAL_DONE", "TRIAL_EARLY_STOPPED", "TRIAL_FAILED", "TRIAL_CANCELLED")


def _objective(tune_config: TuneConfig) -> tuple:
    """(metric, mode, the scheduler's map or None) from TuneConfig and its scheduler, as Ray resolves them."""
    scheduler = tune_config.scheduler
    if scheduler is not None and not isinstance(scheduler, TrialScheduler):
        raise ValueError(f"TuneConfig: scheduler {type(scheduler).__name__} is not offered; clusterd's head runs "
                         f"ASHAScheduler (AsyncHyperBandScheduler) or none (FIFOScheduler)")
    metric, mode = tune_config.metric, tune_config.mode
    for name, ours, theirs in (("metric", metric, getattr(scheduler, "metric", None)),
                               ("mode", mode, getattr(scheduler, "mode", None))):
        if ours is not None and theirs is not None and ours != theirs:
            raise ValueError(f"TuneConfig: {name}={ours!r} but the scheduler was made with {name}={theirs!r}; "
                             f"set it in one of them only")
    metric = metric or getattr(scheduler, "metric", None)
    mode = mode or getattr(scheduler, "mode", None)
    if not metric:
        raise ValueError("Tuner: no metric to optimise: set TuneConfig(metric=..., mode=...) or "
                         "ASHAScheduler(metric=..., mode=...)")
    if not mode:
        raise ValueError(f"Tuner: metric {metric!r} has no mode: set mode='max' or 'min' on TuneConfig or the scheduler")
    asha = None if scheduler is None or isinstance(scheduler, FIFOScheduler) else scheduler.asha()
    return metric, mode, asha


def _seed_and_limit(tune_config: TuneConfig) -> tuple:
    """(seed, max_concurrent) from TuneConfig and its search_alg."""
    search = tune_config.search_alg
    seed, limit = tune_config.seed, tune_config.max_concurrent_trials or 0
    if search is not None:
        if not isinstance(search, BasicVariantGenerator):
            raise ValueError(f"TuneConfig: search_alg {type(search).__name__} is not offered; clusterd's head draws "
                             f"random values and grids itself (BasicVariantGenerator, the default)")
        if seed is not None and search.random_state is not None and seed != search.random_state:
            raise ValueError(f"TuneConfig: seed={seed} but search_alg has random_state={search.random_state}; "
                             f"set one of them")
        seed = seed if seed is not None else search.random_state
        limit = limit or search.max_concurrent
    if seed is None:
        seed = random.SystemRandom().randrange(2 ** 31)  # each fit() draws afresh, as Ray's does unseeded
    return seed, limit


def _stop_criteria(run_config: RunConfig) -> Dict[str, float]:
    stop = run_config.stop
    if stop is None:
        return {}
    if not isinstance(stop, dict):
        raise ValueError(f"RunConfig: stop must be a dict such as {{'accuracy': 0.95}}; a {type(stop).__name__} "
                         f"(a function or Stopper) is not offered")
    criteria = {}
    for name, bound in stop.items():
        if not isinstance(name, str) or not name or isinstance(bound, bool) or not isinstance(bound, (int, float)):
            raise ValueError(f"RunConfig: stop takes metric names and numbers, got {name!r}: {bound!r}")
        criteria[name] = float(bound)
    return criteria


def _merge(base: Any, over: Dict[str, Any]) -> Dict[str, Any]:
    """``over`` deep-merged over ``base`` (Ray merges a param_space's train_loop_config over the trainer's)."""
    merged = copy.deepcopy(base) if isinstance(base, dict) else {}
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


class Tuner:
    """Runs ``trainable`` once per trial of ``param_space``, as Ray's tune.Tuner, as one sweep of the head.

    ``trainable``: a function taking the config (one process a trial; ``with_resources`` says what it
    takes, one CPU by default) or a TorchTrainer (a gang a trial; param_space is then
    ``{"train_loop_config": {...}}``, merged over the trainer's own, and may hold a constant
    ``scaling_config``). ``param_space``: a dict, nested dicts allowed, whose choice/uniform/
    loguniform/randint/grid_search values are searched and whose other values are constants.

    Raises (at once, one line each) TypeError for a trainable or param_space of the wrong kind or a
    function cloudpickle cannot ship, ValueError for what the head cannot run (no metric or mode, an
    unsupported scheduler or search_alg, a search space it cannot draw, too many trials).
    """

    def __init__(self, trainable: Any = None, *, param_space: Optional[Dict[str, Any]] = None,
                 tune_config: Optional[TuneConfig] = None, run_config: Optional[RunConfig] = None):
        if trainable is None:
            raise TypeError("Tuner: give the trainable, a function or a TorchTrainer")
        self.tune_config = tune_config or TuneConfig()
        if not isinstance(self.tune_config, TuneConfig):
            raise TypeError(f"Tuner: tune_config must be a TuneConfig, not {type(self.tune_config).__name__}")
        kind, bare, scaling = classify(trainable)
        self.kind = kind
        self.run_config = run_config or (bare.run_config if kind == "trainer" else None) or RunConfig()
        self.metric, self.mode, asha = _objective(self.tune_config)
        seed, limit = _seed_and_limit(self.tune_config)
        stop = _stop_criteria(self.run_config)
        self.name = self.run_config.name or _job.default_name(
            "TorchTrainer" if kind == "trainer" else getattr(bare, "__name__", "trainable").strip("<>") or "trainable")
        if "/" in self.name:
            raise ValueError(f"RunConfig: name {self.name!r} may not contain '/'")
        working_dir = _job.caller_folder()
        if kind == "trainer":
            self.space, job = self._trainer_job(bare, scaling, param_space, working_dir)
        else:
            self.space, job = self._function_job(bare, scaling, param_space, working_dir)
        count = self.space.trial_count(self.tune_config.num_samples)
        if count > _space.MAX_TRIALS:
            raise ValueError(f"Tuner: {count} trials (num_samples x the grids' sizes); a sweep has at most "
                             f"{_space.MAX_TRIALS}")
        tune: Dict[str, Any] = {"metric": self.metric, "mode": self.mode, "num_samples": self.tune_config.num_samples,
                                "max_concurrent": limit, "seed": seed, "search_space": self.space.search_space()}
        if asha:
            tune["scheduler"] = asha
        if stop:
            tune["stop"] = stop
        job["tune"] = tune
        self._job = job
        self._results: Optional[ResultGrid] = None

    def _function_job(self, fn, scaling: Optional[ScalingConfig], param_space, working_dir: str) -> tuple:
        space = _space.parse(param_space)
        shipped = TrialFunction(fn, space.indexed_values(), report_return=True)
        payload = _job.pack_payload("trainable", shipped, space.shipped)
        job = _job.job_spec(self.name, payload, scaling or ScalingConfig(), self.run_config, working_dir,
                            experiment=self.name, meta={"kind": "function", "param_paths": space.param_paths()})
        return space, job

    def _trainer_job(self, trainer, scaling: Optional[ScalingConfig], param_space, working_dir: str) -> tuple:
        for key in (param_space or {}):
            if key not in _TRAINER_KEYS:
                raise ValueError(f"Tuner: param_space key {key!r} is not offered for a TorchTrainer; "
                                 f"use {' or '.join(map(repr, _TRAINER_KEYS))}")
        loop_space = (param_space or {}).get("train_loop_config", {})
        if not isinstance(loop_space, dict):
            raise TypeError(f"Tuner: param_space['train_loop_config'] must be a dict, not {type(loop_space).__name__}")
        space = _space.parse(param_space, root=("train_loop_config",))
        given = (param_space or {}).get("scaling_config")
        if isinstance(given, dict):
            given = ScalingConfig(**given)
        if given is not None and not isinstance(given, ScalingConfig):
            raise TypeError(f"Tuner: param_space['scaling_config'] must be a ScalingConfig, not {type(given).__name__}")
        trial = copy.copy(trainer)
        trial.train_loop_config = _merge(trainer.train_loop_config, space.shipped)
        trial.scaling_config = scaling or given or trainer.scaling_config
        trial.run_config = self.run_config
        if space.indexed_values():
            trial.train_loop_per_worker = TrialFunction(trainer.train_loop_per_worker, space.indexed_values(),
                                                        report_return=False)
        job = trial.job(name=self.name, working_dir=working_dir, meta={"param_paths": space.param_paths()})
        return space, job

    def job(self) -> Dict[str, Any]:
        """The job file's map fit() submits: the trainable's job with its ``tune:`` section."""
        return copy.deepcopy(self._job)

    @property
    def experiment_path(self) -> str:
        """Where fit() puts the trials' folders, best_params.yaml and trials.csv: storage_path/name."""
        return os.path.join(self.run_config.results_root(), self.name)

    def fit(self) -> ResultGrid:
        """Runs the sweep to its end and returns its trials. A trial that fails does not raise: its
        Result has the error, as in Ray. Ctrl-C (or SIGTERM, SIGHUP) stops the sweep's trials, then raises
        KeyboardInterrupt.

        Raises ClusterdError when there is no head or it refuses the sweep (with its reason).
        """
        info = _connection.current()
        verbose = self.run_config.verbose
        out = sys.stdout if verbose else io.StringIO()
        sweep_id, _ = _clusterctl.submit(self._job, info, follow=False, out=out)
        try:
            with _clusterctl.terminated_as_interrupt():
                sweep = self._follow(sweep_id, info, out, verbose)
        except KeyboardInterrupt:
            _clusterctl.stop_quietly(sweep_id, info, out)
            raise
        if verbose:
            try:
                out.write(_clusterctl.run(["sweep", sweep_id], info).stdout)
            except ClusterdError:
                pass
        results = [self._trial_result(sweep, trial, info) for trial in sweep.get("trials", [])]
        os.makedirs(self.experiment_path, exist_ok=True)
        written = write_sweep_files(sweep, self.experiment_path)
        if verbose:
            for path in written:
                out.write(f"Wrote {path}\n")
            out.flush()
        self._results = ResultGrid(results, experiment_path=self.experiment_path, sweep_id=sweep_id,
                                   metric=self.metric, mode=self.mode, best_index=int(sweep.get("best_trial", -1)),
                                   sweep=sweep)
        return self._results

    def get_results(self) -> ResultGrid:
        """The ResultGrid of the last fit(). Raises RuntimeError before fit()."""
        if self._results is None:
            raise RuntimeError("Tuner.get_results: fit() has not run")
        return self._results

    @classmethod
    def restore(cls, path: str, trainable: Any = None, **_options) -> "Tuner":
        """Not offered: a sweep goes on by itself on the head after a head restart (its journal)."""
        raise NotImplementedError("Tuner.restore is not offered: the head journals the sweep and goes on with it "
                                  "after a restart; read it with `clusterctl sweep SWEEP`")

    @classmethod
    def can_restore(cls, path: str) -> bool:
        """Always False (see restore)."""
        return False

    def _follow(self, sweep_id: str, info, out: TextIO, verbose: int) -> dict:
        """Polls the sweep until it ends, telling each trial's start and end (and reports, verbose >= 2)."""
        seen: Dict[int, tuple] = {}
        unreachable_since: Optional[float] = None
        while True:
            try:
                sweep = _clusterctl.run_json(["sweep", sweep_id], info)
                unreachable_since = None
            except ClusterdError as e:
                # A head restarting (its journal brings the sweep back) is waited for, as clusterctl waits.
                now = time.monotonic()
                unreachable_since = unreachable_since or now
                if now - unreachable_since > HEAD_OUTAGE_S:
                    raise ClusterdError(f"lost the head while following {sweep_id} (it goes on there; "
                                        f"`clusterctl sweep {sweep_id}` shows it): {e}") from None
                time.sleep(POLL_S)
                continue
            for trial in sweep.get("trials", []):
                index = int(trial.get("index", 0))
                key = (trial.get("state"), int(trial.get("iterations", 0)) if verbose >= 2 else 0)
                if seen.get(index) != key and trial.get("state") != "TRIAL_WAITING":
                    seen[index] = key
                    out.write(_trial_line(trial, self.metric) + "\n")
            out.flush()
            if sweep.get("state") != "SWEEP_RUNNING":
                return sweep
            time.sleep(POLL_S)

    def _trial_result(self, sweep: dict, trial: dict, info) -> Result:
        index = int(trial.get("index", 0))
        params = trial.get("params", {}) or {}
        config = self.space.config_of(params)
        name = f"{self.name}-trial-{index:03d}"
        state, reason, job_id = trial.get("state", ""), trial.get("reason", ""), trial.get("job_id", "")
        # The job id keeps a later fit() of the same name from finding this run's checkpoints as its own.
        path = os.path.join(self.experiment_path, f"{name}_{job_id}" if job_id else name)
        if job_id:
            base = _job.collect_result(job_id, info, path, config=config)
        else:
            base = Result(metrics=None, checkpoint=None, error=None, path=path, config=config)
        counted = int(trial.get("iterations", 0) or 0)
        if counted and base.rows and base.rows[-1]["training_iteration"] > counted:
            # Reports after the head ended the trial (max_t, a stop criterion, ASHA) while it was given
            # time to exit: Ray never records those, and the sweep's ranking did not see them.
            base.rows = [row for row in base.rows if row["training_iteration"] <= counted]
            base.metrics = last_metrics(base.rows)
        fields = {f: getattr(base, f) for f in base.__dataclass_fields__}
        result = Result(**fields, trial_index=index, trial_name=name, trial_state=state, stop_reason=reason)
        if result.metrics is not None:
            result.metrics["trial_id"] = job_id
            result.metrics["config"] = config
        if state in ("TRIAL_DONE", "TRIAL_EARLY_STOPPED"):
            result.error = None  # a scheduler's stop or max_t is a trial's end, not its failure (as in Ray)
        elif result.error is None:
            what = "was cancelled before it started" if not job_id else state.replace("TRIAL_", "").lower()
            result.error = TrainingFailedError(f"trial {index} of {sweep.get('sweep_id', '')} {what}"
                                               + (f": {reason}" if reason else ""), job_id, result)
        if result.error is not None:
            result.error.result = result
        return result


def _trial_line(trial: dict, metric: str) -> str:
    state = str(trial.get("state", "")).replace("TRIAL_", "")
    params = ", ".join(f"{k}={v}" for k, v in sorted((trial.get("params") or {}).items()))
    line = f"Trial {int(trial.get('index', 0)):03d} {trial.get('job_id', '')} {state}"
    if params:
        line += f" [{params}]"
    if trial.get("has_metric"):
        line += f" {metric}={trial.get('metric')} at iteration {trial.get('iterations')}"
    if state != "ACTIVE" and trial.get("reason"):
        line += f": {trial['reason']}"
    return line


def best_params_yaml(sweep: dict) -> str:
    """The best trial's parameters as clusterctl writes best_params.yaml (name: JSON value, one a line)."""
    best = int(sweep.get("best_trial", -1))
    trials = sweep.get("trials", [])
    if not 0 <= best < len(trials):
        return ""
    params = trials[best].get("params", {}) or {}
    names = [d.get("name") for d in sweep.get("spec", {}).get("tune", {}).get("search_space", [])]
    lines = [f"{name}: {params[name]}" for name in names if name in params]
    return "\n".join(lines) + "\n" if lines else "{}\n"


def trials_csv(sweep: dict) -> str:
    """The sweep's trials as clusterctl writes trials.csv."""
    tune = sweep.get("spec", {}).get("tune", {})
    names = [d.get("name") for d in tune.get("search_space", [])]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["trial", "job_id", "state", *names, "iterations", tune.get("metric", ""), "reason"])
    for t in sweep.get("trials", []):
        params = t.get("params", {}) or {}
        values = []
        for name in names:
            text = params.get(name, "")
            values.append(json.loads(text) if text.startswith('"') else text)
        writer.writerow([t.get("index", 0), t.get("job_id", ""), str(t.get("state", "")).replace("TRIAL_", ""),
                         *values, t.get("iterations", 0), t.get("metric", "") if t.get("has_metric") else "",
                         t.get("reason", "")])
    return buffer.getvalue()


def write_sweep_files(sweep: dict, folder: str) -> List[str]:
    """Writes best_params.yaml (when a trial reported the metric) and trials.csv into ``folder``; their paths."""
    written = []
    yaml = best_params_yaml(sweep)
    for name, text in (("best_params.yaml", yaml), ("trials.csv", trials_csv(sweep))):
        if not text:
            continue
        path = os.path.join(folder, name)
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
        written.append(path)
    return written
