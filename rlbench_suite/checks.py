"""API conformance and determinism checks for cards (what ``rlbench check`` runs).

Single-agent ids get Gymnasium's ``check_env``; multi-agent ids PettingZoo's ``api_test``
and, where the Parallel API exists, ``parallel_api_test``. Every id then gets a same-seed
determinism check: two instances reset with the same seed and driven by identically seeded
action spaces (masked where the env has an action mask) must produce identical
trajectories, resets included, over ``steps`` steps.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from rlbench_suite.core.cards import EnvCard
from rlbench_suite.registry import make_multiagent
from rlbench_suite.wrappers.masks import get_action_mask


class DeterminismError(AssertionError):
    """Two same-seed runs of an environment diverged."""


@dataclass
class CheckResult:
    """The outcome of checking one card."""

    env_id: str
    passed: dict[str, bool] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(self.passed.values())

    def run(self, name: str, fn: Callable[[], Any]) -> None:
        """Run one named check, recording pass or the error."""
        try:
            with (
                warnings.catch_warnings(record=True) as caught,
                contextlib.redirect_stdout(io.StringIO()),
            ):
                warnings.simplefilter("always")
                fn()
            messages = {_plain(str(w.message)) for w in caught}
            self.notes += sorted(f"{name}: {m}" for m in messages if not _is_noise(m))
            self.passed[name] = True
        except Exception as exc:  # a failed check is a result, not a crash
            self.passed[name] = False
            self.errors[name] = f"{type(exc).__name__}: {exc}"


# Warnings that say nothing about the environment itself.
_NOISE = ("is different from the unwrapped version", "has no __module__ attribute")


def _plain(message: str) -> str:
    return message.replace("\x1b[33m", "").replace("\x1b[0m", "").strip()


def _is_noise(message: str) -> bool:
    return any(part in message for part in _NOISE)


def assert_same(a: Any, b: Any, where: str) -> None:
    """Exact equality of observations, rewards, infos (recursing into dicts, tuples, arrays)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            raise DeterminismError(f"{where}: keys differ: {sorted(a)} vs {sorted(b)}")
        for key in a:
            assert_same(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        if len(a) != len(b):
            raise DeterminismError(f"{where}: lengths differ: {len(a)} vs {len(b)}")
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True):
            raise DeterminismError(f"{where}: arrays differ")
    elif isinstance(a, float) and isinstance(b, float) and np.isnan(a) and np.isnan(b):
        return
    elif a != b:
        raise DeterminismError(f"{where}: {a!r} != {b!r}")


def _stable(info: dict[str, Any]) -> dict[str, Any]:
    """``info`` without wall-clock times (Gymnasium's ``RecordEpisodeStatistics`` adds one)."""
    if not isinstance(info.get("episode"), dict):
        return info
    return {**info, "episode": {k: v for k, v in info["episode"].items() if k != "t"}}


def check_determinism(make_env: Callable[[], gym.Env], seed: int = 0, steps: int = 1000) -> int:
    """Step two same-seed instances ``steps`` times; raise :class:`DeterminismError` on divergence.

    Returns the number of episodes seen.
    """
    envs = [make_env(), make_env()]
    try:
        firsts = [env.reset(seed=seed) for env in envs]
        assert_same(firsts[0], firsts[1], "reset(seed)")
        for env in envs:
            env.action_space.seed(seed)
        obs, info = firsts[0]
        episodes = 1
        for t in range(steps):
            mask = get_action_mask(obs, info)
            actions = [env.action_space.sample(mask=mask) for env in envs]
            assert_same(actions[0], actions[1], f"step {t}: sampled action")
            outs = [env.step(action) for env, action in zip(envs, actions, strict=True)]
            outs = [(*o[:4], _stable(o[4])) for o in outs]
            assert_same(outs[0], outs[1], f"step {t}")
            obs, _, terminated, truncated, info = outs[0]
            if terminated or truncated:
                resets = [env.reset() for env in envs]
                assert_same(resets[0], resets[1], f"step {t}: reset")
                obs, info = resets[0]
                episodes += 1
        return episodes
    finally:
        for env in envs:
            env.close()


def check_aec_determinism(make_env: Callable[[], Any], seed: int = 0, steps: int = 1000) -> int:
    """The same check for PettingZoo AEC environments; returns the number of episodes seen."""
    envs = [make_env(), make_env()]
    try:
        for env in envs:
            env.reset(seed=seed)
        action_spaces = [{a: env.action_space(a) for a in env.possible_agents} for env in envs]
        for spaces in action_spaces:
            for i, space in enumerate(spaces.values()):
                space.seed(seed + i)
        episodes = 1
        for t in range(steps):
            lasts = [env.last() for env in envs]
            assert_same(lasts[0], lasts[1], f"step {t}: last()")
            agents = [env.agent_selection for env in envs]
            assert_same(agents[0], agents[1], f"step {t}: agent_selection")
            obs, _, terminated, truncated, info = lasts[0]
            if terminated or truncated:
                actions = [None, None]
            else:
                mask = get_action_mask(obs, info)
                actions = [
                    spaces[agent].sample(mask=mask)
                    for spaces, agent in zip(action_spaces, agents, strict=True)
                ]
                assert_same(actions[0], actions[1], f"step {t}: sampled action")
            for env, action in zip(envs, actions, strict=True):
                env.step(action)
            if not envs[0].agents:
                for env in envs:
                    env.reset()
                episodes += 1
        return episodes
    finally:
        for env in envs:
            env.close()


def check_card(card: EnvCard, seed: int = 0, steps: int = 1000) -> CheckResult:
    """Run the API checks and the determinism check for one card.

    Every id gets Gymnasium's ``check_env`` on ``gym.make(id)`` (for a multi-agent id, its
    single-agent view); multi-agent ids also get PettingZoo's ``api_test`` and, where the
    Parallel API exists, ``parallel_api_test``, and their determinism check runs on the AEC
    game itself.
    """
    from gymnasium.utils.env_checker import check_env

    result = CheckResult(card.id)

    def gymnasium_api() -> None:
        env = gym.make(card.id)
        try:
            check_env(env, skip_render_check=True)
        finally:
            env.close()

    result.run("check_env", gymnasium_api)
    if not card.is_multiagent:
        result.run("determinism", lambda: check_determinism(lambda: gym.make(card.id), seed, steps))
        return result
    from pettingzoo.test import api_test, parallel_api_test

    result.run("api_test", lambda: api_test(make_multiagent(card.id, "aec"), num_cycles=200))
    if card.api == "pettingzoo-parallel":
        result.run(
            "parallel_api_test",
            lambda: parallel_api_test(make_multiagent(card.id, "parallel"), num_cycles=200),
        )
    else:
        result.notes.append("parallel_api_test: not applicable (turn-based, AEC only)")
    result.run(
        "determinism",
        lambda: check_aec_determinism(lambda: make_multiagent(card.id, "aec"), seed, steps),
    )
    return result
