"""Joint medium-replay data: a parameter-sharing run on CoopNav's batched backend, recorded
game by game as joint episodes (every agent's observation, action and reward per step)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from rlbench_suite.core.dataset_cards import DatasetCard, get_dataset_card
from rlbench_suite.datasets.joint import joint_spaces, make_joint_env
from rlbench_suite.datasets.recorder import EpisodeSink, RecordJointEpisodes
from rlbench_suite.datasets.storage import Episode
from rlbench_suite.envs.multiagent.coop_nav.vector import CoopNavVectorEnv

ENV_ID = "rlbench/CoopNav-v0"
CYCLES = 25  # the card's max_cycles
AGENTS = ["agent_0", "agent_1", "agent_2"]


def _sink() -> EpisodeSink:
    env = make_joint_env(ENV_ID)
    sink = EpisodeSink(*joint_spaces(env))
    env.close()
    return sink


def assert_replays(episodes: list[Episode], origins: list[int] | tuple[int, ...],
                   first_seed: int) -> None:  # fmt: skip
    """Each recorded game's episodes, replayed in order with their joint actions on a fresh
    Parallel env (reset with ``first_seed + game`` first, then unseeded, as the batched
    backend resets a game), give the same observations, rewards and ends."""
    for game in sorted(set(origins)):
        env = make_joint_env(ENV_ID)
        mine = [e for o, e in zip(origins, episodes, strict=True) if o == game]
        for n, episode in enumerate(mine):
            assert episode.seed == (first_seed + game if n == 0 else None)
            obs, _ = env.reset(seed=episode.seed)
            for agent in AGENTS:
                np.testing.assert_array_equal(obs[agent], episode.observations[agent][0])
            for t in range(len(episode)):
                actions = {a: episode.actions[a][t] for a in AGENTS}
                obs, rewards, terminated, truncated, _ = env.step(actions)
                for agent in AGENTS:
                    np.testing.assert_array_equal(obs[agent], episode.observations[agent][t + 1])
                    assert rewards[agent] == episode.rewards[agent][t]
                    assert terminated[agent] == episode.terminations[t]
                    assert truncated[agent] == episode.truncations[t]
        env.close()


def test_the_joint_recorder_groups_each_games_agent_slots_into_one_episode():
    """Slot g * 3 + i is agent_i of game g: a recorded game is one joint episode per 25
    cycles, with the true last observations (not SAME_STEP's reset ones), truncation apart
    from termination, and the episodes still running at the stop left out."""
    sink = _sink()
    envs = RecordJointEpisodes(
        CoopNavVectorEnv(4, autoreset_mode=AutoresetMode.SAME_STEP), AGENTS, 2, sink
    )
    envs.reset(seed=500)
    rng = np.random.default_rng(0)
    for _ in range(2 * CYCLES + 7):
        envs.step(rng.integers(0, 5, size=envs.num_envs))
    assert sink.origins == [0, 1, 0, 1]  # episodes in the order they ended, games in order
    assert (sink.steps, sink.open_steps) == (4 * CYCLES, 2 * 7)
    for episode in sink.episodes:
        assert sorted(episode.observations) == sorted(episode.actions) == AGENTS
        assert episode.observations["agent_1"].shape == (CYCLES + 1, 14)
        assert episode.actions["agent_2"].dtype == np.int64
        assert episode.rewards["agent_0"].dtype == np.float64
        assert episode.truncations.tolist() == [False] * (CYCLES - 1) + [True]
        assert not episode.terminations.any()
        per_agent = [episode.rewards[a].sum() for a in AGENTS]
        assert episode.total_return == pytest.approx(np.mean(per_agent))
    assert [e.seed for e in sink.episodes] == [500, 501, None, None]
    assert_replays(sink.episodes, sink.origins, 500)
    envs.close()


def test_the_joint_recorder_refuses_what_it_cannot_record():
    sink = _sink()
    with pytest.raises(ValueError, match="SAME_STEP"):
        RecordJointEpisodes(CoopNavVectorEnv(2), AGENTS, 1, sink)
    same = CoopNavVectorEnv(2, autoreset_mode=AutoresetMode.SAME_STEP)
    with pytest.raises(ValueError, match=r"cannot record 3 of 2 games: 1\.\.2 accepted"):
        RecordJointEpisodes(same, AGENTS, 3, sink)
    with pytest.raises(ValueError, match="6 slots are not whole games of 4 agents"):
        RecordJointEpisodes(same, [*AGENTS, "agent_3"], 1, sink)


def joint_replay_card(**training: Any) -> DatasetCard:
    """The suite's CoopNav medium-replay card with its run changed (a short stop)."""
    card = get_dataset_card("rlbench/CoopNav-medium-replay-v0")
    assert card.source.training is not None
    run = card.source.training.model_copy(update=training)
    return card.model_copy(update={"source": card.source.model_copy(update={"training": run}),
                                   "content_sha256": None, "files": []})  # fmt: skip


# one whole rollout (64 games x 3 agents x 100 cycles) and 30 cycles of the next: an update
# between them, one open episode per game at the stop
SHORT_STOP = 192 * 130


def test_a_joint_replay_build_holds_what_the_shared_policys_games_emitted():
    """shared_ppo's run recorded game by game: each recorded game's episodes replay on a
    fresh Parallel env; recorded + still-running joint steps are the recorded games' cycles."""
    from rlbench_suite.datasets.replay import record_training

    card = joint_replay_card(stop=SHORT_STOP, recorded_envs=3)
    episodes, stats = record_training(card)
    assert stats.training_steps == SHORT_STOP and stats.agents == 3
    assert stats.recorded_steps == 3 * 130  # joint steps: the cycles of 3 games
    assert (len(episodes), stats.open_steps) == (3 * 5, 3 * 5)
    assert sum(len(e) for e in episodes) + stats.open_steps == stats.recorded_steps
    assert_replays(episodes, stats.origins, 0)


def test_a_rebuild_of_joint_replay_data_gives_the_same_content_hash(tmp_path: Path):
    from rlbench_suite.datasets.builder import build
    from rlbench_suite.datasets.loader import OfflineDataset

    card = joint_replay_card(stop=SHORT_STOP, recorded_envs=2)
    first = build(card, tmp_path / "a")
    second = build(card, tmp_path / "b")
    assert first.content_sha256 == second.content_sha256
    assert [f.sha256 for f in first.files] == [f.sha256 for f in second.files]
    assert (first.episodes, first.steps) == (2 * 5, 2 * 5 * CYCLES)
    data = OfflineDataset(tmp_path / "a" / "data/main_data.hdf5").get_dataset()
    assert sorted(data["observations"]) == AGENTS
    assert data["observations"]["agent_0"].shape == (first.steps, 14)
    other = build(joint_replay_card(stop=192 * 30, recorded_envs=2, seed=1), tmp_path / "c")
    assert other.content_sha256 != build(joint_replay_card(stop=192 * 30, recorded_envs=2),
                                         tmp_path / "d").content_sha256  # the seed matters


def test_joint_replay_data_needs_a_run_of_every_agent():
    from rlbench_suite.baselines.training_envs import TrainError
    from rlbench_suite.datasets.replay import record_training

    with pytest.raises(TrainError, match=r"--algo ppo cannot make replay data of "
                                         r"rlbench/CoopNav-v0 \(parameter sharing"):  # fmt: skip
        record_training(joint_replay_card(algo="ppo", hyperparams="rlbench/CoopNav-v0"))
    with pytest.raises(TrainError, match="recorded_envs = 65, but the shared_ppo entry for "
                                         "rlbench/CoopNav-v0 trains 64 games"):  # fmt: skip
        record_training(joint_replay_card(recorded_envs=65))


def test_a_shared_run_with_scripted_partners_cannot_be_recorded_as_joint_data():
    """PredatorPrey's shared_ppo entry plays the prey with a scripted partner: its slots are
    not every agent of a game, so its envs are refused for recording before training."""
    from rlbench_suite.baselines.algorithms import get_algorithm
    from rlbench_suite.baselines.hyperparams import load_hyperparams
    from rlbench_suite.baselines.training_envs import TrainError, make_training_env
    from rlbench_suite.core.catalog import get_card
    from rlbench_suite.datasets.replay import _Recorder

    algo = get_algorithm("shared_ppo")
    params = load_hyperparams(algo, "rlbench/PredatorPrey-v0")
    with pytest.raises(TrainError, match="recorded on the card's batched backend only"):
        make_training_env(get_card("rlbench/PredatorPrey-v0"), params, algo, 0,
                          _Recorder(1, _sink()))  # fmt: skip


def test_the_coop_nav_replay_card_is_an_offline_id_whose_policies_are_scored_elsewhere(tmp_path):
    """The offline id is the card's online env (agent_0 beside the scripted partners): its
    episodes are scored on the online card's references (that game's), while the data and
    get_normalized_score are the team's; the harness and the offline algorithms refuse the
    id (a single-agent policy cannot be scored on the team's references), naming where to
    score it; `info` says the run and that its recorded envs are games."""
    import gymnasium as gym
    from typer.testing import CliRunner

    import rlbench_suite
    from rlbench_suite.baselines.train import TrainConfig, TrainError, train
    from rlbench_suite.cli import app
    from rlbench_suite.core.catalog import get_card
    from rlbench_suite.core.offline_cards import offline_env_card
    from rlbench_suite.evaluation import evaluate

    dataset_id = "rlbench/CoopNav-medium-replay-v0"
    card = get_dataset_card(dataset_id)
    online = get_card("rlbench/CoopNav-v0")
    assert card.reference == get_dataset_card("rlbench/CoopNav-medium-v0").reference
    assert offline_env_card(dataset_id).reference == online.reference != card.reference
    rlbench_suite.register_all()
    env = gym.make(dataset_id)
    env.reset(seed=5)
    env.action_space.seed(5)
    while True:
        _, _, terminated, truncated, info = env.step(env.action_space.sample())
        if terminated or truncated:
            break
    stats = info["rlbench_episode"]
    assert stats["normalized_score"] == pytest.approx(online.normalized_score(stats["r"]))
    assert env.get_wrapper_attr("dataset_id") == dataset_id
    # the team's references: a warning says so once (a review scored a random agent_0 beside
    # the scripted partners 0.6 to 0.9 through it, silently)
    with pytest.warns(UserWarning, match=r"references are the team's returns in the "
                      r"multi-agent game rlbench/CoopNav-v0: .* not the returns of this "
                      r"Gymnasium view"):  # fmt: skip
        team = env.get_wrapper_attr("get_normalized_score")(card.mean_return)
    assert team == pytest.approx(card.normalized_score(card.mean_return) / 100)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        normalize = env.get_wrapper_attr("get_normalized_score")
        normalize(card.mean_return)  # once
        # saying which returns these are is correct use: no warning, the matching references
        assert normalize(card.mean_return, team=True) == pytest.approx(team)
        assert normalize(stats["r"], team=False) == pytest.approx(
            stats["normalized_score"] / 100)
        assert normalize(stats["r"], team=False) != pytest.approx(
            normalize(stats["r"], team=True))
    with pytest.raises(TypeError, match=r"team takes True, False or None, got 'yes'"):
        normalize(1.0, team="yes")
    env.close()
    with pytest.raises(ValueError, match=r"holds joint data .* score a policy on the online "
                       r"card rlbench/CoopNav-v0"):  # fmt: skip
        evaluate(dataset_id, "random", workers=1)
    with pytest.raises(TrainError, match=r"holds joint data .* --algo bc takes a single-agent"):
        train(TrainConfig(dataset_id, "bc", budget=10, out=tmp_path / "runs"))
    out = CliRunner().invoke(app, ["datasets", "info", dataset_id, "--cache", str(tmp_path)],
                             catch_exceptions=False)  # fmt: skip
    text = " ".join(out.output.split())
    assert ("source: training run `rlbench train rlbench/CoopNav-v0 --algo shared_ppo "
            "--seed 0") in text
    assert "its first 4 games recorded" in text
