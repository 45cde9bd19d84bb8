"""Aggregates of an evaluation's episodes, with intervals, for its :class:`Result`."""

from __future__ import annotations

from typing import Any

import numpy as np

from rlbench_suite.core.cards import EnvCard
from rlbench_suite.core.metrics import interval_estimates, iqm, mean, median, success_rate
from rlbench_suite.core.offline_cards import NORMALIZATION_SCALE, OFFLINE_FAMILY
from rlbench_suite.core.result import EpisodeRecord, IntervalEstimate, Normalization
from rlbench_suite.core.scoring import (
    normalized_interval,
    normalized_score,
    primary_aggregate,
    primary_values,
)

BOOTSTRAP_REPS = 2000
BOOTSTRAP_SEED = 0  # fixed, and recorded in every estimate, so summaries are reproducible


def normalized_values(card: EnvCard, returns: Any, successes: Any) -> np.ndarray | None:
    """Per-episode normalized scores of the primary metric; None without both references."""
    references = card.reference_values()
    if references is None:
        return None
    return normalized_score(primary_values(card.primary_metric, returns, successes), *references)


def episode_normalized_scores(card: EnvCard, episodes: list[EpisodeRecord]) -> np.ndarray | None:
    """The normalized score each episode was given when it ended; None without references.

    Records from episode logs written before episodes carried their score are scored
    here by the same rule (:func:`~rlbench_suite.core.scoring.normalized_score`).
    """
    if card.reference_values() is None:
        return None
    if all(e.normalized_score is not None for e in episodes):
        return np.array([e.normalized_score for e in episodes], dtype=float)
    return normalized_values(card, [e.r for e in episodes], [e.success for e in episodes])


def summarize(card: EnvCard, episodes: list[EpisodeRecord]) -> dict[str, Any]:
    """``aggregates`` and ``normalized_score`` of a result.

    Aggregates: the mean, median and interquartile mean of the returns with bootstrap
    intervals, and the success rate with a Wilson interval. The normalized score is the
    mean of the episodes' normalized scores (the primary metric on the card's 0 (random) to
    100 (expert) scale), with the interval of the primary metric's own aggregate (the mean
    return's bootstrap interval, or the success rate's Wilson interval) mapped through the
    same normalization, so the two never disagree; None until the card has both references.
    """
    returns = np.array([e.r for e in episodes])
    estimates = interval_estimates(
        returns, ("mean", "median", "iqm"), reps=BOOTSTRAP_REPS, random_state=BOOTSTRAP_SEED
    )
    aggregates = {f"return_{k}": IntervalEstimate(**v.as_dict()) for k, v in estimates.items()}
    rate = success_rate(np.array([e.success for e in episodes]))
    aggregates["success_rate"] = IntervalEstimate(**rate.as_dict())
    normalized = None
    values = episode_normalized_scores(card, episodes)
    references = card.reference_values()
    if values is not None and references is not None:
        primary = aggregates[primary_aggregate(card.primary_metric)]
        low, high = normalized_interval(primary.low, primary.high, *references)
        normalized = primary.model_copy(update={
            "point": float(values.mean()), "low": low, "high": high,
            "method": f"{primary.method}, mapped through the normalization",
        })  # fmt: skip
    return {
        "aggregates": aggregates,
        "normalized_score": normalized,
        "normalization": normalization_of(card) if normalized is not None else None,
    }


def normalization_of(card: EnvCard) -> Normalization | None:
    """The :class:`Normalization` a result on ``card`` records: an offline id's (its dataset's
    references, on :data:`~rlbench_suite.core.offline_cards.NORMALIZATION_SCALE`); None for an
    environment card, whose result is on its own references."""
    references = card.reference_values()
    if card.family != OFFLINE_FAMILY or references is None:
        return None
    return Normalization(references_from=f"dataset {card.id}", metric=card.primary_metric,
                         random=references[0], expert=references[1],
                         scale=NORMALIZATION_SCALE)  # fmt: skip


def episodes_of(seeds: list[int], returns: list[float], lengths: list[int],
                successes: list[bool]) -> list[EpisodeRecord]:  # fmt: skip
    """A Result's per-episode lists as the records :func:`summarize` takes."""
    return [EpisodeRecord(index=i, seed=s, r=r, l=n, success=ok) for i, (s, r, n, ok)
            in enumerate(zip(seeds, returns, lengths, successes, strict=True))]  # fmt: skip


