"""The demo's summary table: each evaluated policy with its method's row on the leaderboard."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlbench_suite.demo.board import ranked, ranked_method

NAMESPACE = "rlbench"
"""The namespace of the suite's ids, left out of the table's cells."""

if TYPE_CHECKING:
    from rlbench_suite.demo.run import Evaluated


def interval(estimate: Any) -> str:
    """``point [low, high]`` of an estimate (an object or a dict), at three significant digits."""
    get = estimate.get if isinstance(estimate, dict) else lambda k: getattr(estimate, k)
    return f"{get('point'):.3g} [{get('low'):.3g}, {get('high'):.3g}]"


def summary_rows(factory: Any,
                 entries: list[Evaluated]) -> tuple[list[tuple[str, ...]], list[str]]:  # fmt: skip
    """The table's rows (env, baseline, IQM [95% CI], over what, verified) and its notes
    (why a result is not verified; which scale a row is on when not the normalized score)."""
    rows, notes = [], []
    for entry in entries:
        row = ranked(factory, entry.stored.result_id)
        if row is None or row.iqm is None:
            score, over = "-", "-"
        else:
            score = interval(row.iqm)
            over = (f"{row.runs} runs, {row.verified_runs} verified" if row.interval_over == "runs"
                    else f"{len(entry.result.returns)} episodes of 1 run")  # fmt: skip
            if not row.scale.startswith("normalized"):
                score += " *"
                notes.append(f"* {entry.card.id}: {row.scale}")
        if entry.shipped is not None:
            notes.append(shipped_note(factory, entry))
        verified = "yes" if entry.why_not is None else "no"
        if entry.shortfall is not None:
            notes.append(f"short of its goal: {entry.card.id} ({entry.label}): "
                         f"{entry.shortfall}")  # fmt: skip
        if entry.why_not is not None:
            why = entry.why_not if len(entry.why_not) <= 200 else entry.why_not[:199] + "…"
            notes.append(f"not verified: {entry.card.id} ({entry.label}): {why}")
        # the rlbench/ namespace left out, and the env from the baseline's label: 80 columns
        name = entry.card.id.removeprefix(f"{NAMESPACE}/")
        rows.append((name, entry.label, score, over, verified))
    return rows, notes


def shipped_note(factory: Any, entry: Evaluated) -> str:
    """Where the shipped baseline a trained policy is set beside stands, kept apart from it."""
    row = ranked_method(factory, entry.card.id, entry.shipped)
    where = (f"{interval(row.iqm)} over {row.runs} runs ({row.verified_runs} verified)"
             if row is not None and row.iqm is not None else "no ranked runs")  # fmt: skip
    return (
        f"{entry.card.id}: its row is only the policy trained just now (method "
        f"'{entry.stored.method}'); the shipped baseline (method '{entry.shipped}') "
        f"stands apart at {where} on the leaderboard"
    )
