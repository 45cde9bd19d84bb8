"""The Duel ladder: scripted fighters of three strengths, acting on the observation alone.

- :class:`EasyBot` walks in, swings at random when close and blocks a quarter of the
  attacks it sees coming.
- :class:`MediumBot` blocks most attacks it sees coming, sometimes punishes, swings often.
- :class:`HardBot` keeps its distance at the edge of reach, blocks every attack it sees
  start, and punishes an opponent that whiffed (recovering) or is stunned.

Each is seeded through ``reset(seed)``. ``tests/test_duel.py`` checks that the ladder is
ordered: hard beats medium and medium beats easy in at least 70% of the rounds.
"""

from __future__ import annotations

import abc
from typing import Any

import numpy as np

from rlbench_suite.envs.multiagent.duel.rules import (
    ATTACK,
    BACK,
    BLOCK,
    FORWARD,
    ME,
    NOOP,
    OBS_SIZE,
    OPPONENT,
    PHASE,
    PHASES,
    REACH,
    WIDTH,
    X,
    fighter,
)


class _Bot(abc.ABC):
    """Shared reading of the observation; subclasses decide."""

    def __init__(self, observation_space: Any = None, seed: int | None = None) -> None:
        if observation_space is not None and observation_space.shape != (OBS_SIZE,):
            raise ValueError(
                f"expected a Duel observation of shape ({OBS_SIZE},), got {observation_space.shape}"
            )
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, observation: np.ndarray, info: dict[str, Any]) -> int:
        obs = np.asarray(observation)
        mine, theirs = fighter(obs, ME), fighter(obs, OPPONENT)
        ahead = float(theirs[X]) * WIDTH  # the opponent's distance in front of us [m]
        phase = PHASES[int(np.argmax(theirs[PHASE]))]
        own_phase = PHASES[int(np.argmax(mine[PHASE]))]
        return self.decide(ahead, phase, own_phase)

    @abc.abstractmethod
    def decide(self, ahead: float, phase: str, own_phase: str) -> int:
        """The action, given the opponent's distance in front, its phase and our own."""

    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    @staticmethod
    def towards(ahead: float) -> int:
        """The move that closes the distance (``ahead`` < 0: the opponent is behind us)."""
        return FORWARD if ahead >= 0 else BACK


class EasyBot(_Bot):
    """Walks in; close by, blocks a quarter of the attacks it sees and swings at random."""

    def decide(self, ahead: float, phase: str, own_phase: str) -> int:
        if abs(ahead) > REACH:
            return self.towards(ahead) if self.chance(0.8) else NOOP
        if phase in ("startup", "active") and self.chance(0.25):
            return BLOCK
        return ATTACK if self.chance(0.4) else NOOP


class MediumBot(_Bot):
    """Walks in; close by, blocks most attacks it sees, sometimes punishes, swings often."""

    def decide(self, ahead: float, phase: str, own_phase: str) -> int:
        if abs(ahead) > REACH:
            return self.towards(ahead)
        if phase in ("startup", "active") and self.chance(0.7):
            return BLOCK
        if phase in ("recovery", "hitstun") and self.chance(0.5):
            return ATTACK
        return ATTACK if self.chance(0.5) else NOOP


class HardBot(_Bot):
    """Spaces at the edge of reach, blocks what it sees coming, punishes openings."""

    def decide(self, ahead: float, phase: str, own_phase: str) -> int:
        distance = abs(ahead)
        if phase in ("recovery", "hitstun") and distance <= REACH:
            return ATTACK  # a whiffed or stunned opponent cannot answer
        if phase in ("startup", "active") and distance <= REACH + 0.6:
            return BLOCK
        if distance > REACH:
            return self.towards(ahead)
        if distance < 0.8 * REACH:
            return BACK if ahead >= 0 else FORWARD  # step away, to the edge of reach
        return ATTACK if self.chance(0.35) else BLOCK


LADDER = {"easy": EasyBot, "medium": MediumBot, "hard": HardBot}
"""The built-in opponents by level."""
