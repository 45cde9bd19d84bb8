"""Win rates and Elo ratings agree with closed forms and an independent likelihood fit."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
import scipy.optimize
import scipy.stats

from rlbench_suite.evaluation.ratings import elo_intervals, elo_ratings, win_rate


def matches_with(a: str, b: str, wins: int, draws: int, losses: int) -> list:
    return [(a, b, 1.0)] * wins + [(a, b, 0.5)] * draws + [(a, b, 0.0)] * losses


def elo_by_scipy(matches: list, scale: float = 400.0) -> dict[str, float]:
    """Maximize the Bradley-Terry likelihood with a generic optimizer; mean rating 0."""
    players = sorted({p for a, b, _ in matches for p in (a, b)})
    pos = {p: i for i, p in enumerate(players)}
    a = np.array([pos[m[0]] for m in matches])
    b = np.array([pos[m[1]] for m in matches])
    s = np.array([m[2] for m in matches], dtype=float)

    def negative_loglik(theta):
        d = theta[a] - theta[b]
        return np.sum(s * np.logaddexp(0, -d) + (1 - s) * np.logaddexp(0, d))

    theta = scipy.optimize.minimize(
        negative_loglik, np.zeros(len(players)), method="BFGS", options={"gtol": 1e-9}
    ).x
    ratings = theta * scale / math.log(10)
    return dict(zip(players, ratings - ratings.mean(), strict=True))


# ---------------------------------------------------------------- win rate


def test_win_rate_without_draws_matches_binomtest():
    outcomes = [1, 0, 1, 1, 1, 0, 1]
    estimate = win_rate(outcomes)
    expected = scipy.stats.binomtest(5, 7).proportion_ci(method="wilson")
    assert estimate.point == pytest.approx(5 / 7)
    assert (estimate.low, estimate.high) == pytest.approx((expected.low, expected.high))
    assert estimate.method == "wilson"


def test_win_rate_encodings_agree_and_draws_count_half():
    scores = win_rate([1, 0.5, 0, 1, 0.5])
    signs = win_rate([1, 0, -1, 1, 0], encoding="sign")
    assert scores == signs
    assert scores.point == pytest.approx(3 / 5)
    assert scores.low < scores.point < scores.high


@pytest.mark.parametrize(
    ("outcomes", "encoding", "message"),
    [
        ([1, -1], "score", "pass encoding='sign'"),
        ([1, 0.5], "sign", "outcomes must be in"),
        ([], "score", "empty"),
        ([1, np.nan], "score", "outcomes must be in"),
        ([1, 0], "elo", "unknown encoding"),
    ],
)
def test_win_rate_refuses_bad_outcomes(outcomes, encoding, message):
    with pytest.raises(ValueError, match=message):
        win_rate(outcomes, encoding=encoding)


# ---------------------------------------------------------------- Elo fit


@pytest.mark.parametrize(("wins", "draws", "losses"), [(7, 0, 3), (1, 0, 1), (2, 2, 1), (99, 0, 1)])
def test_two_player_gap_is_the_logit_of_the_score_fraction(wins, draws, losses):
    ratings = elo_ratings(matches_with("a", "b", wins, draws, losses))
    p = (wins + draws / 2) / (wins + draws + losses)
    assert ratings["a"] - ratings["b"] == pytest.approx(400 * math.log10(p / (1 - p)), abs=1e-6)
    assert (ratings["a"] + ratings["b"]) / 2 == pytest.approx(1000.0)


def test_fit_matches_a_generic_optimizer_and_ignores_match_order():
    matches = (
        matches_with("a", "b", 6, 2, 2)
        + matches_with("b", "c", 3, 1, 4)
        + matches_with("c", "a", 2, 0, 5)
        + matches_with("d", "a", 1, 1, 3)
        + matches_with("d", "c", 4, 0, 2)
    )
    ratings = elo_ratings(matches, initial=0.0)
    expected = elo_by_scipy(matches)
    for player in expected:
        assert ratings[player] == pytest.approx(expected[player], abs=1e-3)
    shuffled = matches[:]
    random.Random(0).shuffle(shuffled)
    flipped = [(b, a, 1 - s) for a, b, s in shuffled]
    for other in (shuffled, flipped):
        again = elo_ratings(other, initial=0.0)
        assert all(again[p] == pytest.approx(ratings[p], abs=1e-8) for p in ratings)


def test_anchoring_shifts_but_keeps_the_gaps():
    matches = matches_with("a", "b", 6, 0, 4) + matches_with("b", "c", 5, 2, 3)
    by_mean = elo_ratings(matches)
    anchored = elo_ratings(matches, anchor="c", initial=1500.0)
    assert anchored["c"] == 1500.0
    assert np.mean(list(by_mean.values())) == pytest.approx(1000.0)
    for p in ("a", "b"):
        assert anchored[p] - anchored["c"] == pytest.approx(by_mean[p] - by_mean["c"])
    half_scale = elo_ratings(matches, scale=200.0, initial=0.0)
    assert half_scale["a"] == pytest.approx((by_mean["a"] - 1000.0) / 2)


def test_a_clean_sweep_needs_a_prior_and_the_prior_is_virtual_draws():
    sweep = matches_with("expert", "random", 20, 0, 0)
    with pytest.raises(ValueError, match=r"\['random'\] never scored against.*prior_draws"):
        elo_ratings(sweep)
    ratings = elo_ratings(sweep, prior_draws=2)
    p = 21 / 22  # 20 wins plus 2 virtual draws, over 22 games
    assert ratings["expert"] - ratings["random"] == pytest.approx(400 * math.log10(p / (1 - p)))


@pytest.mark.parametrize(
    ("matches", "message"),
    [
        ([], "at least two players"),
        ([("a", "a", 1.0)], "cannot play itself"),
        ([("a", "b", 2.0)], r"score_a must be in \[0, 1\]"),
        ([("a", "b")], "a match is \\(player_a, player_b, score_a\\)"),
        ([("a", "b", "won")], "a match is"),
        (matches_with("a", "b", 2, 0, 1) + matches_with("c", "d", 1, 0, 1), "no chain of matches"),
    ],
)
def test_bad_tournaments_are_refused(matches, message):
    with pytest.raises(ValueError, match=message):
        elo_ratings(matches)


def test_unknown_anchor_is_refused():
    with pytest.raises(ValueError, match="anchor 'z' is not a player"):
        elo_ratings(matches_with("a", "b", 1, 0, 1), anchor="z")


# ---------------------------------------------------------------- Elo intervals


def tournament(games_per_pair: int) -> list:
    rng = np.random.default_rng(0)
    strengths = {"a": 200.0, "b": 0.0, "c": -100.0}
    matches = []
    for x, y in (("a", "b"), ("a", "c"), ("b", "c")):
        p = 1 / (1 + 10 ** ((strengths[y] - strengths[x]) / 400))
        matches += [(x, y, float(rng.random() < p)) for _ in range(games_per_pair)]
    return matches


def test_elo_intervals_contain_the_fit_and_are_reproducible():
    matches = tournament(40)
    intervals = elo_intervals(matches, reps=300, random_state=0)
    point = elo_ratings(matches)
    for player, estimate in intervals.items():
        assert estimate.point == point[player]
        assert estimate.low < estimate.point < estimate.high
        assert (estimate.reps, estimate.random_state) == (300, 0)
        assert estimate.method == "pairing-bootstrap-percentile"
    assert intervals == elo_intervals(matches, reps=300, random_state=0)
    assert intervals != elo_intervals(matches, reps=300, random_state=1)


def test_elo_intervals_shrink_with_more_matches_and_anchor_is_fixed():
    few = elo_intervals(tournament(30), reps=200, random_state=0, anchor="b")
    many = elo_intervals(tournament(600), reps=200, random_state=0, anchor="b")
    assert few["b"].low == few["b"].high == 1000.0
    for player in ("a", "c"):
        assert many[player].high - many[player].low < (few[player].high - few[player].low) / 2


def test_elo_intervals_resample_within_pairings():
    # Every pairing has a fixed outcome, so resampling within pairings changes nothing.
    matches = matches_with("a", "b", 3, 0, 0) + matches_with("b", "c", 0, 3, 0)
    matches += matches_with("c", "a", 0, 3, 0)
    intervals = elo_intervals(matches, reps=50, random_state=0, prior_draws=1)
    for estimate in intervals.values():
        assert estimate.low == pytest.approx(estimate.point) == pytest.approx(estimate.high)


def test_elo_intervals_refuse_replicates_without_a_finite_fit():
    matches = matches_with("a", "b", 5, 0, 1)  # a resample of six games may be a clean sweep
    with pytest.raises(ValueError, match=r"bootstrap replicates.*prior_draws"):
        elo_intervals(matches, reps=200, random_state=0)
    estimates = elo_intervals(matches, reps=200, random_state=0, prior_draws=1)
    assert estimates["a"].low < estimates["a"].point < estimates["a"].high


def undefeated() -> list:
    """'a' wins all 40 of its games; 'b' and 'c' split theirs 6-4."""
    return (
        matches_with("a", "b", 20, 0, 0)
        + matches_with("a", "c", 20, 0, 0)
        + matches_with("b", "c", 6, 0, 4)
    )


@pytest.mark.parametrize("method", ["bootstrap", "posterior"])
def test_a_perfect_record_bounds_the_rating_only_from_below(method):
    intervals = elo_intervals(undefeated(), reps=400, random_state=0, prior_draws=1, method=method)
    a = intervals["a"]
    assert a.high == math.inf and math.isfinite(a.low) and a.low < a.point
    assert all(math.isfinite(intervals[p].low) and math.isfinite(intervals[p].high) for p in "bc")
    winless = elo_intervals(matches_with("x", "y", 0, 0, 5) + matches_with("y", "z", 2, 0, 3),
                            reps=100, random_state=0, prior_draws=1, method=method)  # fmt: skip
    assert winless["x"].low == -math.inf and winless["x"].high < math.inf


def test_posterior_intervals_stay_honest_for_perfect_and_near_perfect_records():
    posterior = elo_intervals(undefeated(), reps=400, random_state=0, prior_draws=1,
                              method="posterior")  # fmt: skip
    a = posterior["a"]
    assert a.method == "pairing-beta-posterior-percentile" and (a.reps, a.random_state) == (400, 0)
    # 40 wins in 40 games are consistent (one-sided, 95%) with a win rate as low as
    # 0.05 ** (1 / 40) = 0.928, about 440 Elo above the opponents, where the fit (20.5 of 21
    # against each, with the virtual draw) says 645; resampling the wins alone (the
    # bootstrap) puts the lower end within a few points of the fit
    assert a.point - a.low > 100
    near = matches_with("a", "b", 39, 0, 1)
    boot = elo_intervals(near, reps=400, random_state=0, prior_draws=1)["a"]
    post = elo_intervals(near, reps=400, random_state=0, prior_draws=1, method="posterior")["a"]
    assert math.isfinite(post.high) and post.point == boot.point
    assert post.high - post.point > 1.5 * (boot.high - boot.point)
    with pytest.raises(ValueError, match=r"needs a prior: pass prior_draws > 0"):
        elo_intervals(near, method="posterior")
    with pytest.raises(ValueError, match="unknown method 'mcmc'; accepted: bootstrap, posterior"):
        elo_intervals(near, prior_draws=1, method="mcmc")
