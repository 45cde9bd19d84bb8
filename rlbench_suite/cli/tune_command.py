"""``rlbench tune ID --algo ALGO``: tune hyperparameters (rlbench_suite.baselines.tune)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.progress import Progress, TextColumn

from rlbench_suite import interrupts
from rlbench_suite.cli.common import app, console, fail, progress_bar, stopped


class _Display:
    """Trials done, pruned and the best so far: a rich bar on a terminal, else a line a trial."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.bar: Progress | None = None
        self.task = None
        self.last_done = -1

    def __enter__(self) -> _Display:
        if console.is_terminal:
            self.bar = progress_bar(TextColumn("{task.fields[best]}"))
            self.bar.__enter__()
            self.task = self.bar.add_task(self.title, total=None, best="")
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.__exit__(*exc)

    def __call__(self, p) -> None:  # a TuneProgress
        best = f"best {p.best_value:.4g} (trial {p.best_trial})" if p.best_value is not None else ""
        best += f"  pruned {p.pruned}" if p.pruned else ""
        if self.bar is not None:
            self.bar.update(self.task, total=p.total, completed=min(p.done, p.total), best=best)
        elif p.done != self.last_done:
            self.last_done = p.done
            console.print(
                f"{self.title}: trials {p.done}/{p.total}  {best}",
                highlight=False,
                soft_wrap=True,
            )


_INTERRUPTED = "interrupted; continue the study with the same command and --resume"


@app.command("tune")
def tune_command(
    env_id: Annotated[str, typer.Argument(help="The environment id, e.g. rlbench/CartPole-v1.")],
    algo: Annotated[str, typer.Option(help="ppo, a2c, dqn, sac or td3.")],
    trials: Annotated[
        int, typer.Option(min=1, help="Trials in the study (with --resume: in all).")
    ] = 10,
    budget: Annotated[
        int | None, typer.Option(min=1, help="Steps per trial (default: the entry's n_timesteps).")
    ] = None,
    backend: Annotated[str, typer.Option(help="local (this process) or ray (Ray Tune).")] = "local",
    study_dir: Annotated[
        Path | None,
        typer.Option(help="Study folder (default: studies/<env>/<algo>/ in the data dir)."),
    ] = None,
    resume: Annotated[bool, typer.Option(help="Continue the study stored in --study-dir.")] = False,
    hyperparams: Annotated[
        Path | None, typer.Option(help="Base entries' YAML file (default: the suite's).")
    ] = None,
    write: Annotated[
        Path | None, typer.Option(help="Write the best entry here (default: the suite's file).")
    ] = None,
    no_write: Annotated[bool, typer.Option(help="Write no entry.")] = False,
    evaluations: Annotated[int, typer.Option(min=1, help="Evaluations per trial (pruning).")] = 10,
    eval_episodes: Annotated[int, typer.Option(min=1, help="Episodes per evaluation.")] = 5,
    startup_trials: Annotated[
        int, typer.Option(min=0, help="Random trials before TPE and pruning act.")
    ] = 5,
) -> None:
    """Tune hyperparameters with Optuna (TPE, median pruning) on tuning seeds only.

    The best trial's entry goes into baselines/hyperparams/<algo>.yaml (or --write) with the
    study's summary as its source (docs/baselines.md).
    """
    from rlbench_suite import UnknownEnvError
    from rlbench_suite.baselines.algorithms import UnknownAlgorithmError
    from rlbench_suite.baselines.hyperparams import HyperparamsError
    from rlbench_suite.baselines.train import TrainError
    from rlbench_suite.baselines.tune import TuneConfig, tune

    config = TuneConfig(
        env_id=env_id,
        algo=algo,
        trials=trials,
        budget=budget,
        backend=backend,
        study_dir=study_dir,
        resume=resume,
        hyperparams=hyperparams,
        write=write,
        no_write=no_write,
        evaluations=evaluations,
        eval_episodes=eval_episodes,
        startup_trials=startup_trials,
    )
    try:
        with _Display(f"tune {env_id} {algo}") as display:
            report = tune(config, on_progress=display)
    except (UnknownAlgorithmError, UnknownEnvError, HyperparamsError, TrainError, ImportError) as e:
        if interrupts.stopped_by_signal():  # an import the signal cut short
            raise stopped(_INTERRUPTED) from None
        raise fail(e) from None
    except KeyboardInterrupt:
        raise stopped(_INTERRUPTED) from None
    console.print(
        f"{report.trials} trials ({report.pruned} pruned) in {report.wall_time_s:.1f} s; best "
        f"mean return {report.best_value:.4g}",
        soft_wrap=True,
    )
    console.print(f"study: {report.study_dir}", soft_wrap=True, highlight=False)
    if report.written:
        console.print(f"wrote the best entry to {report.written}", soft_wrap=True, highlight=False)
