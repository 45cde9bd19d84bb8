"""Hyperparameter tuning: ``rlbench tune ID --algo ALGO --trials N``, as a function (:func:`tune`).

An Optuna study (TPE sampler, median pruning, as rl-baselines3-zoo's ``exp_manager.py``) whose
trials each train the algorithm for ``budget`` steps with hyperparameters drawn from the zoo's
search spaces (:data:`SAMPLERS`, after the zoo's ``hyperparams_opt.py``), evaluate the policy
``evaluations`` times along the way (reported to the pruner) and score it by the mean return of
the last evaluation.

Seeds: every trial trains on env seeds :data:`TRIAL_TRAIN_SEED` ``+ i`` and is evaluated on
:data:`TRIAL_EVAL_FIRST_SEED` onwards, both inside ``core.seeds.TUNING_SEEDS``: never a
training seed (0-9999) and never a card's evaluation seed. The same seeds for every trial
(common random numbers, as the zoo tunes with one seed). Each trial appends what it used to
``trials.jsonl``; the written entry lists them as ``source.tuning_seeds``, and a policy trained
from it records them in its sidecar.

The study lives in ``<study dir>/study.db`` (Optuna's RDB storage on SQLite), so ``resume``
continues it. ``backend="ray"`` runs the trials with Ray Tune (:mod:`.tune_ray`: its Optuna
searcher on the same storage, Ray's median stopping rule as the pruner). The best trial's
hyperparameters are written into ``baselines/hyperparams/<algo>.yaml`` (or another file), the
file's comments and order kept (careful rewriting), with the study's summary as its ``source``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import logging
import math
import shlex
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rlbench_suite import EnvCard, interrupts
from rlbench_suite.baselines.algorithms import Algorithm, check_action_space, get_algorithm
from rlbench_suite.baselines.hyperparams import (
    HyperparamsError,
    env_key,
    hyperparams_file,
    new_sb3_class_model,
    parse_entry,
    read_file,
)
from rlbench_suite.baselines.training_envs import TrainError, card_for, make_training_env
from rlbench_suite.core.seeds import TRAINING_SEEDS, TUNING_SEEDS

TRIAL_TRAIN_SEED = TUNING_SEEDS.start
"""Env ``i`` of every trial resets from seed ``100000 + i``."""
TRIAL_EVAL_FIRST_SEED = TUNING_SEEDS.start + 500_000
"""A trial's evaluation episodes use seeds 600000, 600001, ..."""
STUDY_FILE = "study.db"
TRIALS_FILE = "trials.jsonl"
BACKENDS = ("local", "ray")
METRIC = "mean_return"
SETTINGS = ("env_id", "algo", "budget", "evaluations", "eval_episodes", "base")
"""What a study is made with; ``resume`` refuses a study made with other settings."""


_DUMMY_SOURCE = {"origin": "tuned", "reference": "being tuned"}


def _quiet_after_a_signal(record: logging.LogRecord) -> bool:
    """Optuna's warnings about the trial a Ctrl-C or SIGTERM stopped ("Trial 3 failed ... because
    of the following error: KeyboardInterrupt()", its traceback, "failed with value None") are
    dropped: the command says it was interrupted and how to go on."""
    return not interrupts.interrupted()


class TuneError(TrainError):
    """A study that cannot start or resume (the message says why and what to do)."""


# -- search spaces (rl-baselines3-zoo's hyperparams_opt.py), as hyperparameter entries --------

_NET_ARCH = {"tiny": [64], "small": [64, 64], "medium": [256, 256], "big": [400, 300]}
_GAMMAS = [0.9, 0.95, 0.98, 0.99, 0.995, 0.999, 0.9999]
_TRAIN_FREQS = [1, 4, 8, 16, 32, 64, 128, 256, 512]


