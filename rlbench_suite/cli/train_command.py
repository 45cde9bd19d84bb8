"""``rlbench train ID --algo ALGO``: train a reference baseline (rlbench_suite.baselines.train)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
)

from rlbench_suite import interrupts
from rlbench_suite.baselines.algorithms import ALGORITHMS
from rlbench_suite.cli.common import (
    PIPED_EVERY_S,
    app,
    console,
    errors,
    interval,
    number,
    stopped,
    usable_folder,
)


class _Display:
    """Steps, steps/s, the last curve point and the ETA: a rich bar on a terminal, else a
    plain line per curve point (and at most one every 30 s between them). The bar starts
    with the first progress report, so that a run refused before training shows none."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.bar: Progress | None = None
        self.task = None
        self.last_line = 0.0
        self.last_eval_step: int | None = None

    def __enter__(self) -> _Display:
        return self

    def _start_bar(self) -> None:
        if console.is_terminal:  # the title on its own line: the bar's row fits 80 columns
            console.print(self.title, style="bold", highlight=False)
            self.bar = Progress(
                BarColumn(bar_width=None),
                MofNCompleteColumn(),
                TextColumn("{task.fields[speed]}"),
                TextColumn("{task.fields[evaluation]}"),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=console,
            )
            self.bar.__enter__()
            self.task = self.bar.add_task(self.title, total=None, speed="", evaluation="")

    def notice(self, line: str) -> None:
        """A budget that is not a whole number of rollouts, said before training (budget.py),
        under the run's title on a terminal."""
        if self.bar is None and console.is_terminal:
            self._start_bar()
        console.print(f"note: {line}", soft_wrap=True, highlight=False)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.__exit__(*exc)

    def __call__(self, p) -> None:  # a TrainProgress
        evaluation = ""
        if p.last_eval is not None:
            evaluation = f"return@{p.last_eval['step']}: {p.last_eval['mean_return']:.4g}"
        speed = f"{p.steps_per_s:,.0f} steps/s"
        if self.bar is None and console.is_terminal:
            self._start_bar()
        if self.bar is not None:
            self.bar.update(
                self.task,
                total=p.budget,
                completed=min(p.step, p.budget),
                speed=speed,
                evaluation=evaluation,
            )
            return
        new_eval = p.last_eval is not None and p.last_eval["step"] != self.last_eval_step
        if new_eval or time.monotonic() - self.last_line > PIPED_EVERY_S:
            self.last_line = time.monotonic()
            self.last_eval_step = p.last_eval["step"] if p.last_eval else None
            eta = f"{max(p.budget - p.step, 0) / p.steps_per_s:.0f}s" if p.steps_per_s else "?"
            console.print(
                f"{self.title}: step {p.step}/{p.budget}  {speed}  {evaluation}  "
                f"elapsed {p.elapsed_s:.0f}s  ETA {eta}",
                highlight=False,
                soft_wrap=True,
            )


