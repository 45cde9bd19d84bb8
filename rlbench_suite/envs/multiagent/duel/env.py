"""``rlbench/Duel-v0`` (PettingZoo Parallel) and ``rlbench/DuelVsBot-v0`` (Gymnasium).

A two-player real-time fighting game in the spirit of FightLadder; the rules are in
:mod:`.rules`. One episode is one round of ``max_cycles`` frames (15 per second).

- **Agents** ``player_0`` and ``player_1``; actions ``Discrete(6)``: noop, back, forward,
  jump, attack, block (back and forward along the way the fighter faces).
- **Observation** (25 float32 values, egocentric, see :func:`.rules.observe`).
- **Reward** per frame: (damage dealt - damage taken) / 100; at the end of the round +1 to
  the winner and -1 to the loser (0 each for a draw). Zero-sum.
- **End**: a knock-out terminates the round; the timer truncates it, the healthier fighter
  winning. ``info``: ``health``, ``opponent_health``, ``win`` (1 won, 0 draw or not over,
  -1 lost) and ``won`` (bool).

``DuelVsBotEnv`` is the single-player ladder: ``player_0`` against a built-in opponent of
``level`` ``"easy"``, ``"medium"`` or ``"hard"`` (:mod:`.bots`).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from pettingzoo import ParallelEnv

from rlbench_suite.envs.multiagent.duel import rules as core
from rlbench_suite.envs.multiagent.duel.bots import LADDER

AGENTS = ("player_0", "player_1")
OBSERVATION = gym.spaces.Box(-np.inf, np.inf, (core.OBS_SIZE,), np.float32)


class DuelMatch:
    """One round between two fighters: actions in, observations, rewards and outcome out."""

    def __init__(self, max_cycles: int) -> None:
        if max_cycles < 1:
            raise ValueError(f"max_cycles must be at least 1, got {max_cycles}")
        self.max_cycles = max_cycles
        self.fighters = core.new_round(np.random.default_rng(0))
        self.cycle = 0

    def start(self, rng: np.random.Generator) -> list[np.ndarray]:
        self.fighters, self.cycle = core.new_round(rng), 0
        return self.observations()

    def observations(self) -> list[np.ndarray]:
        left = 1.0 - self.cycle / self.max_cycles
        a, b = self.fighters
        return [core.observe(a, b, left), core.observe(b, a, left)]

    def play(self, actions: tuple[int, int]) -> tuple[list[float], bool, bool, list[dict]]:
        """One frame: rewards, knocked out, out of time, infos."""
        taken = core.advance(self.fighters, actions)
        self.cycle += 1
        rewards = [(taken[1] - taken[0]) / core.HEALTH, (taken[0] - taken[1]) / core.HEALTH]
        health = [f.health for f in self.fighters]
        knocked_out = min(health) <= 0.0
        out_of_time = not knocked_out and self.cycle >= self.max_cycles
        outcome = int(np.sign(health[0] - health[1])) if knocked_out or out_of_time else 0
        rewards = [rewards[0] + outcome, rewards[1] - outcome]
        infos = [
            {"health": health[i], "opponent_health": health[1 - i],
             "win": outcome * (1 - 2 * i), "won": outcome * (1 - 2 * i) == 1}
            for i in range(2)
        ]  # fmt: skip
        return rewards, knocked_out, out_of_time, infos


def check_action(agent: str, action: Any) -> int:
    """``action`` as an int in 0..5, or a ValueError naming the actions."""
    try:
        value = int(action)
    except (TypeError, ValueError):
        value = -1
    if not 0 <= value < len(core.ACTIONS) or value != action:
        raise ValueError(
            f"{agent}: action must be an int in 0..5 ({', '.join(core.ACTIONS)}), got {action!r}"
        )
    return value


def render_frame(match: DuelMatch) -> np.ndarray:
    """A 160 x 320 RGB frame: floor, fighters (colour by phase), health bars."""
    frame = np.full((160, 320, 3), 235, np.uint8)
    frame[140:] = (120, 100, 80)
    colours = {"idle": (60, 90, 200), "startup": (230, 160, 40), "active": (220, 40, 40),
               "recovery": (150, 110, 60), "block": (60, 170, 80),
               "hitstun": (140, 140, 140)}  # fmt: skip
    for i, f in enumerate(match.fighters):
        x = int(f.x / core.WIDTH * 300) + 10
        top = 140 - int(f.y * 40) - 40
        frame[max(top, 0) : top + 40, max(x - 8, 0) : x + 8] = colours[f.phase]
        bar = int(f.health / core.HEALTH * 140)
        left = 10 if i == 0 else 170
        frame[8:16, left : left + bar] = (200, 30, 30)
    return frame


class DuelEnv(ParallelEnv):
    """``rlbench/Duel-v0``: two players, one round; see the module docstring."""

    metadata = {"name": "rlbench_duel_v0", "render_modes": ["rgb_array"],
                "render_fps": core.FPS, "is_parallelizable": True}  # fmt: skip

    def __init__(self, max_cycles: int = 450, render_mode: str | None = None) -> None:
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"unsupported render_mode {render_mode!r}; accepted: 'rgb_array'")
        self.match, self.render_mode = DuelMatch(max_cycles), render_mode
        self.possible_agents = list(AGENTS)
        self.agents: list[str] = []
        self.observation_spaces = {a: OBSERVATION for a in AGENTS}
        self.action_spaces = {a: gym.spaces.Discrete(len(core.ACTIONS)) for a in AGENTS}
        self._rng = np.random.default_rng()

    def observation_space(self, agent: str) -> gym.spaces.Box:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> gym.spaces.Discrete:
        return self.action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self.agents = list(AGENTS)
        observations = self.match.start(self._rng)
        return dict(zip(AGENTS, observations, strict=True)), {a: {} for a in AGENTS}

    def step(self, actions: dict[str, Any]):
        if set(actions) != set(self.agents):
            raise ValueError(
                f"expected one action for each of {self.agents}, got them for {sorted(actions)}"
            )
        chosen = (check_action(AGENTS[0], actions[AGENTS[0]]),
                  check_action(AGENTS[1], actions[AGENTS[1]]))  # fmt: skip
        rewards, knocked_out, out_of_time, infos = self.match.play(chosen)
        observations = dict(zip(AGENTS, self.match.observations(), strict=True))
        self.agents = [] if knocked_out or out_of_time else list(AGENTS)
        return (
            observations,
            dict(zip(AGENTS, rewards, strict=True)),
            {a: knocked_out for a in AGENTS},
            {a: out_of_time for a in AGENTS},
            dict(zip(AGENTS, infos, strict=True)),
        )

    def render(self) -> np.ndarray | None:
        return render_frame(self.match) if self.render_mode == "rgb_array" else None

    def close(self) -> None:
        return None


class DuelVsBotEnv(gym.Env):
    """``rlbench/DuelVsBot-v0``: ``player_0`` against the built-in opponent of ``level``."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": core.FPS}

    def __init__(
        self, level: str = "medium", max_cycles: int = 450, render_mode: str | None = None
    ) -> None:
        if level not in LADDER:
            raise ValueError(f"unknown level {level!r}; accepted: {', '.join(LADDER)}")
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"unsupported render_mode {render_mode!r}; accepted: 'rgb_array'")
        self.level, self.render_mode = level, render_mode
        self.match = DuelMatch(max_cycles)
        self.bot = LADDER[level](OBSERVATION)
        self.observation_space = OBSERVATION
        self.action_space = gym.spaces.Discrete(len(core.ACTIONS))
        self._bot_obs = np.zeros(core.OBS_SIZE, np.float32)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.bot.reset(int(self.np_random.integers(2**32)))
        mine, self._bot_obs = self.match.start(self.np_random)
        return mine, {}

    def step(self, action: Any):
        mine = check_action(AGENTS[0], action)
        theirs = self.bot.act(self._bot_obs, {})
        rewards, knocked_out, out_of_time, infos = self.match.play((mine, theirs))
        observation, self._bot_obs = self.match.observations()
        return observation, float(rewards[0]), knocked_out, out_of_time, infos[0]

    def render(self) -> np.ndarray | None:
        return render_frame(self.match) if self.render_mode == "rgb_array" else None
