"""Normalized scores exist only where they mean something, with honest intervals."""

from __future__ import annotations

import datetime as dt

import pytest

from rlbench_suite.core.cards import EnvCard, RefScore
from rlbench_suite.core.catalog import cards
from rlbench_suite.core.metrics import wilson_interval
from rlbench_suite.core.result import EpisodeRecord
from rlbench_suite.core.scoring import SEPARATION_STANDARD_ERRORS, references_separated
from rlbench_suite.core.summary import summarize, summary_points
from tests.conftest import load_script, run_cli


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
