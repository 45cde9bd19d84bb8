"""Aggregate metrics and their intervals agree with independent computations (numpy, scipy)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from rlbench_suite.core import metrics
from rlbench_suite.core.metrics import (
    Estimate,
    average_score_profile,
    interval_estimates,
    iqm,
    optimality_gap,
    performance_profile,
    probability_of_improvement,
    success_rate,
    wilson_interval,
)
from rlbench_suite.core.scoring import normalized_score


@pytest.fixture
def scores() -> np.ndarray:
    return np.random.default_rng(0).normal(60.0, 30.0, size=(10, 5))


def poi_by_scipy(x: np.ndarray, y: np.ndarray) -> float:
    terms = [
        scipy.stats.mannwhitneyu(x[:, t], y[:, t], alternative="greater").statistic
        / (len(x) * len(y))
        for t in range(x.shape[1])
    ]
    return float(np.mean(terms))


# ---------------------------------------------------------------- point estimates


def test_point_estimates_match_numpy_and_scipy(scores):
    assert metrics.mean(scores) == pytest.approx(scores.mean())
    assert metrics.median(scores) == pytest.approx(np.median(scores.mean(axis=0)))
    assert iqm(scores) == pytest.approx(scipy.stats.trim_mean(scores.ravel(), 0.25))
    assert optimality_gap(scores) == pytest.approx(100 - np.minimum(scores, 100).mean())
    assert optimality_gap(scores, gamma=50) == pytest.approx(np.maximum(50 - scores, 0).mean())


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 8, 13])
def test_iqm_trims_like_scipy_for_every_size(n):
    values = np.random.default_rng(n).normal(size=n)
    assert iqm(values) == pytest.approx(scipy.stats.trim_mean(values, 0.25))


def test_one_dimensional_input_is_one_environment_of_episodes():
    episodes = np.array([3.0, 1.0, 10.0, 4.0, 2.0, 100.0])
    assert metrics.median(episodes) == np.median(episodes)
    assert metrics.mean(episodes) == pytest.approx(episodes.mean())
    assert iqm(episodes) == pytest.approx(scipy.stats.trim_mean(episodes, 0.25))
    estimates = interval_estimates(episodes, reps=200, random_state=0)
    assert estimates["median"].point == np.median(episodes)


def test_matrix_median_is_median_of_task_means():
    scores = np.array([[0.0, 10.0, 20.0], [2.0, 10.0, 40.0]])
    assert metrics.median(scores) == 10.0  # task means 1, 10, 30


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 8), st.integers(1, 4)),
              elements=st.floats(-1e6, 1e6)))  # fmt: skip
def test_iqm_lies_between_min_and_max(values):
    assert values.min() - 1e-6 <= iqm(values) <= values.max() + 1e-6


# ---------------------------------------------------------------- interval estimates


def test_intervals_contain_points_and_record_their_settings(scores):
    estimates = interval_estimates(scores, reps=500, random_state=3, confidence=0.9)
    assert set(estimates) == {"mean", "median", "iqm", "optimality_gap"}
    for name, estimate in estimates.items():
        assert estimate.low <= estimate.point <= estimate.high, name
        assert estimate.low < estimate.high
        assert (estimate.reps, estimate.random_state) == (500, 3)
        assert estimate.confidence == 0.9
        assert estimate.method == "stratified-bootstrap-percentile"
    assert estimates["iqm"].point == pytest.approx(scipy.stats.trim_mean(scores.ravel(), 0.25))


def test_same_random_state_same_interval_and_another_differs(scores):
    first = interval_estimates(scores, reps=300, random_state=11)
    assert first == interval_estimates(scores, reps=300, random_state=11)
    assert first["mean"] != interval_estimates(scores, reps=300, random_state=12)["mean"]


def test_a_fresh_seed_is_recorded_and_reproduces_the_interval(scores):
    drawn = interval_estimates(scores, ["iqm"], reps=300)["iqm"]
    assert isinstance(drawn.random_state, int)
    again = interval_estimates(scores, "iqm", reps=300, random_state=drawn.random_state)["iqm"]
    assert again == drawn


def test_intervals_shrink_with_more_runs():
    rng = np.random.default_rng(5)
    few, many = rng.normal(size=(5, 4)), rng.normal(size=(500, 4))
    for name in ("mean", "iqm", "median"):
        narrow = interval_estimates(many, [name], reps=400, random_state=0)[name]
        wide = interval_estimates(few, [name], reps=400, random_state=0)[name]
        assert narrow.high - narrow.low < (wide.high - wide.low) / 3, name


def test_bootstrap_resamples_runs_within_each_task():
    # Constant columns: resampling within a task changes nothing, so no metric varies (a
    # bootstrap pooling all scores would mix 0s and 100s).
    constant = np.tile([0.0, 100.0, 40.0], (8, 1))
    for estimate in interval_estimates(constant, reps=200, random_state=0).values():
        assert estimate.low == estimate.point == estimate.high
    # Anti-correlated columns with constant row sums: resampling whole runs (rows) would
    # leave the mean fixed; resampling each task independently does not.
    column = np.arange(8.0)
    mean = interval_estimates(np.stack([column, 7 - column], axis=1), "mean", reps=200,
                              random_state=0)["mean"]  # fmt: skip
    assert mean.point == 3.5 and mean.high - mean.low > 0.5


def test_a_single_run_gives_a_zero_width_interval():
    estimate = interval_estimates([[1.0, 2.0, 3.0]], "mean", reps=50, random_state=0)["mean"]
    assert estimate.low == estimate.point == estimate.high == pytest.approx(2.0)


def test_large_matrices_are_bootstrapped_in_chunks_consistently(monkeypatch, scores):
    whole = interval_estimates(scores, reps=300, random_state=4)
    monkeypatch.setattr(metrics, "_CHUNK_ELEMENTS", 7 * scores.size)
    chunked = interval_estimates(scores, reps=300, random_state=4)
    for name in whole:  # other draws, the same distribution
        assert chunked[name].point == whole[name].point
        assert chunked[name].low == pytest.approx(whole[name].low, rel=0.05)


def test_estimates_fit_the_result_schema(scores):
    from rlbench_suite.core.result import IntervalEstimate

    estimate = interval_estimates(scores, "iqm", reps=100, random_state=0)["iqm"]
    stored = IntervalEstimate(**estimate.as_dict())
    assert Estimate(**stored.model_dump()) == estimate


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ([], "empty"),
        (np.zeros((0, 3)), "empty"),
        (np.zeros((2, 2, 2)), "shape"),
        ([[1.0, np.nan], [2.0, 3.0]], "NaN or infinite value.*run 0, task 1"),
        ([1.0, np.inf], "NaN or infinite"),
        ([1.0, None], "NaN or infinite"),
        (["a", "b"], "must be numbers"),
    ],
)
def test_bad_scores_are_refused_with_a_message(bad, message):
    with pytest.raises(ValueError, match=message):
        interval_estimates(bad, reps=10, random_state=0)
    with pytest.raises(ValueError, match=message):
        iqm(bad)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"metrics": ["mean", "trimmed"]}, "unknown metric 'trimmed'; accepted: mean, median"),
        ({"metrics": []}, "no metrics"),
        ({"reps": 0}, "reps must be a positive integer"),
        ({"reps": 2.5}, "reps must be a positive integer"),
        ({"confidence": 95}, "confidence must be strictly between 0 and 1"),
        ({"random_state": -1}, "non-negative"),
        ({"random_state": "seed"}, "random_state must be"),
    ],
)
def test_bad_options_are_refused(scores, kwargs, message):
    with pytest.raises(ValueError, match=message):
        interval_estimates(scores, **{"reps": 10, "random_state": 0, **kwargs})


# ---------------------------------------------------------------- proportions, normalization


@pytest.mark.parametrize(("k", "n"), [(0, 1), (0, 10), (3, 10), (10, 10), (37, 50), (1, 1000)])
@pytest.mark.parametrize("confidence", [0.8, 0.95, 0.99])
def test_wilson_interval_matches_scipy(k, n, confidence):
    expected = scipy.stats.binomtest(k, n).proportion_ci(confidence, method="wilson")
    assert wilson_interval(k, n, confidence) == pytest.approx((expected.low, expected.high))


def test_success_rate_counts_successes_with_a_wilson_interval():
    episodes = [True, False, True, True, False, True, True, True]
    estimate = success_rate(episodes)
    expected = scipy.stats.binomtest(6, 8).proportion_ci(method="wilson")
    assert estimate.point == 0.75
    assert (estimate.low, estimate.high) == pytest.approx((expected.low, expected.high))
    assert estimate.method == "wilson" and estimate.reps is None
    assert success_rate(np.array(episodes, dtype=float)) == estimate


@pytest.mark.parametrize("bad", [[], [0, 1, 2], [1.0, np.nan], [True, None], ["yes"]])
def test_success_rate_refuses_non_indicators(bad):
    with pytest.raises(ValueError, match=r"empty|booleans or 0/1"):
        success_rate(bad)


def test_normalized_score():
    assert normalized_score(50.0, random=10.0, expert=90.0) == 50.0
    assert normalized_score(10.0, random=10.0, expert=90.0) == 0.0
    assert normalized_score(-200.0, random=-100.0, expert=-300.0) == 50.0  # lower is better
    np.testing.assert_allclose(normalized_score([10.0, 90.0, 130.0], 10.0, 90.0), [0, 100, 150])
    assert isinstance(normalized_score(np.float32(1.0), 0.0, 2.0), float)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((1.0, None, 5.0), "needs the random reference score"),
        ((1.0, 0.0, None), "needs the expert reference score"),
        ((1.0, 3.0, 3.0), "equal"),
        ((1.0, 0.0, np.nan), "must be finite"),
        ((np.nan, 0.0, 1.0), "NaN"),
        (([1.0, np.nan], 0.0, 1.0), "NaN"),
        ((None, 0.0, 1.0), "value=None"),
    ],
)
def test_normalized_score_refuses_missing_or_degenerate_input(args, message):
    with pytest.raises(ValueError, match=message):
        normalized_score(*args)


# ---------------------------------------------------------------- probability of improvement


def test_probability_of_improvement_matches_mann_whitney():
    rng = np.random.default_rng(1)
    x = np.round(rng.normal(1.0, 1.0, size=(12, 6)))  # rounding makes ties
    y = np.round(rng.normal(0.5, 1.0, size=(9, 6)))
    estimate = probability_of_improvement(x, y, reps=500, random_state=0)
    assert estimate.point == pytest.approx(poi_by_scipy(x, y))
    assert estimate.low <= estimate.point <= estimate.high
    assert (estimate.reps, estimate.random_state) == (500, 0)
    reverse = probability_of_improvement(y, x, reps=10, random_state=0)
    assert estimate.point + reverse.point == pytest.approx(1.0)


def test_probability_of_improvement_is_reproducible_and_certain_when_separated():
    x, y = np.full((5, 3), 10.0), np.zeros((4, 3))
    certain = probability_of_improvement(x, y, reps=100, random_state=0)
    assert (certain.point, certain.low, certain.high) == (1.0, 1.0, 1.0)
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=(10, 4)), rng.normal(size=(10, 4))
    one = probability_of_improvement(a, b, reps=200, random_state=7)
    assert one == probability_of_improvement(a, b, reps=200, random_state=7)
    assert one != probability_of_improvement(a, b, reps=200, random_state=8)


def test_probability_of_improvement_of_episode_arrays():
    x, y = np.array([1.0, 2.0, 3.0, 4.0]), np.array([2.5, 0.0])
    expected = scipy.stats.mannwhitneyu(x, y, alternative="greater").statistic / 8
    assert probability_of_improvement(x, y, reps=10, random_state=0).point == expected


@settings(max_examples=40, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 6), st.integers(1, 3)),
              elements=st.sampled_from([0.0, 1.0, 2.5, -3.0])))  # fmt: skip
def test_an_algorithm_against_itself_is_even(x):
    estimate = probability_of_improvement(x, x, reps=50, random_state=0)
    assert estimate.point == 0.5


def test_probability_of_improvement_refuses_mismatched_tasks():
    with pytest.raises(ValueError, match=r"x has 3 task.* y has 2"):
        probability_of_improvement(np.zeros((4, 3)), np.zeros((4, 2)))
    with pytest.raises(ValueError, match="y contains 1 NaN"):
        probability_of_improvement(np.zeros((4, 2)), [[0.0, np.nan]])


# ---------------------------------------------------------------- performance profiles


def test_performance_profiles_match_direct_counts(scores):
    taus = np.linspace(-20.0, 140.0, 17)
    profile, band = performance_profile(scores, taus)
    assert band is None
    np.testing.assert_allclose(profile, [(scores > tau).mean() for tau in taus])
    average, _ = average_score_profile(scores, taus)
    np.testing.assert_allclose(average, [(scores.mean(axis=0) > tau).mean() for tau in taus])


def test_performance_profile_bands(scores):
    taus = np.linspace(0.0, 120.0, 13)
    for profile_function in (performance_profile, average_score_profile):
        profile, band = profile_function(scores, taus, reps=300, random_state=0)
        assert band.shape == (2, len(taus))
        assert np.all(band[0] <= profile + 1e-12) and np.all(profile <= band[1] + 1e-12)
        assert np.all(np.diff(profile) <= 0) and np.all(np.diff(band, axis=1) <= 1e-12)
        again = profile_function(scores, taus, reps=300, random_state=0)[1]
        np.testing.assert_array_equal(band, again)
    constant = np.tile([10.0, 50.0], (6, 1))
    profile, band = performance_profile(constant, [0.0, 20.0, 60.0], reps=50, random_state=0)
    np.testing.assert_array_equal(band, [profile, profile])


def test_performance_profile_refuses_bad_thresholds(scores):
    with pytest.raises(ValueError, match="taus"):
        performance_profile(scores, [])
    with pytest.raises(ValueError, match="taus"):
        performance_profile(scores, [1.0, np.nan])
