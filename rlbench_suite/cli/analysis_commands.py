"""``rlbench benchmark | results compare | results plot | tournament``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import numpy as np
import typer
from rich.table import Table

from rlbench_suite.cli.common import app, console, fail, progress_bar
from rlbench_suite.cli.eval_commands import checked_result, results_app
from rlbench_suite.core.catalog import UnknownEnvError
from rlbench_suite.core.result import IntervalEstimate, Result
from rlbench_suite.paths import results_dir
from rlbench_suite.policies.names import display_name


def _load_all(files: list[Path]) -> list[Result]:
    return [checked_result(path) for path in files]


@app.command()
def benchmark(
    suite: Annotated[str, typer.Argument(help="A suite of cards, e.g. classic-control.")],
    policy: Annotated[str, typer.Option(help="The policy spec.")],
    episodes: Annotated[int | None, typer.Option(min=1, help="Episodes per env.")] = None,
    workers: Annotated[int | None, typer.Option(min=1, help="Workers per env.")] = None,
    backend: Annotated[str, typer.Option(help="local or ray.")] = "local",
    out_dir: Annotated[
        Path | None, typer.Option(help="Where results go (default: <data dir>/results).")
    ] = None,
    resume: Annotated[bool, typer.Option(help="Keep finished envs, continue the rest.")] = False,
) -> None:
    """Evaluate a policy on every card of a suite: one result per env and an aggregate."""
    from rlbench_suite.evaluation.suite import run_suite, suite_cards

    try:
        total = len(suite_cards(suite))
    except ValueError as exc:
        raise fail(str(exc)) from None
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in policy)
    directory = (out_dir or results_dir()) / suite / safe
    with progress_bar() as progress:
        task = progress.add_task(f"suite {suite}", total=total)
        try:
            results, summary = run_suite(
                suite, policy, directory, episodes=episodes, workers=workers, backend=backend,
                resume=resume, on_env=lambda card: progress.update(task, description=card.id),
            )  # fmt: skip
        except (ValueError, FileExistsError, FileNotFoundError, UnknownEnvError) as exc:
            raise fail(str(exc)) from None
        progress.update(task, completed=total)
    table = Table(title=f"{suite}: {display_name(policy)}")
    for column in ("env", "mean return", "95% interval", "success rate"):
        table.add_column(column)
    for result in results:
        mean, rate = result.aggregates["return_mean"], result.aggregates["success_rate"]
        table.add_row(result.env_id, f"{mean.point:.4g}", f"[{mean.low:.4g}, {mean.high:.4g}]",
                      f"{rate.point:.2f}")  # fmt: skip
    console.print(table)
    if summary.aggregates:
        for name, est in summary.aggregates.items():
            console.print(f"normalized {name}: {est.point:.1f} [{est.low:.1f}, {est.high:.1f}]")
    if summary.unscored:
        console.print(
            f"not in the aggregate (no expert reference yet): {len(summary.unscored)} envs"
        )
    console.print(f"results and summary.json written to {directory}")


@results_app.command("compare")
def results_compare(
    first: Annotated[Path, typer.Argument(help="Result A.")],
    second: Annotated[Path, typer.Argument(help="Result B.")],
) -> None:
    """Compare two results of the same protocol: the normalized score first where there is one,
    the aggregates, A - B, and P(A > B) on returns."""
    from rlbench_suite.core.metrics import probability_of_improvement
    from rlbench_suite.evaluation.plots import policy_labels

    a, b = _load_all([first, second])
    if a.spec_hash != b.spec_hash:
        raise fail(
            f"{first} and {second} were evaluated on different definitions of {a.env_id} "
            "(spec hashes differ); results of different environments are never compared"
        )
    if a.protocol_hash != b.protocol_hash:
        raise fail(
            f"{first} and {second} were evaluated under different protocols "
            f"({a.protocol.protocol_id} vs {b.protocol.protocol_id}); results of different "
            "protocols are never compared"
        )
    label_a, label_b = policy_labels([a, b])
    table = Table(title=f"{a.env_id}: A = {label_a}, B = {label_b}")
    rows = [(name, a.aggregates[name], b.aggregates[name]) for name in a.aggregates]
    scored = a.normalized_score is not None or b.normalized_score is not None
    if scored:  # the headline number (an offline id's, D4RL's): first, with A - B
        rows.insert(0, ("normalized_score", a.normalized_score, b.normalized_score))
    for column in ("metric", "A", "B", *(["A - B"] if scored else [])):
        table.add_column(column)
    same_scale = _references(a) == _references(b)
    for name, ea, eb in rows:
        difference = []
        if scored:  # normalized scores on other references have no difference
            same = name != "normalized_score" or same_scale
            difference = [f"{ea.point - eb.point:+.4g}" if ea and eb and same else "-"]
        table.add_row(name, _estimate(ea), _estimate(eb), *difference)
    console.print(table)
    if scored and not same_scale:
        console.print(f"normalized_score: A is on {_references(a)}, B on {_references(b)}: "
                      "other references, so no difference")  # fmt: skip
    p = probability_of_improvement(np.array(a.returns)[:, None], np.array(b.returns)[:, None],
                                   random_state=0)  # fmt: skip
    console.print(f"P(return of A > return of B) = {p.point:.3f} [{p.low:.3f}, {p.high:.3f}]")


def _estimate(estimate: IntervalEstimate | None) -> str:
    """``point [low, high]``, or ``-`` where the result has no such figure."""
    if estimate is None:
        return "-"
    return f"{estimate.point:.4g} [{estimate.low:.4g}, {estimate.high:.4g}]"


def _references(result: Result) -> str:
    """The references a result's normalized score is on, as words."""
    named = result.normalization
    if named is None:
        return f"{result.env_id}'s card's references"
    return f"{named.metric} random {named.random:.6g}, expert {named.expert:.6g}"