def with_figures(card: EnvCard, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (a Result's JSON) with its ``aggregates`` and ``normalized_score`` computed
    from its own episode lists under ``card``, as the harness writes them (for results made
    by other means: synthetic loads, tests)."""
    episodes = episodes_of(data["seeds"], data["returns"], data["lengths"], data["successes"])
    figures = summarize(card, episodes)
    data["aggregates"] = {k: v.model_dump(mode="json") for k, v in figures["aggregates"].items()}
    normalized = figures["normalized_score"]
    data["normalized_score"] = normalized.model_dump(mode="json") if normalized else None
    return data


def summary_points(card: EnvCard, episodes: list[EpisodeRecord]) -> dict[str, float | None]:
    """The points of :func:`summarize`'s figures without their intervals (no bootstrap):
    ``aggregates.<name>`` for each aggregate and ``normalized_score`` (None without
    references), computed by the same functions."""
    returns = np.array([e.r for e in episodes])
    points: dict[str, float | None] = {
        f"aggregates.return_{name}": function(returns)
        for name, function in (("mean", mean), ("median", median), ("iqm", iqm))
    }
    points["aggregates.success_rate"] = success_rate([e.success for e in episodes]).point
    values = episode_normalized_scores(card, episodes)
    points["normalized_score"] = None if values is None else float(values.mean())
    return points


def reference_differences(card: EnvCard, named: Normalization | None) -> list[str]:
    """Where the references a Result names (its ``normalization``) are not ``card``'s (an
    offline id's: its dataset's, :func:`normalization_of`): one line per field, saying what
    the card has; empty when they agree or the Result names none (it is on the card's own)."""
    if named is None:
        return []
    expected = normalization_of(card)
    if expected is None:
        references = card.reference_values()
        has = "no normalized score (it lacks a reference)"
        if references is not None:
            has = f"its own references (random {references[0]:.6g}, expert {references[1]:.6g})"
        return [f"normalization: the file names {named.references_from}'s references, but "
                f"{card.id} is scored on {has}"]  # fmt: skip
    problems = []
    for field in ("references_from", "metric", "random", "expert"):
        theirs, mine = getattr(named, field), getattr(expected, field)
        same = (np.isclose(theirs, mine, rtol=1e-9, atol=0.0) if isinstance(mine, float)
                else theirs == mine)  # fmt: skip
        if not same:
            problems.append(f"normalization.{field} {theirs!r} differs from {card.id}'s card, "
                            f"which has {mine!r}")  # fmt: skip
    return problems


def summary_differences(card: EnvCard, doc: Any, rel_tol: float = 1e-6) -> list[str]:
    """Where a Result's figures disagree with its own episodes under ``card``: the references
    it names against the card's (:func:`reference_differences`), each aggregate's point (and
    the ``normalized_score``'s, when it has one) against :func:`summary_points`, each interval
    against its point (``low <= point <= high``) and the normalized score's interval against
    the primary aggregate's mapped through the card's references; one line per problem, empty
    when they agree. Other intervals are not recomputed (their bootstrap settings are
    recorded with them and may change between versions); points are plain functions of the
    episodes."""
    problems = reference_differences(card, doc.normalization)
    other_references = bool(problems)
    computed = summary_points(card, episodes_of(doc.seeds, doc.returns, doc.lengths,
                                                doc.successes))  # fmt: skip
    figures = {f"aggregates.{k}": v for k, v in doc.aggregates.items()}
    figures["normalized_score"] = doc.normalized_score
    for name, mine in computed.items():
        theirs = figures.get(name)
        if name == "normalized_score" and (theirs is None or other_references):
            continue  # a result may leave it out; on other references it is not the card's
        if theirs is None:
            problems.append(f"{name} is missing")
        elif mine is None:
            problems.append(f"{name}: {card.id} has no normalized score (it lacks a reference)")
        elif not np.isclose(theirs.point, mine, rtol=rel_tol, atol=1e-9):
            on = f" on {card.id}'s references" if name == "normalized_score" else ""
            problems.append(f"{name} {theirs.point:.6g} vs {mine:.6g} from the episodes{on}")
        elif not theirs.low - 1e-9 <= theirs.point <= theirs.high + 1e-9:
            problems.append(f"{name}'s interval [{theirs.low:.6g}, {theirs.high:.6g}] does not "
                            f"hold its point {theirs.point:.6g}")  # fmt: skip
        elif name == "normalized_score":
            problems += _normalized_interval_differences(card, doc, rel_tol)
    return problems


def _normalized_interval_differences(card: EnvCard, doc: Any, rel_tol: float) -> list[str]:
    """The normalized score's interval against the primary aggregate's mapped through the
    card's references (as :func:`summarize` makes it)."""
    references = card.reference_values()
    name = primary_aggregate(card.primary_metric)
    primary = doc.aggregates.get(name)
    if references is None or primary is None:
        return []  # said already: no normalized score, or the aggregate is missing
    low, high = normalized_interval(primary.low, primary.high, *references)
    theirs = doc.normalized_score
    if np.allclose([theirs.low, theirs.high], [low, high], rtol=rel_tol, atol=1e-9):
        return []
    return [f"normalized_score's interval [{theirs.low:.6g}, {theirs.high:.6g}] vs "
            f"[{low:.6g}, {high:.6g}]: aggregates.{name}'s interval on {card.id}'s references "
            f"(random {references[0]:.6g}, expert {references[1]:.6g})"]  # fmt: skip
