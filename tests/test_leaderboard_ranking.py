"""Ranking: IQM with stratified-bootstrap intervals over real stored results, rank ranges,
one protocol at a time, budget/verification/family filters, suites, P(improvement)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sqlalchemy import select

from rlbench_suite.core.catalog import get_card
from rlbench_suite.core.metrics import (
    Estimate,
    interval_estimates,
    probability_of_improvement,
    wilson_interval,
)
from rlbench_suite.core.result import Result as ResultDoc
from rlbench_suite.core.summary import BOOTSTRAP_REPS, BOOTSTRAP_SEED, normalized_values
from rlbench_suite.leaderboard import ranking
from rlbench_suite.leaderboard.models import Environment, Suite
from rlbench_suite.leaderboard.queries import env_runs, suite_runs
from rlbench_suite.leaderboard.ranking import Run
from rlbench_suite.leaderboard.store import method_named, store_result
from tests.leaderboard_support import CARTPOLE_ZOO_RESULT, ZOO_RESULTS


def estimate(low: float, high: float) -> Estimate:
    return Estimate((low + high) / 2, low, high, 0.95)


def test_overlapping_intervals_share_a_rank_range():
    rows = [estimate(90, 100), estimate(85, 95), estimate(60, 88), estimate(10, 20)]
    assert ranking.rank_ranges(rows) == [(1, 2), (1, 3), (2, 3), (4, 4)]


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        (100_352, "100k"),
        (99_000, "100k"),
        (200_704, "1M"),
        (1_049_000, "1M"),
        (5_000_000, "unlimited"),
        (None, "unlimited"),
    ],
)
def test_budget_classes(steps, expected):
    assert ranking.budget_class(steps) == expected


def test_filters_and_one_run_per_artifact():
    runs = [
        Run(1, "e", "a", 10.0, budget_steps=100_352, artifact="x", family="pg"),
        Run(
            2,
            "e",
            "a",
            12.0,
            budget_steps=100_352,
            artifact="x",
            verification="verified",
            family="pg",
        ),
        Run(3, "e", "b", 50.0, budget_steps=2_000_000, family="value"),
    ]
    assert [r.result_id for r in ranking.distinct_runs(runs)] == [2, 3]
    assert [r.result_id for r in ranking.filter_runs(runs, budget="1M")] == [1, 2]
    assert [r.result_id for r in ranking.filter_runs(runs, verification="verified")] == [2]
    assert [r.result_id for r in ranking.filter_runs(runs, family="value")] == [3]
    with pytest.raises(ValueError, match="unknown budget class '10k'; accepted: 100k, 1M"):
        ranking.filter_runs(runs, budget="10k")


def _per_run_scores(env_id: str) -> list[float]:
    card = get_card(env_id)
    scores = []
    for path in ZOO_RESULTS:
        doc = json.loads(path.read_text())
        if doc["env_id"] == env_id:
            scores.append(float(normalized_values(card, doc["returns"], doc["successes"]).mean()))
    return scores


def test_an_environment_ranking_from_the_database(seeded, random_results):
    with seeded() as session:
        env = session.get(Environment, "rlbench/Acrobot-v1")
        rows = ranking.rank_env(env_runs(session, env))
    assert [r.method for r in rows] == ["zoo-ppo", "random"]
    ppo, rand = rows
    expected = interval_estimates(
        np.array(_per_run_scores(env.id)), "iqm", reps=BOOTSTRAP_REPS, random_state=BOOTSTRAP_SEED
    )["iqm"]
    assert ppo.estimate == expected and ppo.runs == 5 and ppo.interval_over == "runs"
    assert ppo.budget_class == "1M" and ppo.family == "policy-gradient"
    assert (ppo.rank, rand.rank) == ("1", "2")
    doc = json.loads(random_results[1].read_text())
    values = normalized_values(get_card(env.id), doc["returns"], doc["successes"])
    assert rand.interval_over == "episodes" and rand.runs == 1
    single = "iqm_of_task_means"  # one run: its score (the mean of its episodes)
    assert (
        rand.estimate
        == interval_estimates(values, single, reps=BOOTSTRAP_REPS, random_state=BOOTSTRAP_SEED)[
            single
        ]
    )
    assert rand.estimate.point == pytest.approx(values.mean())
    assert rand.estimate.high < ppo.estimate.low
    # filters: the zoo's Acrobot PPO trained 200k steps; random has no recorded budget
    runs = env_runs_of(seeded, env.id)
    assert ranking.filter_runs(runs, budget="100k") == []
    assert [r.method for r in ranking.rank_env(ranking.filter_runs(runs, budget="1M"))] == [
        "zoo-ppo"
    ]
    family = ranking.filter_runs(env_runs_of(seeded, env.id), family="policy-gradient")
    assert {r.method for r in family} == {"zoo-ppo"}


def env_runs_of(factory, env_id: str) -> list[Run]:
    with factory() as session:
        return env_runs(session, session.get(Environment, env_id))


def test_only_results_of_one_protocol_are_ranked_together(seeded):
    from rlbench_suite.core.protocol import EvalProtocol

    path = CARTPOLE_ZOO_RESULT
    doc = ResultDoc.model_validate_json(path.read_text())
    other = EvalProtocol(**{**doc.protocol.model_dump(), "deterministic": False})
    moved = doc.model_copy(update={"protocol": other, "protocol_hash": other.hash})
    with seeded.begin() as session:  # as if stored under an older card's protocol
        store_result(session, moved, method=method_named(session, "older-protocol"))
    with seeded() as session:
        env = session.get(Environment, "rlbench/CartPole-v1")
        current = {r.method for r in env_runs(session, env)}
        older = {r.method for r in env_runs(session, env, other.hash)}
    assert "older-protocol" not in current and older == {"older-protocol"}


def test_a_suite_ranking_and_the_probability_of_improvement(seeded):
    envs = ["rlbench/CartPole-v1", "rlbench/Acrobot-v1"]
    with seeded() as session:
        suite = session.get(Suite, "classic-control")
        runs, scored, _ = suite_runs(session, suite)
    assert set(envs) <= set(scored)
    runs = [r for r in runs if r.env_id in envs]
    rows, incomplete = ranking.rank_suite(runs, envs)
    assert incomplete == []
    assert [r.method for r in rows] == ["zoo-ppo", "random"]
    ppo_matrix, over = ranking.method_matrix([r for r in runs if r.method == "zoo-ppo"], envs)
    assert over == "runs" and ppo_matrix.shape == (5, 2)
    assert np.allclose(ppo_matrix[:, 0], _per_run_scores("rlbench/CartPole-v1"))
    assert (
        rows[0].estimate
        == interval_estimates(ppo_matrix, "iqm", reps=BOOTSTRAP_REPS, random_state=BOOTSTRAP_SEED)[
            "iqm"
        ]
    )
    random_matrix, over = ranking.method_matrix([r for r in runs if r.method == "random"], envs)
    assert over == "episodes" and random_matrix.shape == (50, 2)
    p = ranking.improvement(ppo_matrix, random_matrix)
    assert p == probability_of_improvement(
        ppo_matrix, random_matrix, reps=BOOTSTRAP_REPS, random_state=BOOTSTRAP_SEED
    )
    assert p.point > 0.9
    # a method without a run on every env is listed apart, with what it lacks
    rows, incomplete = ranking.rank_suite(runs, [*envs, "rlbench/Pendulum-v1"])
    assert rows == [] or all(r.method != "random" for r in rows)
    lacking = {r.method: r.missing_envs for r in incomplete}
    assert lacking["random"] == ("rlbench/Pendulum-v1",)
    taus, curves = ranking.profiles({"zoo-ppo": ppo_matrix, "random": random_matrix})
    profile, band = curves["zoo-ppo"]
    assert profile.shape == taus.shape and band.shape == (2, len(taus))
    assert np.all(np.diff(profile) <= 0)  # fewer runs score above a higher threshold
    with seeded() as session:
        assert session.scalars(select(Environment.id)).all()


def test_a_single_run_ranks_by_its_mean_not_an_iqm_of_its_episodes():
    """A success-rate run that succeeds in 70 of 100 episodes scores 70 (an IQM over its
    0/100 episodes would give 100), its interval from the episodes; per suite, one run per
    env gives the IQM over envs of those means."""
    scores = [0.0] * 30 + [100.0] * 70
    (row,) = ranking.rank_env([Run(1, "e", "m", 70.0, episode_scores=tuple(scores))])
    assert row.interval_over == "episodes" and row.estimate.point == pytest.approx(70.0)
    assert 55 < row.estimate.low < 70 < row.estimate.high < 85
    runs = [
        Run(1, "a", "m", 70.0, episode_scores=tuple(scores)),
        Run(2, "b", "m", 20.0, episode_scores=tuple([0.0] * 80 + [100.0] * 20)),
    ]
    (suite_row,), _ = ranking.rank_suite(runs, ["a", "b"])
    assert suite_row.interval_over == "episodes"
    assert suite_row.runs == 2  # a run on each env, not 100 episodes (the review's "50 runs")
    assert suite_row.estimate.point == pytest.approx(45.0)  # the IQM of two means is their mean


def test_a_suite_row_counts_the_runs_its_aggregate_used():
    """The matrix is full: 3 runs on one env and 1 on the other use one run each (their
    episodes are the rows); 3 and 2 runs use 2 each. The row says so, and how many are stored."""
    episodes = tuple([50.0] * 10)
    runs = [Run(i, "a", "m", 50.0, episodes, artifact=f"a{i}") for i in (1, 2, 3)]
    runs.append(Run(4, "b", "m", 60.0, episodes, artifact="b4", verification="verified"))
    (row,), _ = ranking.rank_suite(runs, ["a", "b"])
    assert (row.interval_over, row.runs, row.stored_runs) == ("episodes", 2, 4)
    assert row.result_ids == (1, 4) and row.verified_runs == 1
    runs.append(Run(5, "b", "m", 70.0, episodes, artifact="b5"))
    (row,), _ = ranking.rank_suite(runs, ["a", "b"])
    assert (row.interval_over, row.runs, row.stored_runs) == ("runs", 4, 5)
    assert row.result_ids == (1, 2, 4, 5)
    assert row.estimate == interval_estimates(
        np.array([[50.0, 60.0], [50.0, 70.0]]), "iqm", reps=BOOTSTRAP_REPS,
        random_state=BOOTSTRAP_SEED)["iqm"]  # fmt: skip


def test_a_single_success_rate_run_gets_the_wilson_interval_of_its_success_rate():
    """A run that failed all 20 episodes: the bootstrap interval over its episodes is
    [0, 0]; on a success-rate card it is Wilson's, on the card's score scale."""
    failed = tuple([0.0] * 20)
    (bootstrap,) = ranking.rank_env([Run(1, "e", "m", 0.0, episode_scores=failed)])
    assert (bootstrap.estimate.low, bootstrap.estimate.high) == (0.0, 0.0)
    (row,) = ranking.rank_env([Run(1, "e", "m", 0.0, episode_scores=failed)], success=(0.0, 100.0))
    assert row.estimate.method == "wilson" and row.estimate.point == 0.0
    assert row.estimate.low == 0.0
    assert row.estimate.high == pytest.approx(100 * wilson_interval(0, 20)[1])  # about 16.1
    scale = (-25.0, 75.0)  # a normalized scale: the random reference succeeds 25% of the time
    scores = tuple([-25.0] * 6 + [75.0] * 14)
    (row,) = ranking.rank_env([Run(1, "e", "m", 45.0, episode_scores=scores)], success=scale)
    low, high = wilson_interval(14, 20)
    assert row.estimate.point == pytest.approx(45.0)
    assert (row.estimate.low, row.estimate.high) == pytest.approx(
        (-25 + 100 * low, -25 + 100 * high)
    )


def test_the_success_scale_follows_the_cards_scoring():
    from rlbench_suite.leaderboard.scores import success_scale

    assert success_scale(get_card("rlbench/CartPole-v1")) is None  # a return metric
    duel = get_card("rlbench/DuelVsBotEasy-v0")  # win rate, references 0.41 and 1.0
    assert duel.primary_metric == "win_rate"
    assert success_scale(duel) == pytest.approx((-41 / 0.59, 100.0))
    chess = get_card("rlbench/Chess-v6")  # win rate, no references: the rate itself
    assert success_scale(chess) == (0.0, 1.0)


def test_two_methods_are_compared_at_one_level():
    """Runs where both methods have 2 or more on every env (rliable's level); otherwise
    every env by episodes, never runs of one method against episodes of the other."""
    a = [Run(i, "e", "a", 80.0 + i, episode_scores=(70.0 + i, 90.0 + i)) for i in range(3)]
    b = [Run(10, "e", "b", 20.0, episode_scores=(10.0, 30.0, 20.0))]
    assert ranking.comparison_level([(3, 2), (2, 5)]) == "runs"
    assert ranking.comparison_level([(3, 2), (1, 5)]) == "episodes"
    assert ranking.comparison_level([]) == "episodes"
    assert ranking.level_matrix(a, ["e"], "runs").ravel().tolist() == [80.0, 81.0, 82.0]
    pooled = ranking.level_matrix(a, ["e"], "episodes").ravel().tolist()
    assert pooled == [70.0, 90.0, 71.0, 91.0, 72.0, 92.0]
    assert ranking.level_matrix(b, ["e", "other"], "episodes") is None


def test_the_compare_page_says_its_level(seeded):
    from fastapi.testclient import TestClient

    from rlbench_suite.leaderboard.app import create_app

    with TestClient(create_app(seeded)) as client:
        api = client.get("/api/compare", params={"a": "zoo-ppo", "b": "random"}).json()
        page = client.get("/compare", params={"a": "zoo-ppo", "b": "random"}).text
    with seeded() as session:
        runs = {
            env: ranking.distinct_runs(env_runs(session, session.get(Environment, env)))
            for env in (e["env_id"] for e in api["envs"])
        }
    counts = [
        tuple(sum(r.method == m for r in env) for m in ("zoo-ppo", "random"))
        for env in runs.values()
    ]
    assert api["level"] == ranking.comparison_level(counts) == "episodes"  # random: 1 run
    assert "over their runs&#39; episodes" in page or "over their runs' episodes" in page
    for row in api["envs"]:
        x = ranking.level_matrix([r for r in runs[row["env_id"]] if r.method == "zoo-ppo"],
                                 [row["env_id"]], "episodes")  # fmt: skip
        y = ranking.level_matrix([r for r in runs[row["env_id"]] if r.method == "random"],
                                 [row["env_id"]], "episodes")  # fmt: skip
        assert row["probability"]["point"] == pytest.approx(ranking.improvement(x, y).point)
