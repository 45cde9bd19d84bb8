"""Normalized scores exist only where they mean something, with honest intervals."""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import pytest

from rlbench_suite.core.cards import EnvCard, RefScore
from rlbench_suite.core.catalog import cards
from rlbench_suite.core.metrics import wilson_interval
from rlbench_suite.core.offline_cards import resolve_card
from rlbench_suite.core.result import EpisodeRecord, ResultError, load_result, result_from_data
from rlbench_suite.core.scoring import (
    SEPARATION_STANDARD_ERRORS,
    normalized_interval,
    normalized_score,
    references_separated,
)
from rlbench_suite.core.summary import (
    reference_differences,
    summarize,
    summary_differences,
    summary_points,
)
from tests.conftest import REPO, load_script, run_cli


def ref(value: float, std: float | None = 1.0, episodes: int = 100, **extra) -> dict:
    base = {"value": value, "std": std, "policy": "random", "episodes": episodes,
            "seeds": list(range(episodes or 0)) or None, "suite_version": "0.1.0",
            "measured": dt.date(2026, 1, 1)}  # fmt: skip
    return {**base, **extra}


def card(metric: str, random: dict, expert: dict) -> EnvCard:
    success = {"kind": "terminated"} if metric != "return" else None
    return EnvCard.model_validate({
        "id": "rlbench/Toy-v0", "family": "classic", "api": "gymnasium",
        "entry_point": "gymnasium.envs.classic_control.cartpole:CartPoleEnv",
        "primary_metric": metric, "success": success,
        "reference": {"random": random, "expert": expert},
        "description": "A toy card for the normalization tests.",
    })  # fmt: skip


def episodes(successes: list[bool], returns: list[float] | None = None) -> list[EpisodeRecord]:
    returns = returns or [float(s) for s in successes]
    return [EpisodeRecord(index=i, seed=i, r=r, l=10, success=s)
            for i, (r, s) in enumerate(zip(returns, successes, strict=True))]  # fmt: skip


def test_a_perfect_success_record_gets_the_wilson_interval_not_a_zero_width_one():
    toy = card("success_rate", ref(0.0, 0.0), ref(1.0, 0.0))
    summary = summarize(toy, episodes([True] * 50))
    normalized, rate = summary["normalized_score"], summary["aggregates"]["success_rate"]
    low, high = wilson_interval(50, 50)
    assert (rate.low, rate.high) == pytest.approx((low, high))
    assert normalized.point == 100.0
    assert (normalized.low, normalized.high) == pytest.approx((100 * low, 100 * high))
    assert normalized.high > normalized.low  # [92.9, 100], never [100, 100]


def test_the_normalized_interval_is_the_primary_intervals_image():
    toy = card("success_rate", ref(0.2, 0.4), ref(0.9, 0.3))
    summary = summarize(toy, episodes([True] * 30 + [False] * 20))
    rate, normalized = summary["aggregates"]["success_rate"], summary["normalized_score"]
    assert normalized.low == pytest.approx(100 * (rate.low - 0.2) / 0.7)
    assert normalized.high == pytest.approx(100 * (rate.high - 0.2) / 0.7)
    returns = card("return", ref(-100.0, 10.0), ref(200.0, 10.0))
    values = [float(v) for v in range(-50, 150, 4)]
    summary = summarize(returns, episodes([False] * len(values), values))
    mean, normalized = summary["aggregates"]["return_mean"], summary["normalized_score"]
    assert normalized.point == pytest.approx(100 * (mean.point + 100) / 300)
    assert normalized.low == pytest.approx(100 * (mean.low + 100) / 300)
    assert normalized.high == pytest.approx(100 * (mean.high + 100) / 300)


@pytest.mark.parametrize(
    "toy",
    [
        card("return", ref(-100.0, 10.0), ref(200.0, 10.0)),
        card("success_rate", ref(0.2, 0.4), ref(0.9, 0.3)),
        cards()["rlbench/Chess-v6"],  # no normalized score
    ],
    ids=["return", "success", "unscored"],
)
def test_the_points_the_server_checks_are_the_summarys_own(toy):
    # the server checks a result's points against summary_points (no bootstrap); they must be
    # exactly the points summarize writes, or honest results would be refused
    values = [float(v) * 1.37 for v in range(-50, 150, 3)]
    done = episodes([i % 3 == 0 for i in range(len(values))], values)
    summary, points = summarize(toy, done), summary_points(toy, done)
    expected = {f"aggregates.{k}": v.point for k, v in summary["aggregates"].items()}
    normalized = summary["normalized_score"]
    expected["normalized_score"] = None if normalized is None else normalized.point
    assert points == expected
    assert (normalized is None) == (toy.id == "rlbench/Chess-v6")


