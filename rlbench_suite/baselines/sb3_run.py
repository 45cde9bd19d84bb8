"""One SB3 training run while it trains (:class:`Run`): its record (``run.json``), starting
or resuming from a checkpoint, the curve and checkpoints at rollout boundaries, and the
final model, ONNX policy and scored result. :func:`~.train.train` is the entry point."""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import json
import platform
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym

from rlbench_suite import EnvCard, interrupts
from rlbench_suite.baselines import checkpoints, curves
from rlbench_suite.baselines.algorithms import Algorithm, check_action_space, get_algorithm
from rlbench_suite.baselines.budget import (
    LEGACY,
    BudgetError,
    BudgetPlan,
    Granularity,
    Rounding,
    plan_budget,
    rollouts,
    vector_steps,
)
from rlbench_suite.baselines.checkpoints import write_json
from rlbench_suite.baselines.hyperparams import load_hyperparams, new_sb3_class_model
from rlbench_suite.baselines.training_envs import (
    TrainError,
    card_for,
    make_training_env,
    train_device,
    training_seeds,
)
from rlbench_suite.core.provenance import package_versions
from rlbench_suite.paths import runs_dir
from rlbench_suite.resources import shown_path

RUN_FILE = "run.json"
RUN_SCHEMA_VERSION = 1


@dataclasses.dataclass
class TrainConfig:
    """What ``rlbench train`` was asked to do."""

    env_id: str
    algo: str
    seed: int = 0
    budget: int | None = None
    """Environment steps, at most (``budget.py``: whole rollouts, rounded down); default: the
    entry's ``n_timesteps``."""
    hyperparams: Path | None = None
    """A YAML file of the same shape as ``baselines/hyperparams/<algo>.yaml``."""
    out: Path | None = None
    """The folder holding runs; default ``runs/`` in the data dir (``paths.runs_dir``)."""
    resume: bool = False
    device: str = "cpu"
    eval_every: int | None = None
    """Steps between learning-curve points (rounded up to whole rollouts); default a
    twentieth of the budget."""
    eval_episodes: int = 5
    checkpoint_every: int | None = None
    """Steps between checkpoints; default ``eval_every``."""
    final_episodes: int | None = None
    """Episodes of the final harness evaluation; default the card's protocol."""
    workers: int = 1
    """Processes for the final harness evaluation."""
    threads: int = 1
    """torch threads (one is as fast as two for small MLPs)."""
    budget_rounding: Rounding = "down"
    """``up`` trains past the budget to whole rollouts, as runs recorded before
    ``budget_steps`` did (``rlbench reproduce`` of such a run)."""


@dataclasses.dataclass(frozen=True)
class TrainProgress:
    """What a progress display shows."""

    step: int
    budget: int
    steps_per_s: float
    elapsed_s: float
    last_eval: dict[str, Any] | None


