"""Your own environments: a card outside the suite, registered and used end to end."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import gymnasium as gym
import pytest

import rlbench_suite
from rlbench_suite.core.cards import CardError, load_card
from rlbench_suite.core.catalog import UnknownEnvError, get_card
from rlbench_suite.core.result import load_result
from tests.conftest import run_cli

ENV_MODULE = '''
import gymnasium as gym
import numpy as np


class Corridor(gym.Env):
    """Walk right from cell 0 to cell `length`; +1 at the end, -0.01 a step."""

    def __init__(self, length=5):
        self.length = length
        self.observation_space = gym.spaces.Box(0.0, 1.0, (1,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.position = 0

    def _obs(self):
        return np.array([self.position / self.length], np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.position = int(self.np_random.integers(0, 2))
        return self._obs(), {}

    def step(self, action):
        self.position = max(0, self.position + (1 if int(action) == 1 else -1))
        done = self.position >= self.length
        return self._obs(), 1.0 if done else -0.01, done, False, {"success": done}


def walk_right(observation, info):
    return 1
'''

CARD = """
id = "{id}"
family = "classic"
api = "gymnasium"
entry_point = "{entry_point}"
max_episode_steps = 50
primary_metric = "return"
success = {{kind = "info", key = "success"}}
description = "A corridor to walk along, registered from outside the suite by the tests."
"""


@pytest.fixture(autouse=True)
def _forget_the_cards_added(monkeypatch):
    """What a test registers is forgotten after it: a later test in the same worker sees the
    suite's catalog only (one listed ``mylab/Corridor-v0`` among the classic cards)."""
    from rlbench_suite.core import catalog

    monkeypatch.setattr(catalog, "_added", dict(catalog._added))
    monkeypatch.setattr(catalog, "_added_paths", dict(catalog._added_paths))
    before = set(gym.envs.registry)
    yield
    for env_id in set(gym.envs.registry) - before:
        del gym.envs.registry[env_id]


@pytest.fixture
def lab(tmp_path: Path) -> Path:
    """A package ``mylab_envs`` with the env, and a folder of cards for it."""
    package = tmp_path / "code" / "mylab_envs"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(textwrap.dedent(ENV_MODULE))
    cards = tmp_path / "cards"
    cards.mkdir()
    return tmp_path


def write_card(folder: Path, env_id: str, entry_point: str = "mylab_envs:Corridor") -> Path:
    path = folder / f"{env_id.split('/')[1]}.toml"
    path.write_text(CARD.format(id=env_id, entry_point=entry_point))
    return path


@pytest.fixture
def importable(lab: Path, monkeypatch):
    monkeypatch.syspath_prepend(str(lab / "code"))
    return lab


def test_a_registered_card_works_with_gym_make(importable):
    write_card(importable / "cards", "mylab/Corridor-v0")
    (card,) = rlbench_suite.register_cards(importable / "cards")
    assert get_card("mylab/Corridor-v0") is card
    env = gym.make("mylab/Corridor-v0")
    env.reset(seed=0)
    for _ in range(10):
        *_, terminated, truncated, info = env.step(1)
        if terminated or truncated:
            break
    stats = info["rlbench_episode"]
    assert stats["success"] is True and stats["normalized_score"] is None  # no references yet
    assert rlbench_suite.register_cards(importable / "cards") == [card]  # again: a no-op


def test_a_bad_entry_point_is_refused_at_registration_naming_the_card(importable):
    path = write_card(importable / "cards", "mylab/Broken-v0", "mylab_envs.nowhere:Corridor")
    with pytest.raises(CardError) as info:
        rlbench_suite.register_cards(path)
    message = str(info.value)
    assert str(path) in message and "mylab/Broken-v0" in message and "entry_point" in message
    assert "No module named 'mylab_envs.nowhere'" in message
    missing_attr = write_card(importable / "cards", "mylab/Typo-v0", "mylab_envs:Coridor")
    with pytest.raises(CardError, match=r"entry_point 'mylab_envs:Coridor' cannot be loaded"):
        rlbench_suite.register_cards(missing_attr)
    with pytest.raises(UnknownEnvError):
        get_card("mylab/Broken-v0")  # nothing of a failing source is registered