@pytest.mark.parametrize(
    ("random", "expert", "scored"),
    [
        (ref(2.72, 1.34), ref(2.62, 1.34), False),  # expert below random: no scale
        (ref(2.5, 1.0), ref(2.5, 1.0), False),  # equal
        (ref(0.0, 1.0), ref(0.2, 1.0), False),  # 0.2 < 3 standard errors (0.42)
        (ref(0.0, 1.0), ref(1.0, 1.0), True),
        (ref(2.5, None, method="exact", episodes=None, seeds=None),
         ref(2.75, None, method="exact", episodes=None, seeds=None), True),  # exact: any gap
    ],
)  # fmt: skip
def test_a_card_has_a_normalized_score_only_when_the_expert_beats_random_by_the_margin(
    random, expert, scored
):
    toy = card("return", random, expert)
    assert (toy.reference_values() is not None) is scored
    assert (toy.normalization_problem() is None) is scored
    summary = summarize(toy, episodes([False] * 4, [1.0, 2.0, 3.0, 4.0]))
    assert (summary["normalized_score"] is not None) is scored


def test_the_margin_is_stated_in_the_reason():
    reason = references_separated(0.0, 0.1, 0.2, 0.1)
    assert f"{SEPARATION_STANDARD_ERRORS:g} standard errors" in reason and "0.2" in reason


def test_no_card_of_the_suite_scores_an_expert_at_or_below_random():
    for toy in cards().values():
        random, expert = toy.reference.random, toy.reference.expert
        if toy.reference_values() is not None:
            assert expert.value > random.value, toy.id
        elif random is not None and expert is not None:
            assert toy.normalization_problem(), toy.id


def test_exact_references_need_no_seeds_and_measured_ones_do():
    exact = RefScore.model_validate(ref(1.0, None, method="exact", episodes=None, seeds=None))
    assert exact.standard_error == 0.0
    with pytest.raises(ValueError, match="exact reference has no episodes"):
        RefScore.model_validate(ref(1.0, method="exact"))
    with pytest.raises(ValueError, match="needs its 'episodes' and 'seeds'"):
        RefScore.model_validate(ref(1.0, episodes=None, seeds=None))


def test_check_flags_a_card_without_a_normalized_score():
    done = run_cli("check", "rlbench/MatchingPennies-v0", "--steps", "20")
    assert "rlbench/MatchingPennies-v0 has no normalized score" in done.stdout.replace("\n", " ")


def _matrix_references_script():
    return load_script("matrix_references")


def test_every_matrix_game_card_has_the_exact_analytic_references():
    script = _matrix_references_script()
    matrix = script.matrix_cards()
    assert len(matrix) == 150  # the 144 ordinal games and the named classics
    for toy in matrix:
        exact = script.exact_references(toy)
        for kind in ("random", "expert"):
            recorded = getattr(toy.reference, kind)
            assert recorded.method == "exact", (toy.id, kind)
            assert recorded.value == pytest.approx(exact[kind].value, abs=1e-9), (toy.id, kind)
    unscored = [c.id for c in matrix if c.reference_values() is None]
    assert len(unscored) == 49 and "rlbench/MatchingPennies-v0" in unscored
    assert "rlbench/PrisonersDilemma-v0" not in unscored
    assert script.main(["--check"]) == 0


def test_measured_matrix_scores_agree_with_the_exact_values():
    from rlbench_suite.core.catalog import get_card
    from rlbench_suite.refscores import measure

    toy = get_card("rlbench/PrisonersDilemma-v0")
    for policy, reference in (("random", toy.reference.random),
                              (toy.reference.expert.policy, toy.reference.expert)):  # fmt: skip
        measured = measure(toy, policy=policy, episodes=400)
        assert abs(measured.value - reference.value) < 4 * reference.std / 20, policy


