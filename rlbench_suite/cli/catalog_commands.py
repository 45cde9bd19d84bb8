"""``rlbench list | info | check | refscores | doctor``: the catalog and its checks."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, get_args

import typer
from rich.table import Table
from rich.text import Text

from rlbench_suite.cli.common import (
    app,
    cards_or_all,
    console,
    fail,
    interval,
    number,
    print_table,
    progress_bar,
    reference_how,
    report_broken_cards,
    score_text,
)
from rlbench_suite.core.cards import EnvCard, Family
from rlbench_suite.core.catalog import (
    card_paths,
    cards,
    closest_ids,
    describe_ids,
    family_label,
    generated_families,
    select_cards,
)
from rlbench_suite.core.seeds import REFERENCE_EPISODES, REFERENCE_FIRST_SEED
from rlbench_suite.core.wording import NORMALIZED_SCALE


@app.command("list")
def list_envs(
    family: Annotated[str | None, typer.Option(help="Only this family.")] = None,
    suite: Annotated[str | None, typer.Option(help="Only cards in this suite.")] = None,
    tag: Annotated[str | None, typer.Option(help="Only cards with this tag.")] = None,
    expand: Annotated[
        bool, typer.Option(help="One row per card, also for generated families.")
    ] = False,
) -> None:
    """Table of the catalog: id, family, API, metric, reference and trained scores.

    Generated families (10 or more cards whose ids differ only in their digits, sharing an
    entry point and suites, like the 144 matrix games) are one row unless --expand. Cells are
    never cut: a narrow terminal leaves out suites, API, family, metric and, last, the
    trained score; piped, nothing is.
    """
    _check_filter("family", family, list(get_args(Family)))
    _check_filter("suite", suite, sorted({s for c in cards().values() for s in c.suites}))
    _check_filter("tag", tag, sorted({t for c in cards().values() for t in c.tags}))
    selected = select_cards(family, suite, tag)
    groups = [[c] for c in selected] if expand else generated_families(selected)
    rows = [_row(group) for group in groups]
    shown = print_table(
        f"rlbench-suite catalog ({len(selected)} environment{'' if len(selected) == 1 else 's'})",
        ["id", "family", "API", "metric", "random", "expert", "trained", "suites"],
        rows,
        optional=("trained", "metric", "family", "API", "suites"),  # the last dropped first
    )
    if "trained" in shown:
        for line in trained_legend([g[0] for g in groups if len(g) == 1]):
            console.print(line, highlight=False, soft_wrap=True)
    summarized = sum(len(g) for g in groups if len(g) > 1)
    if summarized:
        console.print(f"({summarized} generated ids are summarized in one row per family; "
                      "--expand lists them)")  # fmt: skip
    if report_broken_cards() or not selected:
        raise typer.Exit(1)


RAW_MARK = "*"
"""After a trained score that is the raw metric (the card has no expert reference)."""


def trained_text(card: EnvCard) -> str:
    """The best trained baseline: its normalized IQM over seeds with the interval (or the
    metric's, marked :data:`RAW_MARK`, without a normalized score) and its algorithm; '-'
    without one."""
    if not card.trained:
        return "-"
    best = card.trained[0]
    shown = best.normalized or best.value
    mark = "" if best.normalized else RAW_MARK
    return f"{interval(shown.point, shown.low, shown.high, 3)}{mark} {best.algo}"


def trained_legend(listed: list[EnvCard]) -> list[str]:
    """What the trained column's numbers are, under the table: the scale, whose expert is the
    suite's own trained seed, and the raw metrics marked :data:`RAW_MARK` (of ``listed``)."""
    trained = [c for c in listed if c.trained]
    if not trained:
        return []
    lines = ["trained: the best baseline's normalized score, IQM over seeds [95% CI]: "
             f"{NORMALIZED_SCALE} (the card's references)"]  # fmt: skip
    own = sorted({c.suites[0] if c.suites else c.family for c in trained
                  if c.reference.expert and c.reference.expert.policy.startswith("baseline:")})
    if own:
        names = ", ".join(own[:-1]) + (" and " if len(own) > 1 else "") + own[-1]
        lines.append(f"  (the experts of {names} cards are the suite's own best trained seeds)")
    raw = sorted({c.primary_metric for c in trained if not c.trained[0].normalized})
    if raw:
        lines.append(f"  {RAW_MARK} the raw {' or '.join(raw)} [95% CI], not normalized: the card "
                     "has no expert reference")  # fmt: skip
    return lines


def _row(group: list[EnvCard]) -> tuple[str, ...]:
    first = group[0]
    if len(group) == 1:
        return (first.id, first.family, first.api, first.primary_metric,
                score_text(first, "random"), score_text(first, "expert"), trained_text(first),
                ", ".join(first.suites))  # fmt: skip

    def span(kind: str) -> str:
        values = [getattr(c.reference, kind).value for c in group if getattr(c.reference, kind)]
        if not values:
            return "-"
        return f"{number(min(values))} to {number(max(values))}" + (
            f" ({len(values)} of {len(group)})" if len(values) < len(group) else ""
        )

    name = family_label([c.id for c in group])
    trained = sum(bool(c.trained) for c in group)
    return (name, first.family, first.api, first.primary_metric, span("random"),
            span("expert"), f"{trained} of {len(group)}" if trained else "-",
            ", ".join(first.suites))  # fmt: skip


def _check_filter(name: str, value: str | None, known: list[str]) -> None:
    if value is None or value in known:
        return
    close = closest_ids(value, known)
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    raise fail(f"unknown {name} {value!r}.{hint} Accepted: {', '.join(known)}")


def _sample_step(card: EnvCard) -> dict[str, Any]:
    import gymnasium as gym

    from rlbench_suite.policies import RandomPolicy
    from rlbench_suite.previews import describe_space

    env = gym.make(card.id)
    try:
        obs, info = env.reset(seed=0)
        action = RandomPolicy(env.action_space, seed=0).act(obs, info)
        _, reward, terminated, truncated, info = env.step(action)
        return {
            "observation space": describe_space(env.observation_space),
            "action space": describe_space(env.action_space),
            "sample action": action,
            "reward": reward,
            "terminated": terminated,
            "truncated": truncated,
            "info keys": sorted(info),
            "wrapper stack": [w.name for w in env.spec.additional_wrappers] if env.spec else [],
        }
    finally:
        env.close()


@app.command()
def info(
    env_id: Annotated[str, typer.Argument(help="An id, e.g. rlbench/CartPole-v1.")],
    render: Annotated[
        Path | None,
        typer.Option(
            help="Also write what the env looks like, as the docs site shows it: a short GIF "
            "(.gif) or one frame (.png) of seeded play for envs with rgb_array frames, a "
            "transcript (.txt, .md) for the others (text and matrix games)."
        ),
    ] = None,
    policy: Annotated[
        str | None,
        typer.Option(
            help="With --render: a --policy string (default: the card's expert "
            "reference policy, else random)."
        ),
    ] = None,
    seed: Annotated[int, typer.Option(min=0, help="With --render: the first episode's seed.")] = 0,
) -> None:
    """Show a card, the spaces and one sample step; --render writes its picture or transcript."""
    [card] = cards_or_all([env_id])
    if render is not None:
        from rlbench_suite.previews import check_preview_path

        try:
            check_preview_path(render, card)  # before the table: the error is all it prints
        except ValueError as exc:
            raise fail(exc) from None
    table = Table(title=card.id, show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold", max_width=120)
    for key, value in card.model_dump(mode="json", exclude={"reference", "trained"}).items():
        table.add_row(key, str(value))
    for baseline in card.trained:
        shown = baseline.normalized or baseline.value
        scale = "normalized" if baseline.normalized else card.primary_metric
        table.add_row("trained", (
            f"{baseline.name}: {scale} {interval(shown.point, shown.low, shown.high, 3)} (IQM "
            f"over seeds {baseline.seeds}, {baseline.budget_steps:,} steps each, "
            f"{baseline.wall_time_s:,.0f} s in all; {baseline.results}, {baseline.measured})"))
    for kind in ("random", "expert"):
        ref = getattr(card.reference, kind)
        how = "" if ref is None else f" ({reference_how(ref)})"
        table.add_row(f"reference.{kind}", score_text(card, kind) + how)
    table.add_row("normalized score", card.normalization_problem() or NORMALIZED_SCALE)
    table.add_row("card file", str(card_paths()[card.id]))
    try:
        for key, value in _sample_step(card).items():
            table.add_row(key, str(value))
    except ImportError as exc:
        install = f" (pip install 'rlbench-suite[{card.extra}]')" if card.extra else ""
        table.add_row("sample step", Text.assemble((f"cannot create: {exc}", "red"), install))
    console.print(table)
    if render is not None:
        _render(card, render, policy, seed)


def _render(card: EnvCard, path: Path, policy: str | None, seed: int) -> None:
    from rlbench_suite.previews import PreviewOptions, write_preview

    try:
        preview = write_preview(card, path, PreviewOptions(seed=seed, policy=policy))
    except ImportError as exc:
        install = f"pip install 'rlbench-suite[{card.extra or 'plots'}]'"
        raise fail(f"{card.id}: cannot render: {exc} ({install})") from None
    except ValueError as exc:
        raise fail(exc) from None
    for note in preview.notes:
        console.print(Text.assemble(("note:", "yellow"), f" {note}"))
    console.print(preview.summary(), soft_wrap=True)


@app.command()
def check(
    env_ids: Annotated[
        list[str] | None, typer.Argument(help="Ids to check (default: all).")
    ] = None,
    steps: Annotated[int, typer.Option(min=1, help="Steps of the determinism check.")] = 1000,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the determinism check.")] = 0,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show warnings.")] = False,
) -> None:
    """API checks (check_env or api_test + parallel_api_test) and a same-seed determinism check."""
    from rlbench_suite.checks import check_card

    selected = cards_or_all(env_ids)
    results = []
    with progress_bar() as progress:
        task = progress.add_task("checking", total=len(selected))
        for card in selected:
            progress.update(task, description=f"checking {card.id}")
            results.append(check_card(card, seed=seed, steps=steps))
            progress.advance(task)
    table = Table(title=f"rlbench check ({steps} determinism steps, seed {seed})")
    table.add_column("id", no_wrap=True)
    for column in ("API checks", "determinism", "result"):
        table.add_column(column, overflow="fold")
    for result in results:
        api = ", ".join(
            f"{k} {'ok' if v else 'FAIL'}" for k, v in result.passed.items() if k != "determinism"
        )
        det = "ok" if result.passed.get("determinism") else "FAIL"
        table.add_row(
            result.env_id, api, det, Text("pass", "green") if result.ok else Text("FAIL", "red")
        )
    console.print(table)
    for result in results:
        for name, error in result.errors.items():
            console.print(Text.assemble((f"{result.env_id} {name}:", "red"), f" {error}"))
        if verbose:
            for note in result.notes:
                console.print(Text.assemble((result.env_id, "yellow"), f" {note}"))
    unscored: dict[str, list[str]] = {}  # one line per reason, generated families gathered
    for card in selected:
        problem = card.normalization_problem()
        if problem and card.reference.random and card.reference.expert:
            unscored.setdefault(problem, []).append(card.id)
    for problem, ids in unscored.items():
        console.print(Text.assemble((f"{describe_ids(ids)} ", "yellow"),
                                    (f"{'has' if len(ids) == 1 else 'have'} no normalized "
                                     "score: ", "yellow"), problem))  # fmt: skip
    passed = sum(r.ok for r in results)
    failed = len(results) - passed + report_broken_cards()  # broken cards fail any check
    console.print(f"{passed} passed, {failed} failed")
    if failed:
        raise typer.Exit(1)