def test_the_suite_namespace_and_taken_ids_are_refused(importable):
    path = write_card(importable / "cards", "rlbench/Corridor-v0")
    with pytest.raises(CardError, match="namespace is the suite's own"):
        rlbench_suite.register_cards(path)
    first = write_card(importable / "cards", "mylab/Same-v0")
    rlbench_suite.register_cards(first)
    other = importable / "other.toml"
    other.write_text(CARD.format(id="mylab/Same-v0", entry_point="mylab_envs:Corridor")
                     .replace("A corridor", "Another corridor"))  # fmt: skip
    with pytest.raises(CardError, match="already taken"):
        rlbench_suite.register_cards(other)


def test_check_refscores_and_eval_through_the_cli(lab, tmp_path):
    card_path = write_card(lab / "cards", "mylab/Walk-v0")
    env = {"RLBENCH_CARDS": str(lab / "cards"), "PYTHONPATH": f"{lab / 'code'}{os.pathsep}"
           + os.environ.get("PYTHONPATH", "")}  # fmt: skip
    checked = run_cli("check", "mylab/Walk-v0", env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "mylab/Walk-v0" in checked.stdout
    random = run_cli("refscores", "mylab/Walk-v0", "--episodes", "20", "--write", env=env)
    assert random.returncode == 0, random.stdout + random.stderr
    expert = run_cli("refscores", "mylab/Walk-v0", "--episodes", "20", "--write",
                     "--policy", "module:mylab_envs:walk_right", env=env)  # fmt: skip
    assert expert.returncode == 0, expert.stdout + expert.stderr
    card = load_card(card_path)  # written into the user's own card file
    assert card.reference.random is not None and card.reference.expert is not None
    assert card.reference.expert.value > card.reference.random.value
    out = tmp_path / "walk.json"
    evaluated = run_cli("eval", "mylab/Walk-v0", "--policy", "module:mylab_envs:walk_right",
                        "--episodes", "5", "--workers", "1", "--out", str(out),
                        env=env)  # fmt: skip
    assert evaluated.returncode == 0, evaluated.stdout + evaluated.stderr
    result = load_result(out)
    assert result.env_id == "mylab/Walk-v0" and result.normalized_score is not None
    assert result.normalized_score.point == pytest.approx(100.0, abs=5.0)
    # the same through the --cards option instead of the environment variable, which the
    # evaluation's worker processes do not inherit: the card travels to them
    listed = run_cli("--cards", str(card_path), "info", "mylab/Walk-v0",
                     env={"PYTHONPATH": env["PYTHONPATH"]})  # fmt: skip
    assert listed.returncode == 0 and "mylab/Walk-v0" in listed.stdout, listed.stderr
    pooled = run_cli("--cards", str(card_path), "eval", "mylab/Walk-v0", "--policy",
                     "module:mylab_envs:walk_right", "--episodes", "4", "--workers", "2",
                     "--out", str(tmp_path / "pooled.json"),
                     env={"PYTHONPATH": env["PYTHONPATH"]})  # fmt: skip
    assert pooled.returncode == 0, pooled.stdout + pooled.stderr
    assert load_result(tmp_path / "pooled.json").returns[:4] == result.returns[:4]


def test_an_installed_package_registers_its_cards_through_an_entry_point(lab):
    write_card(lab / "cards", "mylab/Installed-v0")
    (lab / "code" / "mylab_envs" / "__init__.py").write_text(
        textwrap.dedent(ENV_MODULE) + f"\nCARDS = {str(lab / 'cards')!r}\n"
    )
    dist = lab / "code" / "mylab_envs-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: mylab-envs\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[rlbench_suite.cards]\nmylab = mylab_envs:CARDS\n")
    env = {"PYTHONPATH": str(lab / "code")}
    listed = run_cli("list", "--family", "classic", env=env)
    assert listed.returncode == 0, listed.stderr
    assert "mylab/Installed-v0" in listed.stdout
    (lab / "cards" / "Installed-v0.toml").write_text("id = 3\n")
    broken = run_cli("check", env=env)
    assert broken.returncode != 0
    assert "entry point 'mylab'" in broken.stderr and "Installed-v0.toml" in broken.stderr


def test_a_card_error_in_the_environment_variable_is_reported_not_fatal(lab):
    (lab / "cards" / "Bad-v0.toml").write_text('id = "mylab/Bad-v0"\n')
    done = run_cli("info", "rlbench/CartPole-v1", env={"RLBENCH_CARDS": str(lab / "cards")})
    assert done.returncode == 0, done.stderr
    assert "Bad-v0.toml" in done.stderr and "not registered" in done.stderr
    assert "rlbench/CartPole-v1" in done.stdout  # the suite's own ids still work