@app.command("train")
def train_command(
    env_id: Annotated[str, typer.Argument(
        help="The environment id (rlbench/CartPole-v1), or an offline id for --algo bc, td3bc, "
        "iql, cql (rlbench/QuadHover-medium-v0).")],
    algo: Annotated[
        str,
        typer.Option(help=f"One of: {', '.join(ALGORITHMS)}."),
    ],
    seed: Annotated[int, typer.Option(help="Training seed (0-9999).")] = 0,
    budget: Annotated[
        int | None,
        typer.Option(min=1, help="Environment steps; gradient steps for offline algorithms "
                     "(default: n_timesteps)."),
    ] = None,
    hyperparams: Annotated[
        Path | None,
        typer.Option(help="YAML file, same shape as baselines/hyperparams/<algo>.yaml."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(help="Runs folder (default: runs/ in $RLBENCH_DATA_DIR or the data dir)."),
    ] = None,
    resume: Annotated[
        bool, typer.Option(help="Continue the run in that folder from its last checkpoint.")
    ] = False,
    device: Annotated[str, typer.Option(
        help="torch device: cpu, cuda, cuda:N or auto (CUDA if torch has it); fast_ppo and "
        "the offline algorithms: cpu or auto.")] = "cpu",
    eval_every: Annotated[
        int | None, typer.Option(min=1, help="Steps between curve points (default: budget/20).")
    ] = None,
    eval_episodes: Annotated[int, typer.Option(min=1, help="Episodes per curve point.")] = 5,
    checkpoint_every: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Steps between checkpoints (default: eval-every); "
            "offline runs also at least every 5 minutes.",
        ),
    ] = None,
    final_episodes: Annotated[
        int | None, typer.Option(min=1, help="Final evaluation episodes (default: card's).")
    ] = None,
    workers: Annotated[int, typer.Option(min=1, help="Final evaluation workers.")] = 1,
) -> None:
    """Train a baseline; checkpoint, write the learning curve, export ONNX and score it.

    The run folder is OUT/<env-name>/<algo>/seed-<S>/ (docs/baselines.md).
    """
    from rlbench_suite import UnknownEnvError
    from rlbench_suite.baselines.algorithms import UnknownAlgorithmError
    from rlbench_suite.baselines.hyperparams import HyperparamsError
    from rlbench_suite.baselines.train import RunInterrupted, TrainConfig, TrainError, train
    from rlbench_suite.datasets.storage import DatasetFileError
    from rlbench_suite.paths import runs_dir

    usable_folder(out or runs_dir(), "--out" if out is not None else "the runs folder",
                  "can_make")  # made by the run, once its env and algorithm are known
    config = TrainConfig(
        env_id=env_id,
        algo=algo,
        seed=seed,
        budget=budget,
        hyperparams=hyperparams,
        out=out,
        resume=resume,
        device=device,
        eval_every=eval_every,
        eval_episodes=eval_episodes,
        checkpoint_every=checkpoint_every,
        final_episodes=final_episodes,
        workers=workers,
    )
    try:
        try:
            with _Display(f"{env_id} {_algo_name(algo)} seed {seed}") as display:
                report = train(config, on_progress=display, on_notice=display.notice)
        except Exception:
            if interrupts.stopped_by_signal():  # an error the signal caused (an import it cut)
                raise KeyboardInterrupt from None
            raise
    except (UnknownAlgorithmError, UnknownEnvError, HyperparamsError, TrainError, ImportError,
            DatasetFileError) as e:  # fmt: skip
        # one line, unwrapped, so it can be grepped and read in logs
        errors.print(f"error: {e}".replace("\n", " "), soft_wrap=True,
                     highlight=False)
        raise typer.Exit(2) from None
    except RunInterrupted as cut:
        from rlbench_suite.baselines.checkpoints import latest_checkpoint

        where = ("from the last checkpoint" if latest_checkpoint(cut.run_dir) is not None
                 else "(no checkpoint yet: it starts over)")  # fmt: skip
        raise stopped(f"interrupted; continue {where} with the same command and --resume "
                      f"(run folder: {cut.run_dir})") from None  # fmt: skip
    except KeyboardInterrupt:  # before the run folder had its run.json: nothing to resume
        raise stopped("interrupted before training started; run the same command again") from None
    console.print(final_line(report.run, report.run_dir / "result.json"), soft_wrap=True)
    console.print(f"run folder: {report.run_dir}", soft_wrap=True, highlight=False)


def _algo_name(asked: str) -> str:
    """The algorithm's own name for ``--algo asked`` (``IQL``: ``iql``), else as asked (the
    run refuses it, naming the accepted ones)."""
    from rlbench_suite.baselines.algorithms import UnknownAlgorithmError, get_algorithm

    try:
        return get_algorithm(asked).name
    except UnknownAlgorithmError:
        return asked


def final_line(run: dict, result_file: Path) -> str:
    """``trained N steps in T s; final evaluation (E episodes): mean return R, normalized
    score S [low, high] (0 = random, 100 = expert), success rate P [low, high]``: the
    normalized score and success rate as the harness's Result has them (core.summary), the
    success rate where the card has a success rule."""
    from rlbench_suite.core.offline_cards import resolve_card
    from rlbench_suite.core.result import load_result
    from rlbench_suite.core.wording import NORMALIZED_SCALE

    head = f"trained {run['steps']:,} steps in {run['wall_time_s']:.1f} s"
    if not result_file.is_file():
        return head
    result = load_result(result_file)
    parts = [f"mean return {number(result.aggregates['return_mean'].point)}"]
    score = result.normalized_score
    parts.append("normalized score " + (f"{interval(score.point, score.low, score.high, 3)} "
                                        f"({NORMALIZED_SCALE})"
                                        if score is not None else "- (the card has no expert "
                                        "reference)"))  # fmt: skip
    rate = result.aggregates.get("success_rate")
    if rate is not None and resolve_card(result.env_id).success is not None:
        parts.append(f"success rate {interval(rate.point, rate.low, rate.high, 3)}")
    return f"{head}; final evaluation ({len(result.returns)} episodes): {', '.join(parts)}"