@results_app.command("plot")
def results_plot(
    files: Annotated[list[Path], typer.Argument(help="Result JSON files.")],
    out: Annotated[Path, typer.Option(help="The figure, .png or .svg.")] = Path("results.png"),
) -> None:
    """Per-env bars with intervals, aggregate estimates and performance profiles."""
    from rlbench_suite.evaluation.plots import plot_results

    try:
        path = plot_results(_load_all(files), out)
    except ValueError as exc:
        raise fail(str(exc)) from None
    console.print(f"figure written to {path}")


def _interval_text(low: float, high: float) -> str:
    """``[low, high]``, with an open end where the interval is unbounded."""
    left = "(-∞" if low == -np.inf else f"[{low:.0f}"
    right = "∞)" if high == np.inf else f"{high:.0f}]"
    return f"{left}, {right}"


@app.command()
def tournament(
    env_id: Annotated[str, typer.Argument(help="A two-player card, e.g. rlbench/TicTacToe-v3.")],
    policy: Annotated[
        list[str],
        typer.Option(help="A player's policy spec, optionally labelled: LABEL=SPEC (repeat)."),
    ],
    games: Annotated[int, typer.Option(min=1, help="Games per pairing (seats alternate).")] = 10,
    first_seed: Annotated[
        int | None, typer.Option(min=0, help="Seed of each pairing's first game (default: card's).")
    ] = None,
) -> None:
    """Round-robin tournament; maximum-likelihood Elo ratings with credible intervals."""
    from rlbench_suite.evaluation.ratings import RATING_NOTE
    from rlbench_suite.evaluation.tournament import round_robin

    players = len({p.strip() for p in policy})
    with progress_bar() as progress:
        task = progress.add_task("games", total=players * (players - 1) // 2 * games)
        try:
            standings = round_robin(env_id, policy, games=games, first_seed=first_seed,
                                    on_game=lambda: progress.advance(task))  # fmt: skip
        except (ValueError, FileNotFoundError, UnknownEnvError) as exc:
            raise fail(str(exc)) from None
    table = Table(title=f"{env_id}: {games} games per pairing")
    table.add_column("policy", no_wrap=True)
    for column in ("Elo", "95% interval", "W", "D", "L"):
        table.add_column(column, justify="right", no_wrap=True)
    for s in standings:
        assert s.rating is not None
        table.add_row(s.name, f"{s.rating.point:.0f}", _interval_text(s.rating.low, s.rating.high),
                      str(s.wins), str(s.draws), str(s.losses))  # fmt: skip
    console.print(table)
    console.print(RATING_NOTE + ".")
    for s in standings:
        assert s.rating is not None
        if s.rating.high == np.inf:
            console.print(f"{s.name} won every game: its games bound its rating only from "
                          "below (no upper end).")  # fmt: skip
        if s.rating.low == -np.inf:
            console.print(f"{s.name} lost every game: its games bound its rating only from "
                          "above (no lower end).")  # fmt: skip
    for s in standings:
        if s.name != s.spec:
            console.print(f"{s.name} = {s.spec}", soft_wrap=True)


@app.command()
def exploit(
    env_id: Annotated[str, typer.Argument(help="A card, e.g. rlbench/Duel-v0.")],
    opponent: Annotated[
        str | None,
        typer.Option(help="Policy spec every other agent plays (default: the card's)."),
    ] = None,
    budget: Annotated[int, typer.Option(min=1, help="PPO training steps.")] = 20_000,
    episodes: Annotated[
        int | None, typer.Option(min=1, help="Evaluation episodes (default: card's).")
    ] = None,
    seed: Annotated[int, typer.Option(min=0, help="Training seed.")] = 0,
    out: Annotated[Path | None, typer.Option(help="Write the report as JSON.")] = None,
) -> None:
    """Estimate how exploitable a policy is: train a best response for a fixed budget."""
    import json

    from rlbench_suite.evaluation.exploitability import best_response_exploitability

    with console.status(f"training a best response for {budget} steps"):
        try:
            report = best_response_exploitability(
                env_id, opponent, budget=budget, episodes=episodes, seed=seed
            )
        except (ValueError, FileNotFoundError, UnknownEnvError, ImportError) as exc:
            raise fail(str(exc)) from None
    m, w = report.mean_return, report.win_rate
    console.print(
        f"{report.env_id} vs {opponent or 'the card opponents'}: best response after "
        f"{budget} steps scores {m.point:.3g} [{m.low:.3g}, {m.high:.3g}] per episode, "
        f"wins {w.point:.0%} [{w.low:.0%}, {w.high:.0%}] over {len(report.eval_seeds)} episodes"
    )
    if out is not None:
        out.write_text(json.dumps(report.as_dict(), indent=2, default=str) + "\n")
        console.print(f"report written to {out}")