# --- a stored normalized score must be what the file's own returns and references give ---

HOPPER_IQL = REPO / "baselines/results/Hopper-medium-v0/iql/seed-0/result.json"
"""A committed offline result (normalized score about 11 on the dataset's references)."""


def hopper(**changes) -> dict:
    """The committed Hopper-medium-v0 IQL result, its ``normalized_score`` and
    ``normalization`` updated with ``changes`` ({"normalized_score": {...}, ...})."""
    data = json.loads(HOPPER_IQL.read_text(encoding="utf-8"))
    for key, update in changes.items():
        data[key].update(update)
    return data


def on_references(data: dict, random: float, expert: float) -> dict:
    """``data`` with its normalization and normalized score consistently on other references."""
    data["normalization"].update(random=random, expert=expert)
    mean = data["aggregates"]["return_mean"]
    low, high = normalized_interval(mean["low"], mean["high"], random, expert)
    point = float(np.mean(normalized_score(data["returns"], random, expert)))
    data["normalized_score"].update(point=point, low=low, high=high)
    return data


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        # the review: point 90 [88, 92] beside returns that give about 11
        ({"normalized_score": {"point": 90.0, "low": 88.0, "high": 92.0}},
         r"normalized_score.point 90 does not match the per-episode returns on the file's "
         r"normalization \(random 17.4721, expert 3260.25\): expected 11.02"),
        ({"normalized_score": {"low": 1.0}},
         r"normalized_score.low 1 does not match aggregates.return_mean.low mapped through "
         r"the file's normalization .*: expected 9.63"),
        ({"normalized_score": {"high": 50.0}}, r"normalized_score.high 50 does not match"),
        # the review: expert 999 was accepted beside a score on the card's 3260
        ({"normalization": {"expert": 999.0}},
         r"normalized_score.point 11.02.* on the file's normalization \(random 17.4721, expert "
         r"999\): expected 36.4"),
        ({"normalization": {"metric": "score"}}, r"normalization.metric: unknown metric 'score'"),
        ({"normalization": {"expert": 17.472124}},
         r"normalization.random and .expert: expert and random reference scores are equal"),
    ],
)  # fmt: skip
def test_a_normalized_score_the_returns_contradict_is_refused(changes, message):
    with pytest.raises(ResultError, match=message):
        result_from_data(hopper(**changes))


def test_references_other_than_the_cards_are_named_with_what_the_card_has():
    consistent = result_from_data(on_references(hopper(), 17.472124, 999.0))  # loads: agrees
    card = resolve_card(consistent.env_id)
    assert summary_differences(card, consistent) == [
        "normalization.expert 999.0 differs from rlbench/Hopper-medium-v0's card, which has "
        "3260.253454"
    ]
    named = consistent.normalization.model_copy(update={"references_from": "dataset other"})
    assert reference_differences(card, named)[0] == (
        "normalization.references_from 'dataset other' differs from rlbench/Hopper-medium-v0's "
        "card, which has 'dataset rlbench/Hopper-medium-v0'"
    )
    online = resolve_card("rlbench/Hopper-v5")  # an env card is on its own references
    assert reference_differences(online, named)[0].startswith(
        "normalization: the file names dataset other's references, but rlbench/Hopper-v5 is "
        "scored on its own references (random"
    )


def test_an_env_cards_normalized_interval_is_checked_against_the_card():
    path = REPO / "baselines/results/ArmPush-v0/ppo/seed-0/result.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["normalization"] is None  # on the env card's own references
    data["normalized_score"]["high"] = 99.0
    doc = result_from_data(data)  # the file alone names no references to check it on
    (problem,) = summary_differences(resolve_card(doc.env_id), doc)
    assert problem.startswith("normalized_score's interval [") and "99]" in problem
    assert "aggregates.success_rate's interval on rlbench/ArmPush-v0's references" in problem


def test_every_committed_result_agrees_with_its_episodes_and_its_card():
    files = sorted((REPO / "baselines/results").rglob("result.json"))
    assert len(files) > 100
    wrong = {}
    for path in files:
        doc = load_result(path)  # the file's own figures and references
        problems = summary_differences(resolve_card(doc.env_id), doc)
        if problems:
            wrong[str(path)] = problems
    assert wrong == {}
