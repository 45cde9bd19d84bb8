"""The standardized single-agent wrappers: values, spec round-trip, vector autoreset modes."""

from __future__ import annotations

import gymnasium as gym
import minigrid  # noqa: F401  (registers the MiniGrid ids used below)
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from hypothesis import given, settings
from hypothesis import strategies as st

from rlbench_suite.checks import assert_same
from rlbench_suite.core.catalog import cards, get_card
from rlbench_suite.registry import wrapper_specs
from rlbench_suite.wrappers import (
    ActionMaskInInfo,
    EpisodeStatistics,
    FlattenDictObservation,
    MissionPlaceholders,
    RescaleActionToUnit,
)
from rlbench_suite.wrappers.stats import STATS_KEY

SINGLE_AGENT_IDS = sorted(c.id for c in cards().values() if not c.is_multiagent)


def rollout(env: gym.Env, seed: int, steps: int) -> list:
    obs, _ = env.reset(seed=seed)
    env.action_space.seed(seed)
    out = [obs]
    for _ in range(steps):
        obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        out.append((obs, reward, terminated, truncated))
        if terminated or truncated:
            out.append(env.reset()[0])
    return out


@pytest.mark.parametrize("env_id", SINGLE_AGENT_IDS)
def test_spec_round_trip_rebuilds_the_same_stack(env_id):
    env = gym.make(env_id)
    rebuilt = gym.make(env.spec)
    assert rebuilt.spec == env.spec
    assert str(rebuilt) == str(env)
    # the card's stack, whether the spec carries it (most cards) or the suite's entry point
    # applies it (cards with a native vector env, whose registered spec has none)
    assert [w.name for w in env.spec.additional_wrappers] == [
        w.name for w in wrapper_specs(get_card(env_id))
    ]
    # the JSON form rebuilds it too
    from_json = gym.make(gym.envs.registration.EnvSpec.from_json(env.spec.to_json()))
    assert from_json.spec == env.spec
    assert_same(rollout(env, 7, 200), rollout(rebuilt, 7, 200), env_id)


def test_episode_statistics_values():
    env = EpisodeStatistics(
        gym.make("CartPole-v1"),
        success={"kind": "return_at_least", "threshold": 20.0},
        random_score=20.0,
        expert_score=500.0,
    )
    env.reset(seed=1)
    env.action_space.seed(1)
    total, steps = 0.0, 0
    while True:
        _, reward, terminated, truncated, info = env.step(env.action_space.sample())
        total += reward
        steps += 1
        if terminated or truncated:
            break
        assert STATS_KEY not in info
    episode = info[STATS_KEY]
    assert episode["r"] == total and episode["l"] == steps
    assert episode["success"] == (total >= 20.0) == info["is_success"]
    assert episode["normalized_score"] == pytest.approx(100 * (total - 20.0) / 480.0)
    assert set(episode) == {"r", "l", "success", "normalized_score"}  # no wall time


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ({"kind": "terminated"}, True),
        ({"kind": "terminated_positive"}, False),  # MountainCar's last reward is -1
        ({"kind": "return_at_least", "threshold": -10.0}, False),
        (None, False),
    ],
)
def test_success_rules_on_a_solved_mountain_car(rule, expected):
    env = EpisodeStatistics(gym.make("MountainCar-v0"), success=rule)
    env.reset(seed=0)
    info, step = {}, 0
    velocity_sign = 1
    while STATS_KEY not in info:  # a bang-bang controller solves it
        obs = env.unwrapped.state
        velocity_sign = 1 if obs[1] >= 0 else -1
        _, _, terminated, truncated, info = env.step(2 if velocity_sign > 0 else 0)
        step += 1
    assert terminated and not truncated
    assert info[STATS_KEY]["success"] is expected
    assert info[STATS_KEY]["normalized_score"] is None  # no reference scores given


