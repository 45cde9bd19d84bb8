"""Medium-replay data: the episode recorder, a recorded training run, and its cards."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from rlbench_suite.core.dataset_cards import (
    DatasetCard,
    dataset_cards,
    get_dataset_card,
    load_dataset_card,
)
from rlbench_suite.core.provenance import cpu_platform
from rlbench_suite.core.seeds import EVALUATION_SEEDS, TRAINING_SEEDS
from rlbench_suite.datasets.recorder import EpisodeSink, RecordEpisodes, RecordVectorEpisodes
from rlbench_suite.datasets.storage import Episode
from tests.dataset_helpers import CARD_REFERENCES, assert_card_refused, small_card

LIMIT = 3


class Counter(gym.Env):
    """Observation ``[steps this episode, resets so far]``; action 1 terminates."""

    observation_space = gym.spaces.Box(0, 1000, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self) -> None:
        self.t = self.resets = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> Any:
        super().reset(seed=seed)
        self.t, self.resets = 0, self.resets + 1
        return self._obs(), {}

    def step(self, action: Any) -> Any:
        self.t += 1
        return self._obs(), float(self.t), bool(action == 1), False, {}

    def _obs(self) -> np.ndarray:
        return np.array([self.t, self.resets], dtype=np.float32)


def counter() -> gym.Env:
    return gym.wrappers.TimeLimit(Counter(), max_episode_steps=LIMIT)


def _rows(episode: Episode) -> list[list[float]]:
    return episode.observations.tolist()


def test_the_recorder_keeps_terminations_truncations_and_final_observations_apart():
    sink = EpisodeSink(Counter.observation_space, Counter.action_space)
    env = RecordEpisodes(counter(), sink)
    env.reset(seed=7)
    for action in (0, 0, 0):  # truncated by the time limit at step 3
        env.step(action)
    env.reset()
    for action in (0, 1):  # terminated by action 1 at step 2
        env.step(action)
    env.reset()
    env.step(0)  # still running when the driver stops
    first, second = sink.episodes
    assert _rows(first) == [[0, 1], [1, 1], [2, 1], [3, 1]]  # the last row: the final obs
    assert first.terminations.tolist() == [False, False, False]
    assert first.truncations.tolist() == [False, False, True]
    assert _rows(second) == [[0, 2], [1, 2], [2, 2]]
    assert second.terminations.tolist() == [False, True]
    assert second.truncations.tolist() == [False, False]
    assert second.actions.tolist() == [0, 1] and second.rewards.tolist() == [1.0, 2.0]
    assert (first.seed, second.seed) == (7, None)
    assert (sink.steps, sink.open_steps, sink.origins) == (5, 1, [0, 0])


def test_the_vector_recorder_records_what_each_sub_env_emitted():
    """A SAME_STEP vector env returns the next episode's first observation on the last step;
    the vector recorder must store the final one (info["final_obs"]), as a recorder inside
    each sub-env sees it."""
    inner = EpisodeSink(Counter.observation_space, Counter.action_space)
    outer = EpisodeSink(Counter.observation_space, Counter.action_space)
    envs = gym.vector.SyncVectorEnv(
        [lambda: RecordEpisodes(counter(), inner) for _ in range(3)],
        autoreset_mode=gym.vector.AutoresetMode.SAME_STEP,
    )
    recorded = RecordVectorEpisodes(envs, 2, outer)
    recorded.reset(seed=40)
    rng = np.random.default_rng(0)
    for _ in range(25):
        recorded.step(rng.integers(0, 2, size=3) * (rng.random(3) < 0.3))
    mine = [(o, e) for o, e in zip(inner.origins, inner.episodes, strict=True) if o < 2]
    assert len(outer.episodes) == len(mine) > 6
    for (origin, expected), got, got_origin in zip(mine, outer.episodes, outer.origins,
                                                   strict=True):  # fmt: skip
        assert origin == got_origin
        for key in ("observations", "actions", "rewards", "terminations", "truncations"):
            np.testing.assert_array_equal(getattr(got, key), getattr(expected, key))
        assert got.seed == expected.seed
        last = got.observations[-1]
        assert last[0] == len(got) > 0  # the final observation, never the reset one
        assert got.truncations[-1] == (len(got) == LIMIT)  # TimeLimit: both at the limit
    assert sorted(e.seed for e in outer.episodes if e.seed is not None) == [40, 41]
    assert outer.open_steps == sum(t.open_steps for t in inner.tracks[:2])
    recorded.close()


def test_the_vector_recorder_refuses_what_it_cannot_record():
    envs = gym.vector.SyncVectorEnv([counter, counter])  # NEXT_STEP autoreset
    sink = EpisodeSink(Counter.observation_space, Counter.action_space)
    with pytest.raises(ValueError, match="SAME_STEP"):
        RecordVectorEpisodes(envs, 1, sink)
    same = gym.vector.SyncVectorEnv([counter, counter],
                                    autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)  # fmt: skip
    with pytest.raises(ValueError, match=r"cannot record 3 of 2 sub-envs: 1\.\.2 accepted"):
        RecordVectorEpisodes(same, 3, sink)


def replay_card(**training: Any) -> DatasetCard:
    """A small CartPole medium-replay card: the zoo's PPO run, stopped early."""
    base = small_card()
    run = {"algo": "ppo", "hyperparams": "rlbench/CartPole-v1", "seed": 0, "budget": 100_000,
           "stop": 512, "recorded_envs": 3, **training}  # fmt: skip
    return DatasetCard.model_validate({
        **base.model_dump(exclude={"source", "build", "id", "kind"}),
        "id": "rlbench/CartPole-medium-replay-v0", "kind": "medium-replay",
        "source": {"training": run}, "build": {"command": "test"},
    })  # fmt: skip


