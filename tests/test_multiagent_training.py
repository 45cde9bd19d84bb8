"""Parameter-sharing PPO and the self-play league (rlbench_suite/baselines/shared_ppo.py,
league.py): tiny budgets; what is checked is the plumbing, not how well they learn."""

from __future__ import annotations

import json

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from typer.testing import CliRunner

import rlbench_suite
from rlbench_suite import make_multiagent
from rlbench_suite.baselines.algorithms import get_algorithm
from rlbench_suite.baselines.hyperparams import HyperparamsError, load_hyperparams
from rlbench_suite.baselines.league import League
from rlbench_suite.baselines.shared_ppo import FixedPartners, shared_vector_env
from rlbench_suite.baselines.train import TrainConfig, train
from rlbench_suite.cli import app
from rlbench_suite.envs.multiagent.kitchen.agents import Generalist
from rlbench_suite.evaluation import load_result
from rlbench_suite.policies import OnnxPolicy, RandomPolicy

SOURCE = {"origin": "defaults", "reference": "test"}
PREY = "module:rlbench_suite.envs.multiagent.predator_prey.agents:PredatorPreyScripted"
TINY_PPO = {"n_steps": 16, "batch_size": 48, "n_epochs": 1}


def _hyperparams(tmp_path, algo, env_id, **entry):
    path = tmp_path / f"{algo}.yaml"
    path.write_text(json.dumps({env_id: {"source": SOURCE, "n_timesteps": 64, **entry}}))
    return path


# ---------------------------------------------------------------------- parameter sharing


def test_every_learning_agent_of_every_game_is_a_slot():
    card = rlbench_suite.get_card("rlbench/PredatorPrey-v0")
    venv = shared_vector_env(card, 2, {"prey_0": PREY}, autoreset_mode=AutoresetMode.SAME_STEP)
    assert venv.agent_slots == [(g, f"predator_{i}") for g in range(2) for i in range(3)]
    obs, _ = venv.reset(seed=3)
    assert obs.shape == (6, 78)
    venv.close()
    batched = shared_vector_env(rlbench_suite.get_card("rlbench/CoopNav-v0"), 4)
    assert batched.num_envs == 12  # the batched backend: 4 games x 3 agents
    batched.close()


def test_fixed_partners_play_their_agents_and_the_learners_the_rest():
    game = FixedPartners(make_multiagent("rlbench/Kitchen-v0", "parallel"),
                         {"cook_1": RandomPolicy(make_multiagent("rlbench/Kitchen-v0")
                                                 .action_space("cook_1"))})  # fmt: skip
    assert game.possible_agents == ["cook_0"]
    obs, infos = game.reset(seed=1)
    assert list(obs) == ["cook_0"] and list(infos) == ["cook_0"]
    obs, rewards, terms, truncs, _ = game.step({"cook_0": 0})
    assert list(obs) == list(rewards) == list(terms) == list(truncs) == ["cook_0"]
    with pytest.raises(ValueError, match="not agents of the game"):
        FixedPartners(make_multiagent("rlbench/Kitchen-v0", "parallel"), {"chef": None})


def test_the_shared_policy_acts_for_every_agent_and_its_onnx_acts_alike(tmp_path):
    env_id = "rlbench/PredatorPrey-v0"
    path = _hyperparams(tmp_path, "shared_ppo", env_id, n_envs=1, partners={"prey_0": PREY},
                        **TINY_PPO)  # fmt: skip
    report = train(TrainConfig(env_id, "shared_ppo", out=tmp_path, hyperparams=path,
                               eval_episodes=1, final_episodes=2))  # fmt: skip
    model, run_dir = report.model, report.run_dir
    assert model.get_env().num_envs == 3  # one slot per predator
    assert report.run["vector_backend"] == "pettingzoo-parallel"
    onnx = OnnxPolicy(run_dir / "policy.onnx")
    game = make_multiagent(env_id, "parallel")
    obs, infos = game.reset(seed=7)
    for _ in range(30):  # every agent (the prey too) acted for by the one shared policy
        actions = {}
        for agent, o in obs.items():
            expected, _ = model.predict(o, deterministic=True)
            assert onnx.act(o, infos[agent]) == int(expected)
            actions[agent] = int(expected)
        obs, _, _, _, infos = game.step(actions)
        if not game.agents:
            break
    game.close()


def test_coopnav_trains_on_its_batched_backend(tmp_path):
    env_id = "rlbench/CoopNav-v0"
    path = _hyperparams(tmp_path, "shared_ppo", env_id, n_envs=2, n_steps=25, batch_size=50,
                        n_epochs=1, n_timesteps=150)  # one rollout  # fmt: skip
    report = train(TrainConfig(env_id, "shared_ppo", out=tmp_path, hyperparams=path,
                               eval_episodes=1, final_episodes=2))  # fmt: skip
    assert report.run["vector_backend"] == "batched"
    assert report.run["steps"] == 150 and report.run["train_seeds"] == [0, 1]  # 2 games x 3


