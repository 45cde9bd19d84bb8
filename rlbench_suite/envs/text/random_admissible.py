"""Policies that work on any text game that lists ``info["admissible_commands"]``."""

from __future__ import annotations

from typing import Any

import numpy as np


class RandomAdmissible:
    """A uniformly random pick among the admissible commands (``look`` when none are listed).

    A stronger random baseline for text games than random strings, which are almost never
    valid commands: it measures what a game's structure gives away without any planning.
    """

    def __init__(self, observation_space: Any = None, action_space: Any = None, seed: Any = None):
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def act(self, observation: str, info: dict[str, Any] | None = None) -> str:
        commands = list((info or {}).get("admissible_commands") or [])
        return str(commands[int(self.rng.integers(len(commands)))]) if commands else "look"