def test_a_build_holds_exactly_what_the_training_envs_emitted():
    """Every recorded env's episodes, replayed with their actions on a fresh env reset as the
    trainer reset it (seed + i first, then unseeded), give the same observations, rewards
    and ends; recorded + still-running steps are the recorded envs' share of the run."""
    from rlbench_suite.datasets.replay import record_training

    card = replay_card()
    episodes, stats = record_training(card)
    assert stats.training_steps == 512  # 8 envs x 64 steps: the first step at the stop
    assert stats.recorded_steps == 3 * 512 // 8
    assert sum(len(e) for e in episodes) + stats.open_steps == stats.recorded_steps
    assert sorted(set(stats.origins)) == [0, 1, 2]
    for origin in range(3):
        env = gym.make(card.env_id)
        mine = [e for o, e in zip(stats.origins, episodes, strict=True) if o == origin]
        for n, episode in enumerate(mine):
            assert episode.seed == (origin if n == 0 else None)
            obs, _ = env.reset(seed=episode.seed)
            np.testing.assert_array_equal(obs, episode.observations[0])
            for t, action in enumerate(episode.actions):
                obs, reward, terminated, truncated, _ = env.step(action)
                np.testing.assert_array_equal(obs, episode.observations[t + 1])
                assert reward == episode.rewards[t]
                assert (terminated, truncated) == (episode.terminations[t],
                                                   episode.truncations[t])  # fmt: skip
        env.close()


def test_a_rebuild_of_a_replay_dataset_gives_the_same_content_hash(tmp_path: Path):
    from rlbench_suite.datasets.builder import build
    from rlbench_suite.datasets.storage import read_episodes

    card = replay_card(stop=256, recorded_envs=2)
    first = build(card, tmp_path / "a")
    second = build(card, tmp_path / "b")
    assert first.content_sha256 == second.content_sha256
    assert [f.sha256 for f in first.files] == [f.sha256 for f in second.files]
    assert first.replay is not None and first.replay.recorded_steps == 2 * 256 // 8
    assert first.steps + first.replay.open_steps == first.replay.recorded_steps
    assert first.episodes == len(list(read_episodes(tmp_path / "a" / "data/main_data.hdf5")))
    other = build(replay_card(stop=256, recorded_envs=2, seed=1), tmp_path / "c")
    assert other.content_sha256 != first.content_sha256  # the seed matters


def test_a_run_that_cannot_be_recorded_is_refused_before_training():
    from rlbench_suite.baselines.training_envs import TrainError
    from rlbench_suite.datasets.replay import record_training

    with pytest.raises(TrainError, match="recorded_envs = 9, but the ppo entry for "
                                         "rlbench/CartPole-v1 trains 8 envs"):  # fmt: skip
        record_training(replay_card(recorded_envs=9))
    with pytest.raises(TrainError, match="cannot make replay data"):
        record_training(replay_card(algo="bc"))


REPLAY_CARD = """
id = "rlbench/CartPole-medium-replay-v0"
env_id = "rlbench/CartPole-v1"
kind = "medium-replay"
description = "A training run's replay data in CartPole, for the tests."

[source.training]
algo = "ppo"
hyperparams = "rlbench/CartPole-v1"
seed = 0
budget = 100000
stop = 5120
recorded_envs = 8

[build]
command = "rlbench datasets build rlbench/CartPole-medium-replay-v0"
""" + CARD_REFERENCES


