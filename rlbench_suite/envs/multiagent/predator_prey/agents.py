"""Scripted agents for ``rlbench/PredatorPrey-v0``, acting on their egocentric window alone.

:class:`PredatorPreyScripted` reads the role bit at the end of the observation: a predator
steps towards the nearest prey it sees (ties and blocked moves resolved at random), a
prey steps away from the predators it sees; with nothing in view, both wander.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rlbench_suite.envs.multiagent.predator_prey.env import (
    MOVES,
    OBSTACLES,
    PREDATORS,
    PREY,
    decode,
    window_width,
)


class PredatorPreyScripted:
    """Chase (predators) or flee (prey) by the local window; seeded tie-breaking."""

    def __init__(self, observation_space: Any = None, seed: int | None = None) -> None:
        if observation_space is not None and window_width(observation_space.shape[0]) is None:
            raise ValueError(f"not a PredatorPrey observation: shape {observation_space.shape}")
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, observation: np.ndarray, info: dict[str, Any]) -> int:
        window, is_predator = decode(observation)
        walls = window[OBSTACLES]
        centre = window.shape[1] // 2
        targets = np.argwhere(window[PREY if is_predator else PREDATORS] > 0)
        free = [m for m in range(5) if not walls[centre + MOVES[m][0], centre + MOVES[m][1]]]
        if len(targets) == 0:
            return int(self.rng.choice(free))
        scores = []
        for m in free:
            cell = np.array([centre, centre]) + MOVES[m]
            distance = np.abs(targets - cell).sum(axis=1)
            scores.append(distance.min() if is_predator else -distance.min())
        best = [m for m, s in zip(free, scores, strict=True) if s == min(scores)]
        return int(self.rng.choice(best))

