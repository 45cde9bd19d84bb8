"""Reference scores on the cards are reproducible from what the card records."""

from __future__ import annotations

import pytest

from rlbench_suite.core.cards import load_card
from rlbench_suite.core.catalog import get_card
from rlbench_suite.refscores import measure, metric_values, play_episodes
from tests.conftest import REPO, run_cli


@pytest.mark.parametrize(
    "env_id",
    [
        "rlbench/CartPole-v1",
        "rlbench/MiniGrid-Empty-5x5-v0",
        "rlbench/TicTacToe-v3",
        "rlbench/Reacher-v5",
        "rlbench/Pendulum-v1",
    ],
)
def test_recorded_random_score_is_reproduced(env_id):
    card = get_card(env_id)
    recorded = card.reference.random
    assert recorded.seeds == list(range(recorded.seeds[0], recorded.seeds[0] + recorded.episodes))
    again = measure(card, episodes=recorded.episodes, first_seed=recorded.seeds[0])
    assert again.value == pytest.approx(recorded.value, abs=1e-6)
    assert again.std == pytest.approx(recorded.std, abs=1e-6)
    assert again.command == recorded.command


def test_win_rate_counts_wins_only():
    card = get_card("rlbench/ConnectFour-v3")
    stats = play_episodes(card, None, list(range(20)))
    wins = metric_values(card, stats)
    assert set(wins) <= {0.0, 1.0}
    assert all((s.r >= 1) == bool(w) for s, w in zip(stats, wins, strict=True))


def test_a_competitive_cards_draws_are_measured_and_recorded():
    """HardBot against the hard bot draws most rounds on time: the card records those draws
    (the tournament Elo scores them half a win), and measuring again gives them back."""
    card = get_card("rlbench/DuelVsBotHard-v0")
    recorded = card.reference.expert
    again = measure(card, recorded.policy, episodes=20, first_seed=recorded.seeds[0])
    played = play_episodes(card, recorded.policy, recorded.seeds[:20])
    scores = card.outcome.scores([e.r for e in played], [e.success for e in played])
    assert again.draws == list(scores).count(0.5) > 0
    assert recorded.draws > 0 and recorded.draws + round(recorded.value * 100) <= 100


def test_policy_option_writes_the_expert_reference(content_copy):
    spec = "module:tests.toy_policies:first_legal"
    env = {"RLBENCH_CONTENT_ROOT": str(content_copy), "PYTHONPATH": str(REPO)}
    done = run_cli("refscores", "rlbench/CartPole-v1", "--policy", spec, "--episodes", "4",
                   "--first-seed", "7", "--write", env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    card = load_card(content_copy / "envs" / "classic" / "CartPole-v1.toml")
    expert = card.reference.expert
    assert (expert.policy, expert.episodes, expert.seeds) == (spec, 4, [7, 8, 9, 10])
    assert expert.command.endswith(f"--first-seed 7 --policy {spec}")
    assert card.reference.random == get_card("rlbench/CartPole-v1").reference.random
    again = measure(get_card("rlbench/CartPole-v1"), policy=spec, episodes=4, first_seed=7)
    assert again.value == pytest.approx(expert.value)


def test_unknown_policy_is_a_clear_error():
    done = run_cli("refscores", "rlbench/CartPole-v1", "--policy", "module:nope:x")
    assert done.returncode == 2
    assert "cannot import module 'nope'" in done.stderr and "accepted: random" in done.stderr


def test_score_over_max_score_is_the_normalized_final_score():
    import gymnasium as gym

    from rlbench_suite.cli.text_figures_command import play_text_episode, score_fraction
    from rlbench_suite.refscores import reference_policy

    card = get_card("rlbench/TextAdventure-v0")
    assert card.primary_metric == "score/max_score"
    spec = "module:rlbench_suite.envs.text.random_admissible:RandomAdmissible"
    seeds = list(range(6))
    values = metric_values(card, play_episodes(card, spec, seeds))
    env = gym.make(card.id)
    policy = reference_policy(env, spec)
    finals = [score_fraction(play_text_episode(env, policy, s)[0]) for s in seeds]
    assert values == pytest.approx(finals) and 0 < max(values) <= 1