def test_partners_and_league_keys_belong_to_their_algorithms(tmp_path):
    path = _hyperparams(tmp_path, "ppo", "rlbench/CartPole-v1", partners={"a": "random"})
    with pytest.raises(HyperparamsError, match="key 'partners': only for shared_ppo"):
        load_hyperparams(get_algorithm("ppo"), "rlbench/CartPole-v1", path)
    path = _hyperparams(tmp_path, "league", "rlbench/Duel-v0")
    with pytest.raises(HyperparamsError, match="key 'league': needed by league"):
        load_hyperparams(get_algorithm("league"), "rlbench/Duel-v0", path)
    bonus = [{"name": "rlbench/KitchenOwnContribution-v0"}]
    path = _hyperparams(tmp_path, "ppo", "rlbench/CartPole-v1", game_wrappers=bonus)
    with pytest.raises(HyperparamsError, match="key 'game_wrappers': only for shared_ppo"):
        load_hyperparams(get_algorithm("ppo"), "rlbench/CartPole-v1", path)
    scored = [{"name": "rlbench/FlattenDictObservation-v0"}]  # changes what the policy sees
    path = _hyperparams(tmp_path, "shared_ppo", "rlbench/Kitchen-v0", game_wrappers=scored)
    with pytest.raises(HyperparamsError, match=r"not a training-only wrapper of the game.*Kitch"):
        load_hyperparams(get_algorithm("shared_ppo"), "rlbench/Kitchen-v0", path)


GAME = "game_wrappers"
NUMBER = r"bonus for 'pot' must be a finite number, got "


@pytest.mark.parametrize(("key", "kwargs", "message"), [
    (GAME, {"bonus": {"pot": "abc"}}, rf"'{GAME}.0': kwargs: {NUMBER}'abc'"),
    (GAME, {"bonus": {"pot": [2]}}, NUMBER + r"\[2\]"),
    (GAME, {"bonus": {"pot": True}}, NUMBER + "True"),
    (GAME, {"bonus": {"Pot": 2.0}}, r"unknown recipe steps \['Pot'\]; accepted: \['onion'"),
    (GAME, {"bonus": 3}, r"bonus must map recipe steps to numbers"),
    (GAME, {"scale": 3}, r"kwargs: .*unexpected keyword argument 'scale'"),
    ("env_wrappers", {}, r"'env_wrappers.0': .* wraps the PettingZoo game.*under game_wrappers"),
])  # fmt: skip
def test_game_wrapper_mistakes_are_refused_when_the_file_is_read(tmp_path, key, kwargs, message):
    refs = [{"name": "rlbench/KitchenOwnContribution-v0", "kwargs": kwargs}]
    path = _hyperparams(tmp_path, "shared_ppo", "rlbench/Kitchen-v0", **{key: refs})
    with pytest.raises(HyperparamsError, match=message):
        load_hyperparams(get_algorithm("shared_ppo"), "rlbench/Kitchen-v0", path)


def test_game_wrappers_shape_the_training_reward_only(tmp_path):
    """Kitchen's own-contribution bonus reaches the learner's training reward through the
    hyperparameters' game_wrappers (on the Parallel game, below the partners); the final
    score is still the card's team reward."""
    env_id = "rlbench/Kitchen-v0"
    generalist = "module:rlbench_suite.envs.multiagent.kitchen.agents:Generalist"
    bonus = {"onion": 0.5, "board": 0.5, "chopped": 1.0, "pot": 2.0, "plated": 3.0,
             "delivered": 20.0}  # fmt: skip
    wrappers = [{"name": "rlbench/KitchenOwnContribution-v0", "kwargs": {"bonus": bonus}}]
    card = rlbench_suite.get_card(env_id)
    returns = []
    for stack in ([], wrappers):  # the learner is a Generalist too, on the same seed
        venv = shared_vector_env(card, 1, {"cook_1": generalist}, stack,
                                 autoreset_mode=AutoresetMode.SAME_STEP)  # fmt: skip
        cook = Generalist(seed=3)
        obs, info = venv.reset(seed=3)
        total, own = 0.0, []
        for _ in range(card.max_episode_steps - 1):  # the last info goes to final_info
            obs, reward, _, _, info = venv.step(np.array([cook.act(obs[0], {})]))
            total += float(reward[0])
            own += list(info.get("own_steps", [[]])[0])
        returns.append((total, own))
        venv.close()
    (team, none), (shaped, own) = returns
    assert none == [] and {"onion", "board", "chopped", "pot"} <= set(own)
    assert shaped == pytest.approx(team + sum(bonus[s] for s in own))
    tiny = {**TINY_PPO, "batch_size": 32}  # 2 games x 16 steps
    path = _hyperparams(tmp_path, "shared_ppo", env_id, n_envs=2, game_wrappers=wrappers,
                        partners={"cook_1": generalist}, **tiny)  # fmt: skip
    report = train(TrainConfig(env_id, "shared_ppo", out=tmp_path, hyperparams=path,
                               eval_episodes=1, final_episodes=2))  # fmt: skip
    assert report.run["vector_backend"] == "pettingzoo-parallel"
    result = load_result(report.run_dir / "result.json")
    assert len(result.returns) == 2 and all(r == int(r) for r in result.returns)  # no 0.5s