def _sample_ppo(trial: Any, on_policy_batch: bool = True) -> None:
    if on_policy_batch:
        trial.suggest_categorical("batch_size", [32, 64, 128, 256, 512])
        trial.suggest_categorical("clip_range", [0.1, 0.2, 0.3, 0.4])
        trial.suggest_categorical("n_epochs", [1, 5, 10, 20])
    trial.suggest_categorical("n_steps", [32, 64, 128, 256, 512, 1024, 2048])
    trial.suggest_float("one_minus_gamma", 0.0001, 0.03, log=True)
    trial.suggest_float("one_minus_gae_lambda", 0.0001, 0.1, log=True)
    trial.suggest_float("learning_rate", 1e-5, 0.002, log=True)
    trial.suggest_float("ent_coef", 1e-8, 0.1, log=True)
    trial.suggest_float("max_grad_norm", 0.3, 2)
    trial.suggest_categorical(
        "net_arch", ["tiny", "small", "medium"] if on_policy_batch else ["small", "medium"]
    )
    trial.suggest_categorical("activation_fn", ["tanh", "relu"])


def _sample_a2c(trial: Any) -> None:
    _sample_ppo(trial, on_policy_batch=False)


def _sample_dqn(trial: Any) -> None:
    trial.suggest_categorical("gamma", _GAMMAS)
    trial.suggest_float("learning_rate", 1e-5, 1, log=True)
    trial.suggest_categorical("batch_size", [16, 32, 64, 100, 128, 256, 512])
    trial.suggest_categorical("buffer_size", [10_000, 50_000, 100_000, 1_000_000])
    trial.suggest_float("exploration_final_eps", 0, 0.2)
    trial.suggest_float("exploration_fraction", 0, 0.5)
    trial.suggest_categorical("target_update_interval", [1, 1000, 5000, 10000, 15000, 20000])
    trial.suggest_categorical("learning_starts", [0, 1000, 5000, 10000, 20000])
    trial.suggest_categorical("train_freq", [1, 4, 8, 16, 128, 256, 1000])
    trial.suggest_categorical("subsample_steps", [1, 2, 4, 8])
    trial.suggest_categorical("net_arch", ["tiny", "small", "medium"])


def _sample_off_policy(trial: Any) -> None:  # SAC and TD3's shared part
    trial.suggest_categorical("gamma", _GAMMAS)
    trial.suggest_float("learning_rate", 1e-5, 1, log=True)
    trial.suggest_categorical("buffer_size", [10_000, 100_000, 1_000_000])
    trial.suggest_categorical("tau", [0.001, 0.005, 0.01, 0.02, 0.05, 0.08])
    trial.suggest_categorical("train_freq", _TRAIN_FREQS)
    trial.suggest_categorical("net_arch", ["small", "medium", "big"])


def _sample_sac(trial: Any) -> None:
    _sample_off_policy(trial)
    trial.suggest_categorical("batch_size", [16, 32, 64, 128, 256, 512, 1024, 2048])
    trial.suggest_categorical("learning_starts", [0, 1000, 10000, 20000])
    trial.suggest_float("log_std_init", -4, 1)


def _sample_td3(trial: Any) -> None:
    _sample_off_policy(trial)
    trial.suggest_categorical("batch_size", [16, 32, 64, 100, 128, 256, 512, 1024, 2048])
    trial.suggest_categorical("noise_type", ["ornstein-uhlenbeck", "normal", None])
    trial.suggest_float("noise_std", 0.01, 1)  # the zoo draws from 0; the entry needs > 0


SAMPLERS: dict[str, Callable[[Any], None]] = {
    "ppo": _sample_ppo,
    "a2c": _sample_a2c,
    "dqn": _sample_dqn,
    "sac": _sample_sac,
    "td3": _sample_td3,
}
"""The algorithms ``rlbench tune`` has a search space for: name -> define-by-run sampler."""


