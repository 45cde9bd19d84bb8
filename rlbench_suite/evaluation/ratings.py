"""Competitive multi-agent metrics: win rate, and Elo ratings fitted to a tournament.

Elo ratings here are the maximum-likelihood Bradley-Terry fit of all matches at once, not
sequential Elo updates (which depend on the order the games were played): player ``a``
scores against ``b`` with probability ``1 / (1 + 10 ** ((R_b - R_a) / scale))``, a draw
counting as half a win and half a loss.

A player that won every game has no finite maximum-likelihood rating, so fits take an
optional prior of ``prior_draws`` virtual draws per pairing that was played (as Coulom's
BayesElo does); one virtual draw is a Jeffreys ``Beta(1/2, 1/2)`` prior on each pairing's
score rate. Intervals (:func:`elo_intervals`) either bootstrap the matches of each pairing
(``method="bootstrap"``) or draw each pairing's score rate from its Beta posterior under that
prior (``method="posterior"``). The bootstrap cannot resample a loss that never happened,
so it collapses for perfect and near-perfect records; the posterior does not. With either,
a player that won every game gets ``high = inf`` (its games bound its rating only from
below) and one that scored in none gets ``low = -inf``.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any, Literal

import numpy as np

from rlbench_suite.core.metrics import (
    Estimate,
    _check_confidence,
    _check_reps,
    _interval,
    resolve_random_state,
    wilson_interval,
)

Match = tuple[Hashable, Hashable, float]
ENCODINGS = {"score": (0.0, 0.5, 1.0), "sign": (-1.0, 0.0, 1.0)}
ELO_BOOTSTRAP_METHOD = "pairing-bootstrap-percentile"
ELO_POSTERIOR_METHOD = "pairing-beta-posterior-percentile"
ELO_METHODS = {"bootstrap": ELO_BOOTSTRAP_METHOD, "posterior": ELO_POSTERIOR_METHOD}
# the tournament ratings' settings (`rlbench tournament`, the leaderboard's tournament Elo):
# one virtual draw per pairing keeps ratings finite when a player wins every game
PRIOR_DRAWS = 1.0
RATING_METHOD = "posterior"
RATING_NOTE = (
    "Elo: Bradley-Terry maximum likelihood with one virtual draw per pairing (a Jeffreys "
    "prior on each pairing's score rate); intervals: 95% credible intervals under that prior"
)


def win_rate(
    outcomes: Any, *, encoding: Literal["score", "sign"] = "score", confidence: float = 0.95
) -> Estimate:
    """Score fraction ``(wins + draws / 2) / games`` with a Wilson interval.

    ``encoding="score"``: outcomes are 1 (win), 0.5 (draw), 0 (loss), e.g. ``score_a`` of
    matches. ``encoding="sign"``: outcomes are +1 (win), 0 (draw), -1 (loss), e.g. the sign of
    a zero-sum return. Without draws this is the fraction of games won; with draws the
    Wilson interval treats ``wins + draws / 2`` as the binomial success count.
    """
    if encoding not in ENCODINGS:
        raise ValueError(f"unknown encoding {encoding!r}; accepted: {', '.join(ENCODINGS)}")
    try:
        values = np.asarray(outcomes, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        values = np.array([np.nan])
    if values.size == 0:
        raise ValueError("outcomes is empty; at least one game is needed")
    allowed = ENCODINGS[encoding]
    if not np.isin(values, allowed).all():
        hint = "; for +1/0/-1 outcomes pass encoding='sign'" if encoding == "score" else ""
        raise ValueError(
            f"with encoding={encoding!r} outcomes must be in {set(allowed)} (win 1, draw, loss)"
            + hint
        )
    if encoding == "sign":
        values = (values + 1.0) / 2.0
    score, games = float(values.sum()), values.size
    low, high = wilson_interval(score, games, confidence)
    return Estimate(score / games, low, high, _check_confidence(confidence), "wilson")


# ---------------------------------------------------------------- tallying a tournament


def _tally(matches: Iterable[Match]) -> tuple[list[Hashable], dict[tuple[int, int], np.ndarray]]:
    """The players (in order of first appearance) and, per pairing ``(i, j)`` with ``i < j``,
    the scores of player ``i`` in their matches.
    """
    index: dict[Hashable, int] = {}
    pairings: dict[tuple[int, int], list[float]] = {}
    for number, match in enumerate(matches):
        try:
            a, b, score = match
            score = float(score)
        except (TypeError, ValueError):
            raise ValueError(
                f"match {number} is {match!r}; a match is (player_a, player_b, score_a)"
            ) from None
        if not 0.0 <= score <= 1.0:
            raise ValueError(f"match {number}: score_a must be in [0, 1] (1 win, 0.5 draw, 0 loss)")
        if a == b:
            raise ValueError(f"match {number}: player {a!r} cannot play itself")
        i, j = (index.setdefault(p, len(index)) for p in (a, b))
        pair, score = ((i, j), score) if i < j else ((j, i), 1.0 - score)
        pairings.setdefault(pair, []).append(score)
    if len(index) < 2:
        raise ValueError("Elo ratings need matches between at least two players")
    return list(index), {pair: np.asarray(s) for pair, s in pairings.items()}


def _tables(
    n: int, pairings: dict[tuple[int, int], np.ndarray], totals: np.ndarray, prior_draws: float
) -> tuple[np.ndarray, np.ndarray]:
    """Score and game tables ``(reps, n, n)`` from per-pairing score totals ``(reps, pairings)``."""
    score = np.zeros((len(totals), n, n))
    games = np.zeros((n, n))
    for column, ((i, j), scores) in enumerate(pairings.items()):
        score[:, i, j] = totals[:, column] + prior_draws / 2
        score[:, j, i] = len(scores) - totals[:, column] + prior_draws / 2
        games[i, j] = games[j, i] = len(scores) + prior_draws
    return score, games


def _reach(edges: np.ndarray) -> np.ndarray:
    """Transitive closure ``(reps, n, n)`` of the directed graphs ``edges`` (reflexive)."""
    n = edges.shape[-1]
    reach = (edges | np.eye(n, dtype=bool)).astype(np.int64)
    for _ in range(max(1, int(np.ceil(np.log2(n))))):
        reach = np.minimum(reach @ reach, 1)
    return reach.astype(bool)


def _split(reach: np.ndarray, players: list[Hashable]) -> tuple[list, list]:
    """A group of players that cannot reach the others in ``reach`` ``(n, n)``, and the others."""
    row = reach[int(np.argmin(reach.sum(axis=1)))]
    group, others = np.flatnonzero(row), np.flatnonzero(~row)
    return [players[k] for k in group], [players[k] for k in others]


def _unbounded(score: np.ndarray, games: np.ndarray, players: list[Hashable]) -> list[str]:
    """Why the maximum-likelihood ratings do not exist, per replicate ("" where they do).

    They exist iff the graph "i scored against j" is strongly connected (Zermelo; Ford).
    """
    linked = _reach(games[None] > 0)[0]
    if not linked.all():
        group, others = _split(linked, players)
        return [f"no chain of matches links players {group} to players {others}"] * len(score)
    reasons = []
    for reach in _reach(score > 0):
        group, others = _split(reach, players) if not reach.all() else ([], [])
        reasons.append(f"players {group} never scored against players {others}" if group else "")
    return reasons


def _fit(score: np.ndarray, games: np.ndarray, max_iter: int = 200) -> np.ndarray:
    """Bradley-Terry log-strengths ``(reps, n)`` (player 0 fixed at 0) maximizing
    ``sum_ij score_ij * log sigmoid(theta_i - theta_j)``, by damped Newton steps.
    """
    reps, n = score.shape[:2]
    theta = np.zeros((reps, n))

    def loglik(t: np.ndarray) -> np.ndarray:
        diff = t[:, :, None] - t[:, None, :]
        return -(score * np.logaddexp(0.0, -diff)).sum(axis=(1, 2))

    tol = 1e-10 * max(1.0, float(games.sum()))
    for _ in range(max_iter):
        p = 1.0 / (1.0 + np.exp(-(theta[:, :, None] - theta[:, None, :])))
        grad = (score - games * p).sum(axis=2)[:, 1:]
        if np.abs(grad).max() < tol:
            return theta
        weights = games * p * (1.0 - p)
        laplacian = np.eye(n) * weights.sum(axis=2)[:, :, None] - weights
        step = np.linalg.solve(laplacian[:, 1:, 1:], grad[:, :, None])[:, :, 0]
        slope, base, t = (grad * step).sum(axis=1), loglik(theta), np.ones(reps)
        for _ in range(60):  # backtracking line search, per replicate
            trial = theta.copy()
            trial[:, 1:] += t[:, None] * step
            # Armijo condition, allowing for rounding in the log-likelihood near the optimum
            accepted = loglik(trial) >= base + 1e-4 * t * slope - 1e-13 * np.abs(base)
            if accepted.all():
                break
            t = np.where(accepted, t, t / 2)
        theta = trial
    raise RuntimeError("the Elo fit did not converge")  # not expected: the problem is concave


def _ratings(
    theta: np.ndarray,
    players: list[Hashable],
    initial: float,
    anchor: Hashable | None,
    scale: float,
) -> np.ndarray:
    ratings = theta * scale / np.log(10.0)
    if anchor is None:
        return ratings - ratings.mean(axis=1, keepdims=True) + initial
    if anchor not in players:
        raise ValueError(f"anchor {anchor!r} is not a player; players: {players}")
    return ratings - ratings[:, [players.index(anchor)]] + initial


def _check_options(scale: float, prior_draws: float) -> None:
    if not scale > 0:
        raise ValueError(f"scale must be positive, got {scale!r}")
    if not prior_draws >= 0:
        raise ValueError(f"prior_draws must be non-negative, got {prior_draws!r}")


def elo_ratings(
    matches: Iterable[Match],
    *,
    initial: float = 1000.0,
    anchor: Hashable | None = None,
    scale: float = 400.0,
    prior_draws: float = 0.0,
) -> dict[Hashable, float]:
    """Maximum-likelihood Elo ratings of a tournament of ``(player_a, player_b, score_a)``
    matches (``score_a``: 1 win, 0.5 draw, 0 loss for ``player_a``).

    Ratings are anchored so that their mean is ``initial``, or so that player ``anchor`` has
    rating ``initial``. Two players where one scored a fraction ``p`` are
    ``scale * log10(p / (1 - p))`` apart. If a group of players never scored against the
    others the ratings are unbounded and a ValueError says so; ``prior_draws`` virtual draws
    added to every pairing that was played keep them finite.
    """
    _check_options(scale, prior_draws)
    players, pairings = _tally(matches)
    totals = np.array([[s.sum() for s in pairings.values()]])
    score, games = _tables(len(players), pairings, totals, prior_draws)
    reason = _unbounded(score, games, players)[0]
    if reason:
        raise ValueError(
            f"Elo ratings are not determined: {reason}; "
            + ("play more pairings" if "chain" in reason else "pass prior_draws > 0")
        )
    ratings = _ratings(_fit(score, games), players, initial, anchor, scale)[0]
    return {player: float(r) for player, r in zip(players, ratings, strict=True)}


def elo_intervals(
    matches: Iterable[Match],
    *,
    reps: int = 1000,
    confidence: float = 0.95,
    random_state: int | None = None,
    initial: float = 1000.0,
    anchor: Hashable | None = None,
    scale: float = 400.0,
    prior_draws: float = 0.0,
    method: Literal["bootstrap", "posterior"] = "bootstrap",
) -> dict[Hashable, Estimate]:
    """:func:`elo_ratings` with percentile intervals over ``reps`` refits.

    ``method="bootstrap"``: every replicate resamples, with replacement, the matches of each
    pairing of players separately (an outcome that never happened is never drawn, so a
    pairing one player always won adds no width). ``method="posterior"`` (needs
    ``prior_draws > 0``): every replicate draws each pairing's score rate from its
    ``Beta(score + prior_draws / 2, games - score + prior_draws / 2)`` posterior, the prior
    the point estimate uses, so the intervals are credible intervals under that prior and
    stay honest for perfect and near-perfect records.

    Either way, a player that won every game it played gets ``high = inf`` (its games bound
    its rating only from below), and one that lost every game ``low = -inf``; the anchor's
    interval is ``[initial, initial]``.
    """
    if method not in ELO_METHODS:
        raise ValueError(f"unknown method {method!r}; accepted: {', '.join(ELO_METHODS)}")
    if method == "posterior" and not prior_draws > 0:
        raise ValueError("method='posterior' needs a prior: pass prior_draws > 0 (1 = Jeffreys)")
    matches = list(matches)
    point = elo_ratings(
        matches, initial=initial, anchor=anchor, scale=scale, prior_draws=prior_draws
    )
    reps, confidence = _check_reps(reps), _check_confidence(confidence)
    seed = resolve_random_state(random_state)
    rng = np.random.default_rng(seed)
    players, pairings = _tally(matches)
    if method == "bootstrap":
        totals = np.stack(
            [
                s[rng.integers(0, len(s), size=(reps, len(s)))].sum(axis=1)
                for s in pairings.values()
            ],
            axis=1,
        )
        score, games = _tables(len(players), pairings, totals, prior_draws)
    else:
        half = prior_draws / 2
        rates = [
            rng.beta(s.sum() + half, len(s) - s.sum() + half, size=reps) for s in pairings.values()
        ]
        totals = np.stack(
            [len(s) * r for s, r in zip(pairings.values(), rates, strict=True)], axis=1
        )
        score, games = _tables(len(players), pairings, totals, 0.0)
    failed = [reason for reason in _unbounded(score, games, players) if reason]
    if failed:
        raise ValueError(
            f"in {len(failed)} of {reps} bootstrap replicates the Elo ratings are unbounded "
            f"(e.g. {failed[0]}); pass prior_draws > 0 to regularize"
        )
    ratings = _ratings(_fit(score, games), players, initial, anchor, scale)
    low, high = _interval(ratings, confidence)
    won_all, lost_all = _one_sided(players, matches, anchor)
    high[won_all], low[lost_all] = np.inf, -np.inf
    return {
        player: Estimate(
            point[player], float(lo), float(hi), confidence, ELO_METHODS[method], reps, seed
        )
        for player, lo, hi in zip(players, low, high, strict=True)
    }


def _one_sided(
    players: list[Hashable], matches: list[Match], anchor: Hashable | None
) -> tuple[np.ndarray, np.ndarray]:
    """Masks over ``players``: who won every game they played, who lost every one (not the
    anchor, whose rating is fixed)."""
    lowest = dict.fromkeys(players, 1.0)
    highest = dict.fromkeys(players, 0.0)
    for a, b, score in matches:
        for player, own in ((a, float(score)), (b, 1.0 - float(score))):
            lowest[player], highest[player] = min(lowest[player], own), max(highest[player], own)
    free = np.array([p != anchor for p in players])
    won_all = np.array([lowest[p] == 1.0 for p in players]) & free
    lost_all = np.array([highest[p] == 0.0 for p in players]) & free
    return won_all, lost_all