@dataclasses.dataclass(frozen=True)
class TrainReport:
    run_dir: Path
    run: dict[str, Any]
    model: Any


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped training after the run folder's ``run.json`` was written (``status:
    interrupted``): the same command with ``--resume`` continues from its last checkpoint."""

    def __init__(self, run_dir: Path) -> None:
        super().__init__(str(run_dir))
        self.run_dir = run_dir


def run_dir_for(out: Path | None, card: EnvCard, algo: Algorithm, seed: int) -> Path:
    """``<out>/<env name>/<algo>/seed-<S>``; ``out`` defaults to ``<data dir>/runs``."""
    return Path(out or runs_dir()).expanduser() / card.name / algo.name / f"seed-{seed}"


def versions() -> dict[str, str | None]:
    """Python and the packages a result depends on (``core.provenance.PACKAGES``)."""
    return {"python": platform.python_version(), **package_versions()}


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _differences(recorded: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """What differs between the recorded run and this one (for refusing a resume)."""
    diffs = []
    for key in ("env_id", "algo", "seed", "budget", "budget_steps", "eval_every", "eval_episodes",
                "device"):
        if recorded.get(key, now[key]) != now[key]:  # (older records lack budget_steps)
            diffs.append(f"{key}: recorded {recorded.get(key)!r}, now {now[key]!r}")
    old, new = recorded.get("hyperparams", {}), now["hyperparams"]
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            diffs.append(
                f"hyperparameter {key!r}: recorded {old.get(key, '<unset>')!r}, "
                f"now {new.get(key, '<unset>')!r}"
            )
    return diffs


def new_sb3_model(card: EnvCard, algo: Algorithm, params: Any, seed: int, device: str = "cpu",
                  recorder: Any = None) -> Any:  # fmt: skip
    """A new SB3 model of ``algo`` on ``card``'s training env (:func:`make_training_env`, its
    copies passed through ``recorder`` where given) with ``params``, seeded with ``seed``;
    a :class:`TrainError` when the spaces or the hyperparameters are refused."""
    env = make_training_env(card, params, algo, seed, recorder)
    check_action_space(algo, card.id, env.action_space)
    if not isinstance(env.observation_space, gym.spaces.Box | gym.spaces.Discrete):
        env.close()
        raise TrainError(
            f"{card.id}'s observation space {env.observation_space} cannot be exported "
            "to the suite's ONNX convention (Box or Discrete observations only, for now)"
        )
    try:
        return new_sb3_class_model(algo.load_class(), params, env, seed, device)
    except (TypeError, ValueError, AssertionError) as exc:
        env.close()
        raise TrainError(
            f"{algo.class_name} refused the hyperparameters for {card.id} ({params.path}): {exc}"
        ) from None


def _run_callback(run: Run) -> Any:
    """The SB3 callback that hands rollout boundaries and steps to ``run``."""
    from stable_baselines3.common.callbacks import BaseCallback

    class RunCallback(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.last_report = 0.0

        def _on_training_start(self) -> None:
            run.on_training_start(self.model)

        def _on_rollout_start(self) -> None:  # after the previous update: a rollout boundary
            run.at_boundary(self.model)

        def _on_step(self) -> bool:
            if self.n_calls % 64 == 0 and time.perf_counter() - self.last_report > 1.0:
                self.last_report = time.perf_counter()
                run.report(self.model.num_timesteps)
            return run.stop_at is None or self.model.num_timesteps < run.stop_at

    return RunCallback()


class Run:
    """The state of one SB3 run while it trains (see :func:`~.train.train`); subclassed by
    :class:`~.native_run.NativeRun` for the suite's own algorithms."""

    def __init__(self, config: TrainConfig, on_progress: Callable[[TrainProgress], None] | None,
                 on_notice: Callable[[str], None] | None = None) -> None:  # fmt: skip
        self.config = config
        self.on_progress = on_progress
        self.on_notice = on_notice
        self.algo = get_algorithm(config.algo)
        self.card = card_for(config.env_id, self.algo)
        self.algo = self.algorithm_for(self.algo)
        self.device = train_device(config.device, self.algo)
        self.params = load_hyperparams(self.algo, self.hyperparams_ids(), config.hyperparams)
        self.budget = int(config.budget or self.params.entry.n_timesteps)
        if self.budget < 1:
            raise TrainError(f"--budget must be a positive number of steps, got {self.budget}")
        self.train_seeds = training_seeds(self.card, config.seed, self.params.entry.n_envs)
        self.dir = run_dir_for(config.out, self.card, self.algo, config.seed)
        self.eval_every = max(1, config.eval_every or self.budget // 20)
        self.checkpoint_every = max(1, config.checkpoint_every or self.eval_every)
        self.plan: BudgetPlan | None = None
        self.stop_at: int | None = None
        """Where an off-policy run stops mid-collection (its budget exactly)."""
        self.next_eval = 0
        self.next_checkpoint = self.checkpoint_every
        self.wall_before = 0.0
        self.segment_start = time.perf_counter()
        self.last_eval: dict[str, Any] | None = None
        self.restored_noise: Any = None
        self.pending_rng: dict[str, Any] | None = None
        self.record: dict[str, Any] = {}
        self.start_step = 0

    def algorithm_for(self, algo: Algorithm) -> Algorithm:
        """The algorithm that trains on this card (an offline run picks a discrete variant)."""
        return algo

    def hyperparams_ids(self) -> list[str]:
        """The hyperparameter entries to use, the first found (the card's id)."""
        return [self.card.id]

    # -- the run record ---------------------------------------------------------------------

    def new_record(self) -> dict[str, Any]:
        return {
            "schema_version": RUN_SCHEMA_VERSION,
            "env_id": self.card.id,
            "algo": self.algo.name,
            "algo_class": f"{self.algo.package}.{self.algo.class_name}",
            "seed": self.config.seed,
            "train_seeds": self.train_seeds,
            "budget": self.budget,
            "budget_steps": self.plan.steps if self.plan else self.budget,
            "budget_rounding": self.plan.rounding if self.plan else "down",
            "budget_note": self.plan.notice() if self.plan else None,
            "hyperparams": self.params.as_dict(),
            "hyperparams_file": shown_path(self.params.path) if self.params.path else None,
            "hyperparams_sha256": self.params.sha256,
            "eval_every": self.eval_every,
            "eval_episodes": self.config.eval_episodes,
            "curve_seeds": curves.curve_seeds(self.config.eval_episodes),
            "checkpoint_every": self.checkpoint_every,
            "device": self.device,
            "vector_backend": self.vector_backend(),
            "status": "running",
            "steps": 0,
            "wall_time_s": 0.0,
            "started": _now(),
            "finished": None,
            "resumes": [],
            "resume_exact": True,
            "versions": versions(),
            "command": sys.argv,
            "files": [],
        }

    def vector_backend(self) -> str:
        if self.algo.league:
            return "league"
        if self.algo.shared:  # one slot per learning agent (shared_ppo.py)
            from rlbench_suite.baselines.shared_ppo import plays_batched

            entry = self.params.entry
            batched = plays_batched(self.card, entry.partners, entry.game_wrappers)
            return "batched" if batched else "pettingzoo-parallel"
        return "vector_entry_point" if self.card.vector_entry_point else "sync"

    def save_record(self, **update: Any) -> None:
        self.record.update(update)
        write_json(self.dir / RUN_FILE, self.record)

    def wall(self) -> float:
        return self.wall_before + time.perf_counter() - self.segment_start

    # -- starting and resuming --------------------------------------------------------------

    def granularity(self, model: Any) -> Granularity:
        """The steps ``model`` trains in (``budget.py``): SB3's on-policy rollouts of
        ``n_envs x n_steps``, or an off-policy algorithm's vector steps, its boundaries every
        ``train_freq`` of them (None where it collects whole episodes)."""
        if self.algo.on_policy:
            return rollouts(int(model.n_envs), int(model.n_steps))
        freq = model.train_freq
        steps = getattr(freq.unit, "value", freq.unit) == "step"
        return vector_steps(int(model.n_envs), freq.frequency * model.n_envs if steps else None)

    def set_plan(self, model: Any, rounding: Rounding) -> None:
        """The steps this run trains and its real curve and checkpoint spacing; the notice
        of a budget that is not a whole number of rollouts goes to ``on_notice``."""
        try:
            self.plan = plan_budget(self.budget, self.granularity(model), rounding)
        except BudgetError as exc:
            model.get_env().close()
            raise TrainError(f"{self.card.id} {self.algo.name}: {exc}") from None
        starts = int(getattr(model, "learning_starts", 0) or 0)
        if not self.algo.on_policy and rounding == "down" and self.plan.steps <= starts:
            model.get_env().close()
            raise TrainError(
                f"{self.card.id} {self.algo.name}: --budget {self.budget:,} is not above "
                f"learning_starts {starts:,} (from the hyperparameters): the policy would "
                f"never be updated; pass --budget {starts + 1} or more, or a smaller "
                "learning_starts in --hyperparams"
            )
        self.eval_every = self.plan.spacing(self.eval_every)
        self.checkpoint_every = self.plan.spacing(self.checkpoint_every)
        self.next_checkpoint = self.checkpoint_every
        if not self.algo.on_policy and rounding == "down":
            self.stop_at = self.plan.steps

    def start(self) -> Any:
        """The model to train: new, or restored from the newest checkpoint (``resume``)."""
        record_file = self.dir / RUN_FILE
        if not self.config.resume:
            if record_file.exists():
                finished = json.loads(record_file.read_text(encoding="utf-8")).get("status")
                if finished == "finished":
                    raise TrainError(
                        f"{self.dir} holds a finished run (its result: "
                        f"{self.dir / 'result.json'}); choose another --out or --seed, or "
                        "remove the folder to train it again"
                    )
                raise TrainError(
                    f"{self.dir} already holds an unfinished run; pass --resume to continue "
                    "it, or choose another --out or --seed"
                )
            model = self.new_model()  # refused hyperparameters leave no folder behind
            self.set_plan(model, self.config.budget_rounding)
            self.dir.mkdir(parents=True, exist_ok=True)
            self.record = self.new_record()
            return model
        if not record_file.is_file():
            raise TrainError(f"nothing to resume: no {RUN_FILE} in {self.dir}")
        self.record = json.loads(record_file.read_text(encoding="utf-8"))
        if self.record.get("status") == "finished":
            recorded = self.record.get("budget")
            other = (f" (its budget was {recorded:,}, not {self.budget:,}: a run cannot be "
                     "extended; train a new one with another --out or --seed)"
                     if isinstance(recorded, int) and recorded != self.budget else "")  # fmt: skip
            raise TrainError(f"the run in {self.dir} has finished already; nothing to "
                             f"resume{other}")  # fmt: skip
        checkpoint = checkpoints.latest_checkpoint(self.dir)
        if checkpoint is None:
            model, state = self.new_model(), None
        else:
            model, state = self.restore(checkpoint)
        self.set_plan(model, self.record.get("budget_rounding", LEGACY))
        if self.algo.cpu_only:  # it trained on the CPU, whatever an older record says
            self.record["device"] = "cpu"
        fresh = self.new_record()
        diffs = _differences(self.record, fresh)
        if diffs:
            model.get_env().close()
            raise TrainError(
                f"--resume refused: the run in {self.dir} was made with other settings: "
                + "; ".join(diffs)
            )
        self.record["versions_now"] = fresh["versions"]
        for key in ("budget_steps", "budget_rounding", "budget_note"):  # older records lack them
            self.record[key] = fresh[key]
        if checkpoint is None:  # interrupted before its first checkpoint: start again
            (self.dir / curves.CURVE_FILE).unlink(missing_ok=True)
            self.record.update(resumes=[*self.record["resumes"], {"at": _now(), "step": 0}])
            return model
        assert state is not None
        self.next_eval, self.next_checkpoint = state["next_eval"], state["next_checkpoint"]
        self.wall_before = float(state["wall_time_s"])
        kept = curves.truncate_curve(self.dir / curves.CURVE_FILE, state["step"])
        # the checkpoint's own point, if evaluated: not again at the end (a run stopped in its
        # final evaluation resumes from a checkpoint at its last step)
        self.last_eval = kept[-1] if kept else None
        self.record["resumes"] = [
            *self.record["resumes"],
            {"at": _now(), "step": state["step"], "env_restored": state["env_pickled"]},
        ]
        self.record["resume_exact"] = self.record["resume_exact"] and state["env_pickled"]
        return model

    def restore(self, checkpoint: Path) -> tuple[Any, dict[str, Any]]:
        """The model and trainer state saved in ``checkpoint``."""
        model, state, self.pending_rng = checkpoints.restore_checkpoint(
            checkpoint,
            self.algo.load_class(),
            lambda: make_training_env(self.card, self.params, self.algo, self.config.seed),
            self.device,
        )
        self.restored_noise = copy.deepcopy(getattr(model, "action_noise", None))
        return model, state

    def new_model(self) -> Any:
        return new_sb3_model(self.card, self.algo, self.params, self.config.seed,
                             self.device)  # fmt: skip

    # -- during training --------------------------------------------------------------------

    def on_training_start(self, model: Any) -> None:
        if self.restored_noise is not None:  # learn() resets the noise; keep the saved one
            model.action_noise = self.restored_noise

    def at_boundary(self, model: Any) -> None:
        if self.pending_rng is not None:
            # the first boundary after a restore: undo what learn() drew on the way here
            # (gSDE's new noise matrices), so the run goes on exactly as it would have
            checkpoints.set_rng_states(model, self.pending_rng)
            self.pending_rng = None
        step = int(model.num_timesteps)
        if step >= self.next_eval:
            self.evaluate(model)
            self.next_eval = (step // self.eval_every + 1) * self.eval_every
        if step >= self.next_checkpoint:
            self.next_checkpoint = (step // self.checkpoint_every + 1) * self.checkpoint_every
            self.checkpoint(model)
        self.report(step)

    def evaluate(self, model: Any) -> None:
        row = self.evaluator(model, self.wall())
        curves.append_row(self.dir / curves.CURVE_FILE, row)
        self.last_eval = row

    def checkpoint(self, model: Any) -> None:
        state = {
            "next_eval": self.next_eval,
            "next_checkpoint": self.next_checkpoint,
            "wall_time_s": self.wall(),
        }
        self.save_checkpoint(model, state)
        self.save_record(steps=int(model.num_timesteps), wall_time_s=round(self.wall(), 3))

    def save_checkpoint(self, model: Any, state: dict[str, Any]) -> None:
        checkpoints.save_checkpoint(self.dir, model, state)

    def report(self, step: int) -> None:
        if self.on_progress is None:
            return
        elapsed = time.perf_counter() - self.segment_start
        done = step - self.start_step
        self.on_progress(
            TrainProgress(
                step,
                self.plan.steps if self.plan else self.budget,
                done / elapsed if elapsed > 0 else 0.0,
                self.wall(),
                self.last_eval,
            )
        )

    # -- the whole run ------------------------------------------------------------------------

    def run(self, callbacks: Sequence[Any]) -> TrainReport:
        import torch

        torch.set_num_threads(self.config.threads)
        model = self.start()
        notice = self.plan.notice() if self.plan else None
        if notice and self.on_notice is not None:
            self.on_notice(notice)
        asked = self.config.eval_every
        if asked and asked != self.eval_every and self.on_notice is not None:
            self.on_notice(f"--eval-every {asked:,} falls between rollout boundaries: a curve "
                           f"point every {self.eval_every:,} steps")  # fmt: skip
        self.start_step = int(model.num_timesteps)
        self.segment_start = time.perf_counter()
        self.evaluator = curves.CurveEvaluator(
            self.card.id,
            self.config.eval_episodes,
            masked=self.algo.masked,
            wrappers=self.params.entry.env_wrappers,
        )
        try:  # from run.json's first write on, an interruption leaves a run to --resume
            self.save_record(status="running")
            if self.algo.league:
                from rlbench_suite.baselines.league import league_callback

                settings = self.params.entry.league
                league = model.get_env().league
                callbacks = [league_callback(self.dir, league, settings.snapshot_every),
                             *callbacks]  # fmt: skip
            self.learn(model, callbacks)
            if self.last_eval is None or self.last_eval["step"] < model.num_timesteps:
                self.evaluate(model)
            self.save_record(steps=int(model.num_timesteps), wall_time_s=round(self.wall(), 3))
            self.report(int(model.num_timesteps))
            self.finish(model)
        except BaseException as exc:
            # an error after Ctrl-C is its consequence (onnxruntime's import cut short by it)
            signalled = isinstance(exc, KeyboardInterrupt | SystemExit)
            stopped = signalled or interrupts.stopped_by_signal()
            status = "interrupted" if stopped else "failed"
            self.save_record(
                status=status,
                wall_time_s=round(self.wall(), 3),
                error=None if status == "interrupted" else repr(exc),
            )
            if stopped and not isinstance(exc, SystemExit):
                raise RunInterrupted(self.dir) from exc
            raise
        finally:
            self.evaluator.close()
            model.get_env().close()
        return TrainReport(self.dir, self.record, model)

    def learn(self, model: Any, callbacks: Sequence[Any]) -> None:
        """Train ``model`` to the budget, calling :meth:`at_boundary` between rollouts."""
        assert self.plan is not None
        total = self.budget if self.plan.rounding == LEGACY else self.plan.steps
        model.learn(
            total_timesteps=total - self.start_step,
            reset_num_timesteps=self.start_step == 0,
            callback=[_run_callback(self), *callbacks],
        )

    def save_model(self, model: Any, onnx_path: Path) -> list[str]:
        """The final model in the algorithm's own format and as ONNX; the files written."""
        from rlbench_suite.policies.onnx import export_sb3_to_onnx

        model.save(self.dir / "model.zip")
        normalizer = model.get_vec_normalize_env()
        if normalizer is not None:
            normalizer.save(str(self.dir / "vecnormalize.pkl"))
        norm_obs = normalizer is not None and normalizer.norm_obs
        export_sb3_to_onnx(model, onnx_path, obs_normalization=normalizer if norm_obs else None)
        return ["model.zip"] + (["vecnormalize.pkl"] if normalizer is not None else [])

    def finish(self, model: Any) -> None:
        """The model, policy.onnx (+ sidecar), the harness's result.json; run.json finished."""
        from rlbench_suite.policies.core import PolicyMetadata, write_metadata

        onnx_path = self.dir / "policy.onnx"
        model_files = self.save_model(model, onnx_path)
        steps = int(model.num_timesteps)
        meta = PolicyMetadata(
            name=f"{self.algo.name}-{self.card.name}-seed-{self.config.seed}",
            algo=self.algo.name if self.algo.native else self.algo.class_name,
            env_id=self.card.id,
            train_seeds=self.train_seeds,
            tuning_seeds=self.params.entry.source.tuning_seeds or [],
            training_budget_steps=steps,
            wrappers=list(self.params.entry.env_wrappers),
            extra={
                "run": "run.json",
                "hyperparams_sha256": self.params.sha256,
                "curve_seeds": self.record["curve_seeds"],
            },
        )
        write_metadata(onnx_path, meta)
        for model_file in model_files:  # sb3:model.zip evaluates as trained, too
            if model_file.endswith(".zip"):
                write_metadata(self.dir / model_file, meta)
        self.save_record(wall_time_s=round(self.wall(), 3))
        result = self.final_evaluation(onnx_path)
        files = ["run.json", curves.CURVE_FILE, *model_files, "policy.onnx",
                 "policy.onnx.meta.json", "result.json"]  # fmt: skip
        if self.algo.league:  # league.json and the kept snapshots (league.py)
            files.append("league/")
        self.save_record(
            status="finished",
            finished=_now(),
            steps=steps,
            wall_time_s=round(self.wall(), 3),
            final_score=_score_summary(result),
            files=files,
        )

    def final_evaluation(self, onnx_path: Path) -> Any:
        """The harness's Result of the final policy, in ``result.json``. An evaluation
        interrupted with the run goes on where it stopped; one of an earlier final policy (a
        run resumed from a checkpoint that could not hold its env retrains differently) is
        started over."""
        from rlbench_suite.evaluation import default_protocol, evaluate
        from rlbench_suite.evaluation.runner import episode_log_path
        from rlbench_suite.evaluation.store import OtherEvaluationLog

        protocol = default_protocol(self.card, episodes=self.config.final_episodes)
        out = self.dir / "result.json"
        try:
            return evaluate(self.card, f"onnx:{onnx_path}", protocol,
                            workers=self.config.workers, out=out, resume=True)  # fmt: skip
        except OtherEvaluationLog:
            episode_log_path(out).unlink()
            return evaluate(self.card, f"onnx:{onnx_path}", protocol,
                            workers=self.config.workers, out=out)  # fmt: skip


def _score_summary(result: Any) -> dict[str, Any]:
    """The final evaluation's headline numbers (the full Result is result.json)."""
    data = result.model_dump(mode="json")
    return {
        "protocol_hash": data["protocol_hash"],
        "episodes": len(data["returns"]),
        "aggregates": {k: v["point"] for k, v in data["aggregates"].items()},
        "normalized_score": (data["normalized_score"] or {}).get("point"),
    }