# ---------------------------------------------------------------------------------- league


class _Fake:
    def reset(self, seed=None):
        pass

    def act(self, observation, info):
        return 0


def _league(**settings) -> League:
    league = League(seed=0, **settings)
    for name in ("beaten", "even", "unbeaten"):
        league.add(name, _Fake(), name)
    return league


def test_the_league_samples_the_opponents_the_learner_beats_least_most_often():
    league = _league(power=2.0, window=20, min_weight=0.0)
    for _ in range(20):
        league.record("beaten", 1.0)
        league.record("even", 0.5)
        league.record("unbeaten", 0.0)
    weights = dict(zip([m.name for m in league.members], league.weights(), strict=True))
    assert weights["unbeaten"] > weights["even"] > weights["beaten"]
    np.testing.assert_allclose(sum(weights.values()), 1.0)
    counts = {name: 0 for name in weights}
    for _ in range(3000):
        counts[league.sample().name] += 1
    assert counts["unbeaten"] > 2 * counts["even"] > 4 * counts["beaten"]
    for name, weight in weights.items():  # sampled as weighted
        assert abs(counts[name] / 3000 - weight) < 0.03


def test_untried_opponents_are_tried_and_power_zero_is_uniform():
    league = _league(power=0.0)
    league.record("beaten", 1.0)
    np.testing.assert_allclose(league.weights(), [1 / 3] * 3)
    league = _league(power=2.0, min_weight=0.05)
    for _ in range(50):
        league.record("beaten", 1.0)
    weights = league.weights()
    assert weights[0] >= 0.04 and weights[1] == weights[2]  # never never; the unplayed even


def test_snapshots_beyond_the_limit_drop_the_oldest_and_results_window():
    league = _league(max_snapshots=2, window=3)
    for step in (1, 2, 3):
        league.add(f"snapshot-{step}", _Fake(), f"s{step}", snapshot=True)
    assert [m.name for m in league.members] == ["beaten", "even", "unbeaten",
                                                 "snapshot-2", "snapshot-3"]  # fmt: skip
    league.record("snapshot-1", 1.0)  # a game against a dropped snapshot is forgotten
    for score in (0.0, 0.0, 1.0, 1.0, 1.0):
        league.record("even", score)
    assert league.member("even").score() == pytest.approx(3.5 / 4)  # the last 3 + prior
    assert league.member("even").games == 5
    with pytest.raises(ValueError, match="already has an opponent"):
        league.add("even", _Fake(), "even")


def test_cli_league_writes_the_run_folder_with_snapshots(tmp_path):
    env_id = "rlbench/Duel-v0"
    league = {"opponents": ["random", "module:rlbench_suite.envs.multiagent.duel.bots:EasyBot"],
              "snapshot_every": 64}  # fmt: skip
    path = _hyperparams(tmp_path, "league", env_id, n_envs=2, n_steps=32, batch_size=32,
                        n_epochs=1, n_timesteps=192, league=league)  # fmt: skip
    result = CliRunner().invoke(app, ["train", env_id, "--algo", "league", "--hyperparams",
                                      str(path), "--out", str(tmp_path), "--eval-episodes", "1",
                                      "--final-episodes", "2"])  # fmt: skip
    assert result.exit_code == 0, result.output
    run_dir = tmp_path / "Duel-v0" / "league" / "seed-0"
    for name in ("run.json", "curve.csv", "model.zip", "policy.onnx", "policy.onnx.meta.json",
                 "result.json", "league/league.json"):  # fmt: skip
        assert (run_dir / name).is_file(), name
    run = json.loads((run_dir / "run.json").read_text())
    assert run["status"] == "finished" and run["vector_backend"] == "league"
    assert "league/" in run["files"]
    assert json.loads((run_dir / "policy.onnx.meta.json").read_text())["train_seeds"] == [0, 1]
    table = json.loads((run_dir / "league" / "league.json").read_text())
    names = [o["name"] for o in table["opponents"]]
    assert names[:2] == ["random", "EasyBot"] and "snapshot-64" in names
    assert sum(o["games"] for o in table["opponents"]) >= 0
    assert (run_dir / "league" / "snapshot-64.onnx").is_file()
    assert load_result(run_dir / "result.json").env_id == env_id