def test_a_good_replay_card_loads(tmp_path: Path):
    path = tmp_path / "card.toml"
    path.write_text(REPLAY_CARD)
    card = load_dataset_card(path)
    assert card.source.training is not None and card.source.episodes is None
    assert card.reset_seeds == list(range(8))


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("seed = 0", "seed = 20000", ["field 'source.training.seed'", "TRAINING_SEEDS"]),
        ("stop = 5120", "stop = 200000", ["field 'source.training'", "past the run's budget"]),
        ("recorded_envs = 8", "recorded_envs = 0", ["field 'source.training.recorded_envs'"]),
        ("recorded_envs = 8", 'recorded_envs = 8\ncolour = "red"',
         ["field 'source.training.colour'", "accepted fields here"]),
        ('hyperparams = "rlbench/CartPole-v1"', 'hyperparams = "CartPole"',
         ["field 'source.training.hyperparams'", "env id"]),
        ("[source.training]", '[source]\npolicies = [{policy = "random", episodes = 3}]\n'
         "[source.training]", ["field 'source'", "either policies or a training run"]),
        ('command = "rlbench', 'seed = 1000000000\ncommand = "rlbench',
         ["build.seed", "leave build.seed out"]),
        ('kind = "medium-replay"', 'kind = "medium"', ["does not match env_id"]),
        ('id = "rlbench/CartPole-medium-replay-v0"\nenv_id = "rlbench/CartPole-v1"\n'
         'kind = "medium-replay"', 'id = "rlbench/CartPole-medium-v0"\n'
         'env_id = "rlbench/CartPole-v1"\nkind = "medium"',
         ["only medium-replay data comes from a training run, not 'medium'"]),
        ("[source.training]", "[source.trainer]", ["field 'source.trainer'"]),
    ],
)
def test_a_malformed_replay_card_names_the_file_and_the_field(tmp_path, old, new, expected):
    assert old in REPLAY_CARD
    assert_card_refused(tmp_path / "card.toml", REPLAY_CARD.replace(old, new), expected)


def test_a_medium_replay_card_without_its_training_run_is_refused(tmp_path: Path):
    start = REPLAY_CARD.index("[source.training]")
    end = REPLAY_CARD.index("[build]")
    text = REPLAY_CARD[:start] + '[source]\nnotes = "no run"\n\n' + REPLAY_CARD[end:]
    assert_card_refused(tmp_path / "card.toml", text, ["field 'source'", "[source.training]"])


def _replay_cards() -> list[DatasetCard]:
    return [c for c in dataset_cards().values() if c.kind == "medium-replay"]


def test_the_suite_has_medium_replay_cards_built_between_random_and_expert():
    cards = _replay_cards()
    assert len(cards) >= 6
    for card in cards:
        run = card.source.training
        assert run is not None and card.built, card.id
        assert run.seed in TRAINING_SEEDS
        assert not any(s in EVALUATION_SEEDS for s in card.reset_seeds)
        assert card.mean_return is not None
        random, expert = card.reference.random.value, card.reference.expert.value
        assert card.mean_return < expert, card.id
        # above random, or the card says why not (Ant: clipped Gaussian actions' control cost)
        assert random < card.mean_return or "below the random data's" in card.description
        medium = get_dataset_card(card.id.replace("-medium-replay-", "-medium-"))
        assert medium.reference == card.reference
        if run.curve is not None:  # the stop: where the zoo's curve first reaches medium
            assert run.curve_return is not None and medium.mean_return is not None
            assert run.curve_return >= medium.mean_return


def test_the_committed_cartpole_card_rebuilds_to_its_hash_and_reads_back(tmp_path, monkeypatch):
    """`rlbench datasets build` of the suite's card (the zoo's CartPole run, 5120 steps)
    matches the committed content hash; `info` shows the run; the offline id serves it."""
    from typer.testing import CliRunner

    import rlbench_suite
    from rlbench_suite.cli import app
    from rlbench_suite.datasets import load

    monkeypatch.setenv("RLBENCH_DATA_DIR", str(tmp_path))
    dataset_id = "rlbench/CartPole-medium-replay-v0"
    card = get_dataset_card(dataset_id)
    assert card.build.cpu is not None  # the card says where its run reproduces
    result = CliRunner().invoke(app, ["datasets", "build", dataset_id], catch_exceptions=False)
    if card.build.cpu != cpu_platform():
        # torch's kernels differ between processors: on another CPU the build is refused (if
        # the run gives other bits there), saying why and leaving nothing in the cache
        text = " ".join(result.output.split())
        if result.exit_code != 0:
            assert "a torch training run's data, whose bits depend on the CPU too" in text, text
            assert card.build.cpu in text and cpu_platform() in text
            assert not (tmp_path / "datasets" / dataset_id).exists()
            pytest.skip(f"{dataset_id} was built on {card.build.cpu}; this CPU is "
                        f"{cpu_platform()}, where its training run gives other bits")
    assert result.exit_code == 0, result.output
    assert card.content_sha256 in result.output
    assert "training run: 5120 steps; the recorded envs took 5120:" in result.output
    info = CliRunner().invoke(app, ["datasets", "info", dataset_id], catch_exceptions=False)
    assert ("source: training run `rlbench train rlbench/CartPole-v1 --algo ppo --seed 0 "
            "--budget 100000`") in " ".join(info.output.split())
    assert "first seed" not in info.output
    data = load(dataset_id)
    assert data.num_episodes == card.episodes
    assert float(data.episode_returns().mean()) == pytest.approx(card.mean_return)
    rlbench_suite.register_all()
    env = gym.make(dataset_id)
    assert len(env.get_dataset()["rewards"]) == card.steps
    env.close()