def test_success_from_info_key_counts_any_step():
    class Flicker(gym.Env):
        observation_space = spaces.Discrete(1)
        action_space = spaces.Discrete(1)

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            self.t = 0
            return 0, {}

        def step(self, action):
            self.t += 1
            return 0, 0.0, self.t == 5, False, {"hit": self.t == 2}

    env = EpisodeStatistics(Flicker(), success={"kind": "info", "key": "hit"})
    env.reset()
    for _ in range(5):
        *_, info = env.step(0)
    assert info[STATS_KEY]["success"] is True


def test_bad_success_rule_is_refused():
    with pytest.raises(ValueError, match="accepted: info, terminated"):
        EpisodeStatistics(gym.make("CartPole-v1"), success={"kind": "won"})
    with pytest.raises(ValueError, match="needs a 'threshold'"):
        EpisodeStatistics(gym.make("CartPole-v1"), success={"kind": "return_at_least"})


def test_rescale_action_maps_unit_box_to_bounds():
    env = RescaleActionToUnit(gym.make("Pendulum-v1"))
    assert env.action_space == spaces.Box(-1.0, 1.0, (1,), np.float32)
    np.testing.assert_allclose(env.action(np.array([-1.0])), [-2.0])
    np.testing.assert_allclose(env.action(np.array([0.5])), [1.0])
    np.testing.assert_allclose(env.action(np.array([7.0])), [2.0])  # clipped
    assert env.action(np.array([0.5])).dtype == np.float32
    with pytest.raises(TypeError, match="bounded Box action space"):
        RescaleActionToUnit(gym.make("CartPole-v1"))


def test_rescale_action_is_identity_on_unit_bounds():
    env = RescaleActionToUnit(gym.make("MountainCarContinuous-v0"))
    bare = gym.make("MountainCarContinuous-v0")
    assert_same(rollout(env, 0, 50), rollout(bare, 0, 50), "identity")


def test_flatten_dict_observation():
    env = FlattenDictObservation(gym.make("MiniGrid-Empty-5x5-v0"), keys=["image", "direction"])
    obs, _ = env.reset(seed=0)
    assert obs.shape == (7 * 7 * 3 + 4,)
    assert env.observation_space.contains(obs)
    raw = env.unwrapped.gen_obs()
    np.testing.assert_array_equal(obs[:147], raw["image"].reshape(-1))
    assert obs[147 + raw["direction"]] == 1 and obs[147:].sum() == 1
    with pytest.raises(TypeError, match=r"'mission'.*cannot be flattened"):
        FlattenDictObservation(gym.make("MiniGrid-Empty-5x5-v0"))
    with pytest.raises(KeyError, match="accepted: \\['direction', 'image', 'mission'\\]"):
        FlattenDictObservation(gym.make("MiniGrid-Empty-5x5-v0"), keys=["pixels"])
    with pytest.raises(TypeError, match="needs a Dict observation space"):
        FlattenDictObservation(gym.make("CartPole-v1"))


def test_gotodoor_observes_the_colour_its_mission_names():
    """GoToDoor's stack flattened the image and direction and left out the mission, so the
    agent could not know which of the 6 door colours to go to; the colour is now one-hot at
    the end of the observation."""
    from minigrid.core.constants import COLOR_NAMES

    env = gym.make("rlbench/MiniGrid-GoToDoor-5x5-v0")
    assert env.observation_space.shape == (7 * 7 * 3 + 4 + len(COLOR_NAMES),)
    seen = set()
    for seed in range(30):
        obs, _ = env.reset(seed=seed)
        colour = env.unwrapped.mission.split()[3]  # "go to the {colour} door"
        expected = np.eye(len(COLOR_NAMES))[COLOR_NAMES.index(colour)]
        np.testing.assert_array_equal(obs[-len(COLOR_NAMES):], expected)
        seen.add(colour)
    assert len(seen) == len(COLOR_NAMES)
    with pytest.raises(TypeError, match="has no placeholders to encode: accepted is a MiniGrid"):
        MissionPlaceholders(gym.make("MiniGrid-Empty-5x5-v0"))  # a fixed mission
    with pytest.raises(KeyError, match="needs a Dict observation with 'mission'"):
        MissionPlaceholders(gym.make("CartPole-v1"))


