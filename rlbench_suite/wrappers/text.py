"""Wrappers that let classic RL agents play the text games.

- :class:`AdmissibleActions`: a ``Discrete`` action over the game's
  ``info["admissible_commands"]``, with ``info["action_mask"]`` (int8, the suite's mask
  convention) so sb3-contrib's ``MaskablePPO`` only picks listed commands.
- :class:`HashedBagOfWords`: the text observation as a fixed-size vector of hashed word and
  word-pair counts (a stable hash, so features are the same in every process).
- :class:`DiffHistory`: each observation as the lines that changed since the previous one
  (after "diff History" for NetHack agents), which keeps long, repetitive texts short.
"""

from __future__ import annotations

import difflib
import itertools
import re
import zlib
from typing import Any

import gymnasium as gym
import numpy as np

from rlbench_suite.wrappers.base import VersionedWrapper, register_wrapper
from rlbench_suite.wrappers.masks import ACTION_MASK_KEY

ADMISSIBLE_KEY = "admissible_commands"
_WORD = re.compile(r"[a-z0-9]+")


@register_wrapper("rlbench/AdmissibleActions-v0")
class AdmissibleActions(VersionedWrapper, gym.Wrapper):
    """Choose among ``info["admissible_commands"]``: action ``i`` sends the ``i``-th command.

    Args:
        max_actions: the size of the ``Discrete`` action space. Commands beyond it are left
            out (``info["admissible_truncated"]`` says so).
    """

    def __init__(self, env: gym.Env, max_actions: int = 32) -> None:
        if max_actions < 1:
            raise ValueError(f"max_actions must be at least 1, got {max_actions}")
        gym.utils.RecordConstructorArgs.__init__(self, max_actions=max_actions)
        gym.Wrapper.__init__(self, env)
        self.max_actions = max_actions
        self.action_space = gym.spaces.Discrete(max_actions)
        self.commands: list[str] = []

    def _with_mask(self, info: dict[str, Any]) -> dict[str, Any]:
        if ADMISSIBLE_KEY not in info:
            raise KeyError(
                f"{self.env} gives no info[{ADMISSIBLE_KEY!r}]; AdmissibleActions needs a "
                "text game that lists its admissible commands"
            )
        commands = list(info[ADMISSIBLE_KEY])
        self.commands = commands[: self.max_actions]
        mask = np.zeros(self.max_actions, dtype=np.int8)
        mask[: len(self.commands)] = 1
        return {
            **info,
            ACTION_MASK_KEY: mask,
            "admissible_truncated": len(commands) > len(self.commands),
        }

    def reset(self, **kwargs: Any):
        obs, info = self.env.reset(**kwargs)
        return obs, self._with_mask(info)

    def step(self, action: Any):
        index = int(action)
        if not 0 <= index < len(self.commands):
            shown = ", ".join(self.commands[:5]) + (", ..." if len(self.commands) > 5 else "")
            raise ValueError(
                f"action {index} is not admissible now: {len(self.commands)} commands are "
                f"listed ({shown}); use info['action_mask']"
            )
        obs, reward, terminated, truncated, info = self.env.step(self.commands[index])
        return obs, reward, terminated, truncated, self._with_mask(info)

    def action_masks(self) -> np.ndarray:
        """The current mask as booleans (sb3-contrib's ``MaskablePPO`` calls this)."""
        mask = np.zeros(self.max_actions, dtype=bool)
        mask[: len(self.commands)] = True
        return mask


def stable_hash(token: str) -> int:
    """A hash of ``token`` that is the same in every process (unlike ``hash``)."""
    return zlib.crc32(token.encode("utf-8"))


@register_wrapper("rlbench/HashedBagOfWords-v0")
class HashedBagOfWords(VersionedWrapper, gym.ObservationWrapper):
    """Text observations as ``dim`` float32 counts of hashed words and adjacent word pairs.

    Words are lower-cased runs of letters and digits; each word and (with ``pairs``) each
    pair of adjacent words adds 1 to the bin its :func:`stable_hash` falls in.
    """

    def __init__(self, env: gym.Env, dim: int = 1024, pairs: bool = True) -> None:
        if dim < 1:
            raise ValueError(f"dim must be at least 1, got {dim}")
        gym.utils.RecordConstructorArgs.__init__(self, dim=dim, pairs=pairs)
        gym.ObservationWrapper.__init__(self, env)
        self.dim, self.pairs = dim, pairs
        self.observation_space = gym.spaces.Box(0.0, np.inf, (dim,), np.float32)

    def observation(self, observation: Any) -> np.ndarray:
        words = _WORD.findall(str(observation).lower())
        tokens = words + ([f"{a} {b}" for a, b in itertools.pairwise(words)] if self.pairs else [])
        features = np.zeros(self.dim, dtype=np.float32)
        for token in tokens:
            features[stable_hash(token) % self.dim] += 1.0
        return features


@register_wrapper("rlbench/DiffHistory-v0")
class DiffHistory(VersionedWrapper, gym.ObservationWrapper):
    """Each observation as its difference from the previous one, line by line.

    After a reset the observation is the full text; afterwards it is the removed lines
    (``- ``) and the added lines (``+ ``), or ``(no change)``. The space keeps the
    wrapped ``Text`` space's charset with room for the markers.
    """

    def __init__(self, env: gym.Env) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.ObservationWrapper.__init__(self, env)
        inner = env.observation_space
        if not isinstance(inner, gym.spaces.Text):
            raise TypeError(f"DiffHistory needs a Text observation space, got {inner}")
        charset = "".join(sorted(set(inner.character_set) | set("+-() \n")))
        self.observation_space = gym.spaces.Text(
            max_length=3 * inner.max_length + 16, min_length=0, charset=charset
        )
        self.previous: list[str] | None = None

    def reset(self, **kwargs: Any):
        obs, info = self.env.reset(**kwargs)
        self.previous = str(obs).splitlines()
        return str(obs), info

    def observation(self, observation: Any) -> str:
        lines = str(observation).splitlines()
        previous, self.previous = self.previous or [], lines
        changed = [line for line in difflib.ndiff(previous, lines) if line[:2] in ("- ", "+ ")]
        return "\n".join(changed) if changed else "(no change)"