def to_entry(algo: str, params: dict[str, Any]) -> dict[str, Any]:
    """A trial's sampled values as hyperparameter-entry keys (what the YAML file holds)."""
    entry = dict(params)
    arch = _NET_ARCH[entry.pop("net_arch")]
    policy_kwargs: dict[str, Any] = {"net_arch": arch}
    if algo in ("ppo", "a2c"):
        entry["gamma"] = 1 - entry.pop("one_minus_gamma")
        entry["gae_lambda"] = 1 - entry.pop("one_minus_gae_lambda")
        policy_kwargs = {"net_arch": {"pi": arch, "vf": arch}}
        policy_kwargs["activation_fn"] = entry.pop("activation_fn")
    if algo == "dqn":
        entry["gradient_steps"] = max(entry["train_freq"] // entry.pop("subsample_steps"), 1)
    if algo in ("sac", "td3"):
        entry["gradient_steps"] = entry["train_freq"]
    if algo == "sac":
        entry.update(ent_coef="auto", target_entropy="auto")
        policy_kwargs["log_std_init"] = entry.pop("log_std_init")
    if algo == "td3" and entry.get("noise_type") is None:
        entry.pop("noise_type", None)
        entry.pop("noise_std", None)
    entry["policy_kwargs"] = policy_kwargs
    return {k: _plain(v) for k, v in entry.items()}


def _plain(value: Any) -> Any:
    """Numbers as Python numbers, rounded floats (a YAML file a person reads)."""
    if isinstance(value, float):
        return float(f"{value:.6g}")
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


# -- one trial ------------------------------------------------------------------------------


@dataclasses.dataclass
class TuneConfig:
    """What ``rlbench tune`` was asked to do."""

    env_id: str
    algo: str
    trials: int = 10
    budget: int | None = None
    """Environment steps per trial; default: the base entry's ``n_timesteps``."""
    backend: str = "local"
    study_dir: Path | None = None
    """Default: ``studies/<env-name>/<algo>/`` in the data dir."""
    resume: bool = False
    hyperparams: Path | None = None
    """The base entry (n_envs, policy, normalize, unsampled keys); default the suite's file."""
    write: Path | None = None
    """Where the best trial goes; default ``baselines/hyperparams/<algo>.yaml``."""
    no_write: bool = False
    evaluations: int = 10
    """Evaluations per trial, reported to the pruner (the last one is the trial's value)."""
    eval_episodes: int = 5
    startup_trials: int = 5
    """Trials before TPE and the pruner act (random sampling until then)."""
    sampler_seed: int = 0


@dataclasses.dataclass(frozen=True)
class TrialSpec:
    """Everything a trial needs, picklable (Ray ships it to its workers)."""

    env_id: str
    algo: str
    base: dict[str, Any]
    budget: int
    evaluations: int
    eval_episodes: int
    trials_file: str


class TrialPruned(Exception):
    """The pruner stopped the trial (an Optuna ``TrialPruned`` in the local backend)."""


def trial_seeds(n_envs: int, eval_episodes: int) -> tuple[list[int], list[int]]:
    """The (training, evaluation) seeds of every trial of a study."""
    train = list(range(TRIAL_TRAIN_SEED, TRIAL_TRAIN_SEED + n_envs))
    evaluation = list(range(TRIAL_EVAL_FIRST_SEED, TRIAL_EVAL_FIRST_SEED + eval_episodes))
    return train, evaluation


def check_tuning_seeds(card: EnvCard, seeds: list[int]) -> None:
    """Refuse seeds outside TUNING_SEEDS or among the card's evaluation seeds."""
    outside = [s for s in seeds if s not in TUNING_SEEDS or s in TRAINING_SEEDS]
    overlap = sorted(set(seeds) & set(card.evaluation.seeds))
    if outside or overlap:
        raise TuneError(
            f"tuning seeds must lie in {TUNING_SEEDS.start}..{TUNING_SEEDS.stop - 1} and avoid "
            f"{card.id}'s evaluation seeds; got {(outside + overlap)[:10]}"
        )


def run_trial(
    spec: TrialSpec, params: dict[str, Any], report: Callable[[int, float], bool], name: str
) -> float:
    """Train with ``params`` (sampled values) on the tuning seeds; return the last mean return.

    ``report(step, mean_return)`` is called after each evaluation and returns True to prune
    (then :class:`TrialPruned` is raised). Every trial appends a line to ``trials.jsonl``.
    """
    import torch
    from stable_baselines3.common.callbacks import BaseCallback

    from rlbench_suite.baselines.curves import CurveEvaluator

    torch.set_num_threads(1)
    algo = get_algorithm(spec.algo)
    card = card_for(spec.env_id, algo)
    entry = {"source": _DUMMY_SOURCE, **spec.base, **to_entry(algo.name, params)}
    hyper = parse_entry(algo, card.id, entry)
    train_seeds, eval_seeds = trial_seeds(hyper.entry.n_envs, spec.eval_episodes)
    check_tuning_seeds(card, train_seeds + eval_seeds)
    every = max(1, spec.budget // spec.evaluations)
    record: dict[str, Any] = {
        "trial": name,
        "params": params,
        "train_seeds": train_seeds,
        "eval_seeds": eval_seeds,
        "evaluations": [],
        "state": "running",
        "started": _now(),
    }
    evaluator = CurveEvaluator(
        card.id, spec.eval_episodes, masked=algo.masked, first_seed=TRIAL_EVAL_FIRST_SEED
    )
    start = time.perf_counter()

    class Evaluate(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.next, self.pruned = every, False

        def _on_step(self) -> bool:
            if self.num_timesteps < self.next:
                return True
            self.next = (self.num_timesteps // every + 1) * every
            return not self.evaluate()

        def evaluate(self) -> bool:
            row = evaluator(self.model, time.perf_counter() - start)
            value = row[METRIC]
            record["evaluations"].append([row["step"], value])
            if not math.isfinite(value):
                raise ValueError(f"the evaluation's {METRIC} is {value}")
            self.pruned = bool(report(row["step"], value))
            return self.pruned

    env = make_training_env(card, hyper)
    callback = Evaluate()
    try:
        model = new_sb3_class_model(algo.load_class(), hyper, env, TRIAL_TRAIN_SEED)
        model.learn(total_timesteps=spec.budget, callback=callback)
        if not callback.pruned and (
            not record["evaluations"] or record["evaluations"][-1][0] < model.num_timesteps
        ):
            callback.evaluate()
        record["steps"] = int(model.num_timesteps)
        record["state"] = "pruned" if callback.pruned else "complete"
    except (AssertionError, ValueError) as exc:  # NaNs and refused values: pruned, as the zoo
        record.update(state="pruned", error=repr(exc))
        raise TrialPruned(str(exc)) from None
    except BaseException as exc:  # stopped from outside (Ctrl-C, Ray) or a bug
        record.update(state="stopped", error=repr(exc))
        raise
    finally:
        evaluator.close()
        env.close()
        record["wall_time_s"] = round(time.perf_counter() - start, 3)
        _append_line(Path(spec.trials_file), record)
    if callback.pruned:
        raise TrialPruned(f"pruned at step {record['evaluations'][-1][0]}")
    return float(record["evaluations"][-1][1])


def _append_line(path: Path, record: dict[str, Any]) -> None:
    with open(path, "a", encoding="utf-8") as f:  # one short write: safe from two processes
        f.write(json.dumps(record, default=str) + "\n")


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def read_trials(study_dir: Path) -> list[dict[str, Any]]:
    """The lines of ``trials.jsonl``: each trial's params, seeds, evaluations and state."""
    path = Path(study_dir) / TRIALS_FILE
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


# -- the study ----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class TuneProgress:
    done: int
    total: int
    pruned: int
    best_value: float | None
    best_trial: int | None


@dataclasses.dataclass(frozen=True)
class TuneReport:
    study_dir: Path
    study_name: str
    best_value: float
    best_params: dict[str, Any]
    entry: dict[str, Any]
    written: Path | None
    trials: int
    pruned: int
    wall_time_s: float


def default_study_dir(card: EnvCard, algo: Algorithm) -> Path:
    from rlbench_suite.paths import data_dir

    return data_dir() / "studies" / card.name / algo.name


def base_entry(algo: Algorithm, card: EnvCard, path: Path | None, budget: int | None) -> dict:
    """The entry trials start from: the env's entry in ``path`` (default the suite's file),
    or SB3's defaults with one env; ``source`` left out."""
    file = Path(path) if path is not None else hyperparams_file(algo)
    entries = read_file(file) if file.is_file() or path is not None else {}
    raw = entries.get(env_key(card.id))
    if raw is None:
        if budget is None:
            raise TuneError(
                f"{file} has no {algo.name} entry for {card.id} to take the budget from; "
                "pass --budget STEPS"
            )
        raw = {"n_envs": 1, "n_timesteps": budget, "policy": "MlpPolicy"}
    base = json.loads(json.dumps(raw, default=str))
    base.pop("source", None)
    return base


class _Study:
    def __init__(self, config: TuneConfig) -> None:
        if config.backend not in BACKENDS:
            raise TuneError(f"unknown backend {config.backend!r}; accepted: {', '.join(BACKENDS)}")
        if config.trials < 1:
            raise TuneError(f"--trials must be at least 1, got {config.trials}")
        self.config = config
        self.algo = get_algorithm(config.algo)
        if self.algo.name not in SAMPLERS:
            raise TuneError(
                f"no search space for --algo {self.algo.name}; tunable: {', '.join(SAMPLERS)}"
            )
        self.card = card_for(config.env_id, self.algo)
        _check_actions(self.algo, self.card)
        self.base = base_entry(self.algo, self.card, config.hyperparams, config.budget)
        self.budget = int(config.budget or float(self.base["n_timesteps"]))
        self.base["n_timesteps"] = int(float(self.base.get("n_timesteps", self.budget)))
        parse_entry(self.algo, self.card.id, {**self.base, "source": _DUMMY_SOURCE})
        self.dir = Path(config.study_dir or default_study_dir(self.card, self.algo)).expanduser()
        self.name = f"{self.card.name}-{self.algo.name}"
        self.storage_url = f"sqlite:///{(self.dir / STUDY_FILE).resolve()}"
        self.spec = TrialSpec(
            self.card.id,
            self.algo.name,
            self.base,
            self.budget,
            config.evaluations,
            config.eval_episodes,
            str((self.dir / TRIALS_FILE).resolve()),
        )
        self.settings = {
            "env_id": self.card.id,
            "algo": self.algo.name,
            "budget": self.budget,
            "evaluations": config.evaluations,
            "eval_episodes": config.eval_episodes,
            "base": self.base,
        }

    def open(self) -> Any:
        """The Optuna study: new, or the stored one (``resume``), checked against settings."""
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        for handler in logging.getLogger("optuna").handlers:
            if _quiet_after_a_signal not in handler.filters:
                handler.addFilter(_quiet_after_a_signal)
        exists = (self.dir / STUDY_FILE).is_file() and self.name in [
            s.study_name for s in optuna.get_all_study_summaries(self.storage_url)
        ]
        if exists and not self.config.resume:
            raise TuneError(
                f"{self.dir} already holds the study {self.name}; pass --resume to continue it, "
                "or choose another --study-dir"
            )
        if self.config.resume and not exists:
            raise TuneError(f"nothing to resume: no study {self.name} in {self.dir}")
        self.dir.mkdir(parents=True, exist_ok=True)
        study = optuna.create_study(
            storage=self.storage_url,
            study_name=self.name,
            direction="maximize",
            sampler=self.sampler(),
            pruner=optuna.pruners.MedianPruner(
                n_startup_trials=self.config.startup_trials,
                n_warmup_steps=self.config.evaluations // 3,
            ),
            load_if_exists=True,
        )
        study.sampler = self.sampler(len(study.trials))
        if exists:
            recorded = study.user_attrs.get("settings", {})
            diffs = [
                f"{k}: recorded {recorded.get(k)!r}, now {self.settings[k]!r}"
                for k in SETTINGS
                if recorded.get(k) != self.settings[k]
            ]
            if diffs:
                raise TuneError(
                    "--resume refused: the study was made with other settings: " + "; ".join(diffs)
                )
            for trial in study.get_trials(deepcopy=False):  # interrupted trials: failed
                if trial.state == optuna.trial.TrialState.RUNNING:
                    study._storage.set_trial_state_values(
                        trial._trial_id, optuna.trial.TrialState.FAIL
                    )
        else:
            n_envs = parse_entry(self.algo, self.card.id, {**self.base, "source": _DUMMY_SOURCE})
            train, evaluation = trial_seeds(n_envs.entry.n_envs, self.config.eval_episodes)
            check_tuning_seeds(self.card, train + evaluation)
            study.set_user_attr("settings", self.settings)
            study.set_user_attr("tuning_seeds", train + evaluation)
            study.set_user_attr("created", _now())
        return study

    def sampler(self, stored: int = 0) -> Any:
        """TPE seeded with ``sampler_seed + stored`` (the trials the study holds already): a
        resumed study draws on, instead of repeating its first random draws."""
        import optuna

        return optuna.samplers.TPESampler(
            n_startup_trials=self.config.startup_trials,
            seed=self.config.sampler_seed + stored,
            multivariate=True,
        )

    def remaining(self, study: Any) -> int:
        return max(0, self.config.trials - len(_finished(study)))


def _check_actions(algo: Algorithm, card: EnvCard) -> None:
    """Refuse, before any trial, an algorithm that cannot act in the env."""
    import gymnasium as gym

    env = gym.make(card.id)
    try:
        check_action_space(algo, card.id, env.action_space)
    except ValueError as exc:
        raise TuneError(str(exc)) from None
    finally:
        env.close()


def _finished(study: Any) -> list[Any]:
    import optuna

    done = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
    return [t for t in study.get_trials(deepcopy=False) if t.state in done]


def _progress(study: Any, total: int) -> TuneProgress:
    import optuna

    finished = _finished(study)
    complete = [t for t in finished if t.state == optuna.trial.TrialState.COMPLETE]
    best = max(complete, key=lambda t: t.value, default=None)
    return TuneProgress(
        len(finished),
        total,
        len(finished) - len(complete),
        best.value if best else None,
        best.number if best else None,
    )


def _run_local(study_: _Study, study: Any, on_progress: Callable[[TuneProgress], None]) -> None:
    import optuna

    spec = study_.spec
    sample = SAMPLERS[spec.algo]

    def objective(trial: optuna.Trial) -> float:
        sample(trial)

        def report(step: int, value: float) -> bool:
            trial.report(value, step)
            return trial.should_prune()

        try:
            return run_trial(spec, dict(trial.params), report, f"local-{trial.number}")
        except TrialPruned:
            raise optuna.TrialPruned() from None

    study.optimize(
        objective,
        n_trials=study_.remaining(study),
        callbacks=[lambda s, _t: on_progress(_progress(s, study_.config.trials))],
        catch=(),
    )


def _run_ray(study_: _Study, study: Any, on_progress: Callable[[TuneProgress], None]) -> None:
    from rlbench_suite.baselines import tune_ray

    remaining = study_.remaining(study)
    if remaining == 0:
        return
    tune_ray.run(
        spec=study_.spec,
        run_trial=_run_trial_from_dict,
        pruned=TrialPruned,
        sample=SAMPLERS[study_.algo.name],
        sampler=study_.sampler(len(study.trials)),
        storage_url=study_.storage_url,
        study_name=study_.name,
        metric=METRIC,
        trials=remaining,
        evaluations=study_.config.evaluations,
        startup_trials=study_.config.startup_trials,
        study_dir=study_.dir,
        on_complete=lambda: on_progress(_progress(study, study_.config.trials)),
    )


def _run_trial_from_dict(spec: dict[str, Any], params: dict[str, Any], report: Callable,
                         name: str) -> float:  # fmt: skip
    """:func:`run_trial` with the spec as a dict (as Ray ships it)."""
    return run_trial(TrialSpec(**spec), params, report, name)


def command_line(study_: _Study, config: TuneConfig) -> str:
    """The ``rlbench tune`` command that makes this study (the settings that matter)."""
    words = [
        "rlbench",
        "tune",
        study_.card.id,
        "--algo",
        study_.algo.name,
        "--trials",
        str(config.trials),
        "--budget",
        str(study_.budget),
        "--backend",
        config.backend,
        "--evaluations",
        str(config.evaluations),
        "--eval-episodes",
        str(config.eval_episodes),
        "--startup-trials",
        str(config.startup_trials),
    ]
    if config.hyperparams is not None:
        words += ["--hyperparams", str(config.hyperparams)]
    return shlex.join(words)


def tune(
    config: TuneConfig, *, on_progress: Callable[[TuneProgress], None] | None = None
) -> TuneReport:
    """Run (or continue) the study, then write its best trial's entry (module docstring)."""
    study_ = _Study(config)
    study = study_.open()
    show = on_progress or (lambda _p: None)
    show(_progress(study, config.trials))
    start = time.perf_counter()
    if config.backend == "ray":
        _run_ray(study_, study, show)
    else:
        _run_local(study_, study, show)
    wall = time.perf_counter() - start
    study.set_user_attr("wall_time_s", round(study.user_attrs.get("wall_time_s", 0) + wall, 3))
    progress = _progress(study, config.trials)
    show(progress)
    if progress.best_trial is None:
        raise TuneError(
            f"no trial of {study_.name} completed ({progress.pruned} pruned or failed); "
            "raise --budget or --trials and --resume"
        )
    best = study.best_trial
    entry = {**study_.base, **to_entry(study_.algo.name, dict(best.params))}
    source = {
        "origin": "tuned",
        "reference": (
            f"rlbench tune: Optuna TPE + median pruning, {progress.done} trials "
            f"({progress.pruned} pruned), best trial {best.number}"
        ),
        "trials": progress.done,
        "budget_per_trial": study_.budget,
        "best_value": _plain(float(best.value)),
        "metric": f"{METRIC} over {config.eval_episodes} episodes on tuning seeds",
        "date": dt.date.today().isoformat(),
        "command": command_line(study_, config),
        "tuning_seeds": list(study.user_attrs["tuning_seeds"]),
    }
    entry = {"source": source, **entry}
    parse_entry(study_.algo, study_.card.id, entry)  # what is written is a valid entry
    written = None
    if not config.no_write:
        written = Path(config.write) if config.write else hyperparams_file(study_.algo)
        write_entry(written, study_.card.id, entry)
    return TuneReport(
        study_.dir,
        study_.name,
        float(best.value),
        dict(best.params),
        entry,
        written,
        progress.done,
        progress.pruned,
        float(study.user_attrs["wall_time_s"]),
    )


# -- writing the entry back ---------------------------------------------------------------------


def write_entry(path: Path, env_id: str, entry: dict[str, Any]) -> None:
    """Put ``entry`` under ``env_id`` in the YAML file at ``path``; atomically.

    Careful rewriting, not a YAML round trip: only the lines of that entry change (a new id
    goes at the end, after a blank line); every other line, comment and tag (``!!float 1e5``)
    stays byte for byte. The result must still load (:func:`read_file`) or nothing is written.
    """
    import re

    import yaml

    path = Path(path)
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    lines = text.splitlines(keepends=True)
    key = env_key(env_id)

    class Dumper(yaml.SafeDumper):  # mappings in block style, lists on one line
        pass

    Dumper.add_representer(
        list, lambda d, v: d.represent_sequence("tag:yaml.org,2002:seq", v, flow_style=True)
    )
    block = yaml.dump(
        {key: entry},
        Dumper=Dumper,
        sort_keys=False,
        default_flow_style=False,
        width=100,
        allow_unicode=True,
    ).splitlines(keepends=True)
    names = {key, key.removeprefix("rlbench/")}
    top = re.compile(r"""^(['"]?)([^\s#'"][^'"]*?)\1:\s*(#.*)?$""")

    def top_key(line: str) -> str | None:
        match = top.match(line.rstrip("\n"))
        return match.group(2) if match else None

    start = next((i for i, line in enumerate(lines) if top_key(line) in names), None)
    if start is None:
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        lines += (["\n"] if lines and lines[-1].strip() else []) + block
    else:
        end = next(
            (i for i in range(start + 1, len(lines)) if lines[i][:1] not in (" ", "\t", "\n", "#")),
            len(lines),
        )
        while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].startswith("#")):
            end -= 1  # blank lines and the next entry's comments stay
        lines[start:end] = block
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text("".join(lines), encoding="utf-8")
    try:
        read_file(tmp)  # still readable by the loader
    except HyperparamsError:
        tmp.unlink(missing_ok=True)
        raise
    tmp.replace(path)