def test_action_mask_in_info():
    class Masked(gym.Env):
        observation_space = spaces.Dict(
            {"observation": spaces.Box(0, 1, (2,)), "action_mask": spaces.MultiBinary(3)}
        )
        action_space = spaces.Discrete(3)

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            return self._obs(), {}

        def _obs(self):
            return {
                "observation": np.zeros(2, np.float32),
                "action_mask": np.array([1, 0, 1], np.int8),
            }

        def step(self, action):
            return self._obs(), 0.0, False, False, {}

    env = ActionMaskInInfo(Masked())
    obs, info = env.reset()
    assert env.observation_space == spaces.Box(0, 1, (2,))
    assert obs.shape == (2,)
    np.testing.assert_array_equal(info["action_mask"], [1, 0, 1])
    samples = {env.action_space.sample(mask=info["action_mask"]) for _ in range(50)}
    assert samples == {0, 2}


@pytest.mark.parametrize(
    ("env_id", "steps", "min_episodes"),
    [
        ("rlbench/CartPole-v1", 400, 10),  # episode statistics only
        ("rlbench/Pendulum-v1", 450, 6),  # + action rescaling
        ("rlbench/MiniGrid-Empty-5x5-v0", 400, 6),  # + Dict flattening
    ],
)
@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_stack_under_every_vector_autoreset_mode(mode, env_id, steps, min_episodes):
    """The whole stack in a vector env: statistics reach the vector info in all three modes."""
    n = 3
    vec = gym.make_vec(
        env_id, num_envs=n, vectorization_mode="sync", vector_kwargs={"autoreset_mode": mode}
    )
    assert isinstance(vec, SyncVectorEnv)
    single = gym.make(env_id)
    assert vec.single_observation_space == single.observation_space
    assert vec.single_action_space == single.action_space
    vec.reset(seed=11)
    vec.action_space.seed(11)
    returns, lengths = np.zeros(n), np.zeros(n, int)
    finished = 0
    pending_reset = np.zeros(n, bool)
    for _ in range(steps):
        obs, reward, terminated, truncated, info = vec.step(vec.action_space.sample())
        assert vec.observation_space.contains(obs)
        live = ~pending_reset if mode == AutoresetMode.NEXT_STEP else np.ones(n, bool)
        returns += np.where(live, reward, 0.0)
        lengths += live
        done = terminated | truncated
        if done.any():
            stats = (
                info["final_info"][STATS_KEY]
                if mode == AutoresetMode.SAME_STEP
                else info[STATS_KEY]
            )
            present = (
                info["final_info"]["_" + STATS_KEY]
                if mode == AutoresetMode.SAME_STEP
                else info["_" + STATS_KEY]
            )
            np.testing.assert_array_equal(present, done)
            np.testing.assert_allclose(stats["r"][done], returns[done])
            np.testing.assert_array_equal(stats["l"][done], lengths[done])
            finished += int(done.sum())
            returns[done], lengths[done] = 0.0, 0
            if mode == AutoresetMode.DISABLED:
                vec.reset(options={"reset_mask": done})
        if mode == AutoresetMode.NEXT_STEP:
            pending_reset = done
    assert finished >= min_episodes


@settings(max_examples=60, deadline=None)
@given(
    low=st.floats(-100, 99, allow_nan=False),
    width=st.floats(0.01, 100, allow_nan=False),
    unit=st.floats(-1.5, 1.5, allow_nan=False),
)
def test_rescale_maps_unit_interval_affinely_onto_any_bounds(low, width, unit):
    class Bounded(gym.Env):
        observation_space = spaces.Discrete(1)

        def __init__(self):
            self.action_space = spaces.Box(low, low + width, (1,), np.float64)

        def step(self, action):
            return 0, 0.0, False, False, {}

    env = RescaleActionToUnit(Bounded())
    mapped = float(env.action(np.array([unit]))[0])
    expected = low + (min(max(unit, -1.0), 1.0) + 1.0) / 2.0 * width
    assert mapped == pytest.approx(expected, rel=1e-9, abs=1e-9)
    assert low - 1e-9 <= mapped <= low + width + 1e-9