@app.command()
def refscores(
    env_ids: Annotated[list[str] | None, typer.Argument(help="Ids (default: all).")] = None,
    policy: Annotated[
        str,
        typer.Option(
            help="The reference policy: 'random' (the random reference) or any other "
            "--policy string, e.g. a scripted controller 'module:pkg.mod:Class' (the expert "
            "reference)."
        ),
    ] = "random",
    episodes: Annotated[
        int, typer.Option(min=1, help="Episodes per environment.")
    ] = REFERENCE_EPISODES,
    first_seed: Annotated[
        int, typer.Option(min=0, help="Seed of the first episode.")
    ] = REFERENCE_FIRST_SEED,
    write: Annotated[bool, typer.Option(help="Write the scores onto the cards.")] = False,
    missing: Annotated[
        bool, typer.Option(help="Skip cards that already have this kind of reference score.")
    ] = False,
) -> None:
    """Measure reference scores; with --write, record them on the cards.

    ``--policy random`` (the default) measures the card's random reference; any other policy
    measures its expert reference. Each card is written as soon as it is measured, so an
    interrupted run keeps its finished cards; rerun with --missing to go on where it stopped.
    """
    from rlbench_suite.refscores import measure, write_reference

    kind = "random" if policy.strip() == "random" else "expert"
    selected = [
        c for c in cards_or_all(env_ids) if not (missing and getattr(c.reference, kind) is not None)
    ]
    table = Table(title=f"{kind} reference scores of {policy} ({episodes} episodes)")
    table.add_column("id", no_wrap=True)
    for column in ("metric", "value", "std", "seeds", "written"):
        table.add_column(column)
    with progress_bar() as progress:
        overall = progress.add_task("environments", total=len(selected))
        for card in selected:
            task = progress.add_task(card.id, total=episodes)
            try:
                score = measure(
                    card,
                    policy=policy.strip(),
                    episodes=episodes,
                    first_seed=first_seed,
                    on_episode=lambda t=task: progress.advance(t),
                )
            except (ValueError, FileNotFoundError) as exc:
                raise fail(f"{card.id}: cannot measure policy {policy!r}: {exc}") from None
            if write:
                write_reference(card_paths()[card.id], kind, score)
            progress.remove_task(task)
            progress.advance(overall)
            table.add_row(
                card.id,
                card.primary_metric,
                number(score.value, 6),
                number(score.std, 3),
                f"{first_seed}..{first_seed + episodes - 1}",
                "yes" if write else "no",
            )
    console.print(table)
