"""Registration with Gymnasium and PettingZoo, lazy import, unknown ids."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pettingzoo
import pytest

import rlbench_suite
from rlbench_suite import UnknownEnvError, make_multiagent
from rlbench_suite.core.catalog import cards, get_card
from rlbench_suite.registry import WRAPPED_ENTRY_POINT, WRAPPED_VECTOR_ENTRY_POINT
from tests.conftest import REPO, run_cli, run_python


def test_every_single_agent_card_is_a_gymnasium_spec():
    for card in cards().values():
        if card.is_multiagent:
            continue
        spec = gym.spec(card.id)
        assert spec.max_episode_steps == card.max_episode_steps
        if card.vector_entry_point is not None:  # the suite's own entry points build the stack
            assert (spec.entry_point, spec.vector_entry_point) == (
                WRAPPED_ENTRY_POINT, WRAPPED_VECTOR_ENTRY_POINT
            )  # fmt: skip
            assert spec.kwargs == {"env_id": card.id, **card.kwargs}
            assert spec.additional_wrappers == ()
            continue
        assert spec.entry_point == card.entry_point
        assert spec.kwargs == card.kwargs
        names = [w.name for w in spec.additional_wrappers]
        assert names[0] == "rlbench/EpisodeStatistics-v0"
        assert names[1:] == [w.name for w in card.wrappers]


def test_gym_make_and_make_vec():
    env = gym.make("rlbench/CartPole-v1")
    obs, _ = env.reset(seed=3)
    assert env.observation_space.contains(obs)
    assert env.spec.max_episode_steps == 500
    vec = gym.make_vec("rlbench/CartPole-v1", num_envs=3, vectorization_mode="sync")
    obs, _ = vec.reset(seed=3)
    assert obs.shape == (3, 4)
    np.testing.assert_array_equal(obs[0], env.reset(seed=3)[0])


def test_module_prefixed_id_works_without_prior_import():
    proc = run_python(
        "import gymnasium as gym\n"
        "env = gym.make('rlbench_suite:rlbench/Pendulum-v1')\n"
        "print(env.action_space.low.tolist(), env.spec.id)\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert "[-1.0] rlbench/Pendulum-v1" in proc.stdout


def test_import_is_lazy():
    proc = run_python(
        "import sys, rlbench_suite, gymnasium as gym\n"
        "heavy = ['mujoco', 'pybullet', 'torch', 'minigrid', 'Box2D', 'pygame', 'chess']\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
        "gym.make('rlbench/Hopper-v5')\n"
        "print('mujoco' in sys.modules)\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["[]", "True"]


def test_unknown_id_suggestions():
    with pytest.raises(gym.error.NameNotFound, match="Did you mean: `HalfCheetah`"):
        gym.make("rlbench/HalfCheeta-v5")
    with pytest.raises(UnknownEnvError, match="Did you mean: rlbench/ConnectFour-v3"):
        make_multiagent("rlbench/ConectFour-v3", api="aec")


def test_broken_card_is_left_out_with_a_warning(content_copy):
    card = content_copy / "envs" / "classic" / "Pendulum-v1.toml"
    card.write_text(card.read_text().replace("max_episode_steps = 200", "max_episode_steps = 0"))
    proc = run_python(
        "import warnings\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    import rlbench_suite\n"
        "print(len(rlbench_suite.cards()))\n"
        "print([str(w.message).splitlines()[1] for w in caught])\n",
        env={"RLBENCH_CONTENT_ROOT": str(content_copy)},
    )
    assert proc.returncode == 0, proc.stderr
    count, messages = proc.stdout.splitlines()
    assert int(count) == len(cards()) - 1
    assert "field 'max_episode_steps': Input should be greater than 0" in messages


def test_pettingzoo_registry_and_make_multiagent():
    aec = pettingzoo.make("aec", "rlbench/ConnectFour-v3")
    assert isinstance(aec, pettingzoo.AECEnv)
    par = pettingzoo.make("parallel", "rlbench/RockPaperScissors-v2")
    assert isinstance(par, pettingzoo.ParallelEnv)
    assert isinstance(make_multiagent("rlbench/RockPaperScissors-v2", api="aec"), pettingzoo.AECEnv)
    env = make_multiagent("rlbench/RockPaperScissors-v2", max_cycles=3)
    env.reset(seed=0)
    steps = 0
    while env.agents:
        env.step({a: env.action_space(a).sample() for a in env.agents})
        steps += 1
    assert steps == 3


def test_turn_based_game_refuses_parallel_api():
    with pytest.raises(ValueError, match="turn-based and has only the AEC API"):
        make_multiagent("rlbench/TicTacToe-v3", api="parallel")
    with pytest.raises(ValueError, match="turn-based and has only the AEC API"):
        pettingzoo.make("parallel", "rlbench/TicTacToe-v3")
    assert isinstance(make_multiagent("rlbench/TicTacToe-v3"), pettingzoo.AECEnv)  # native
    assert isinstance(make_multiagent("rlbench/RockPaperScissors-v2"), pettingzoo.ParallelEnv)
    with pytest.raises(ValueError, match="api must be 'parallel', 'aec' or None"):
        make_multiagent("rlbench/TicTacToe-v3", api="both")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="single-agent environment"):
        make_multiagent("rlbench/CartPole-v1")


def test_version_is_exposed():
    assert rlbench_suite.__version__.count(".") == 2


def test_multiagent_id_is_a_gymnasium_agent_view():
    env = gym.make("rlbench/TicTacToe-v3")
    assert env.unwrapped.agent == "player_1"
    assert env.observation_space.shape == (3, 3, 2)
    _obs, info = env.reset(seed=4)
    assert info["action_mask"].sum() == 9
    rebuilt = gym.make(env.spec)
    assert rebuilt.spec == env.spec
    second = gym.make("rlbench/TicTacToe-v3", agent="player_2", opponents=lambda obs, info: 4)
    _, info = second.reset(seed=0)
    assert info["action_mask"][4] == 0  # the opponent took the centre first


def test_opponents_as_policy_specs():
    rock = "module:tests.toy_policies:first_legal"  # action 0: rock
    env = gym.make("rlbench/RockPaperScissors-v2", opponents=rock)
    assert env.spec.kwargs["opponents"] == rock  # in the spec, so in its hash
    env.reset(seed=0)
    wins = [env.step(1)[1] for _ in range(5)]  # paper beats rock
    assert wins == [1.0] * 5
    env = gym.make("rlbench/RockPaperScissors-v2", opponents={"player_1": rock})
    env.reset(seed=0)
    assert env.step(2)[1] == -1.0  # scissors lose to rock
    with pytest.raises(ValueError, match="cannot import module"):
        gym.make("rlbench/RockPaperScissors-v2", opponents="module:nope:x")


def test_make_batched_steps_many_games_with_one_slot_per_agent():
    envs = rlbench_suite.make_batched("rlbench/CoopNav-v0", num_games=64, num_agents=2)
    obs, _ = envs.reset(seed=0)
    assert envs.num_envs == 128 and obs.shape == (128, 10)
    obs, rewards, *_ = envs.step(np.zeros(128, dtype=np.int64))
    assert rewards.shape == (128,)
    with pytest.raises(ValueError, match=r"has no batched backend; ids with one: .*CoopNav"):
        rlbench_suite.make_batched("rlbench/Duel-v0", num_games=2)


def test_card_opponents_are_the_default(content_copy):
    path = content_copy / "envs" / "multiagent" / "RockPaperScissors-v2.toml"
    rock = "module:tests.toy_policies:first_legal"
    line = 'agent = "player_0"'
    text = path.read_text().replace(line, f'{line}\nopponents = "{rock}"')
    assert "opponents" in text
    path.write_text(text)
    code = (
        "import gymnasium as gym, rlbench_suite\n"
        "env = gym.make('rlbench/RockPaperScissors-v2')\n"
        "print(env.spec.kwargs['opponents'])\n"
        "env.reset(seed=0)\n"
        "print(sum(env.step(1)[1] for _ in range(5)))\n"
    )
    env = {"RLBENCH_CONTENT_ROOT": str(content_copy), "PYTHONPATH": str(REPO)}
    done = run_python(code, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [rock, "5.0"]


def test_gymnasium_record_episode_statistics_stacks_on_the_suite_stack():
    env = gym.wrappers.RecordEpisodeStatistics(gym.make("rlbench/CartPole-v1"))
    env.reset(seed=0)
    env.action_space.seed(0)
    while True:
        *_, terminated, truncated, info = env.step(env.action_space.sample())
        if terminated or truncated:
            break
    assert info["episode"]["r"] == info["rlbench_episode"]["r"]
    assert info["episode"]["l"] == info["rlbench_episode"]["l"]


def test_normalized_score_uses_the_primary_metric_of_win_rate_cards():
    from rlbench_suite.wrappers import EpisodeStatistics

    env = EpisodeStatistics(
        gym.make("rlbench/TicTacToe-v3").unwrapped,
        success={"kind": "return_at_least", "threshold": 1.0},
        metric="win_rate", random_score=0.6, expert_score=1.0,
    )  # fmt: skip
    outcomes = set()
    for seed in range(30):
        _, info = env.reset(seed=seed)
        env.action_space.seed(seed)
        while True:
            action = env.action_space.sample(mask=info["action_mask"])
            _obs, _, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                break
        stats = info["rlbench_episode"]
        expected = 100.0 if stats["r"] >= 1 else -150.0  # (1 - 0.6) / 0.4, (0 - 0.6) / 0.4
        assert stats["normalized_score"] == pytest.approx(expected)
        outcomes.add(expected)
    assert outcomes == {100.0, -150.0}


@pytest.mark.parametrize(
    ("old", "new"),
    [("rlbench/Chess-v0", "rlbench/TextChess-v0"),
     ("rlbench/ChessEndgames-v0", "rlbench/TextChessEndgames-v0")],
)  # fmt: skip
def test_renamed_ids_are_refused_naming_the_new_ones(old, new):
    import warnings

    from rlbench_suite.core.catalog import RenamedEnvError

    with pytest.raises(RenamedEnvError, match=f"'{old}' was renamed '{new}'"):
        gym.make(old)
    with pytest.raises(RenamedEnvError, match=f"use '{new}'"):
        get_card(old)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "out of date, upgrade to v6" advice any more
        gym.make(new).close()
    done = run_cli("info", old)
    assert done.returncode == 2 and f"was renamed '{new}'" in done.stderr
