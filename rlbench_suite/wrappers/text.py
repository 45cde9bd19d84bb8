"""Wrappers that let classic RL agents play the text games.

- :class:`AdmissibleActions`: a ``Discrete`` action over the game's
  ``info["admissible_commands"]``, with ``info["action_mask"]`` (int8, the suite's mask
  convention) so sb3-contrib's ``MaskablePPO`` only picks listed commands; an unlisted index
  is a no-op turn with a small penalty, so unmasked learners (PPO, A2C, DQN) train too.
  :class:`AdmissibleActionsV0` is version 0, which raises on an unlisted index.
- :class:`HashedBagOfWords`: the text observation as a fixed-size vector of hashed word and
  word-pair counts (a stable hash, so features are the same in every process).
- :class:`DiffHistory`: each observation as the lines that changed since the previous one
  (after "diff History" for NetHack agents), which keeps long, repetitive texts short.

The observation wrappers pass ``action_masks()`` through from an :class:`AdmissibleActions`
below them.
"""

from __future__ import annotations

import difflib
import itertools
import re
import zlib
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from rlbench_suite.wrappers.base import VersionedWrapper, register_wrapper
from rlbench_suite.wrappers.masks import ACTION_MASK_KEY
from rlbench_suite.wrappers.stats import STATS_KEY

ADMISSIBLE_KEY = "admissible_commands"
_WORD = re.compile(r"[a-z0-9]+")


INADMISSIBLE_KEY = "inadmissible_action"
INADMISSIBLE_CHOICES = ("noop", "raise")


@register_wrapper("rlbench/AdmissibleActions-v0")
class AdmissibleActionsV0(VersionedWrapper, gym.Wrapper):
    """Choose among ``info["admissible_commands"]``: action ``i`` sends the ``i``-th command.

    Version 0: an index outside the current list raises ``ValueError``, so only learners that
    respect ``info["action_mask"]`` (``MaskablePPO``) can use it. :class:`AdmissibleActions`
    (version 1) makes such an index a no-op turn instead.

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

    def _admissible(self, action: Any) -> int | None:
        """``action`` as an index into the current commands, or None when it is outside them."""
        index = int(action)
        return index if 0 <= index < len(self.commands) else None

    def _send(self, index: int):
        obs, reward, terminated, truncated, info = self.env.step(self.commands[index])
        return obs, reward, terminated, truncated, self._with_mask(info)

    def step(self, action: Any):
        index = self._admissible(action)
        if index is None:
            shown = ", ".join(self.commands[:5]) + (", ..." if len(self.commands) > 5 else "")
            raise ValueError(
                f"action {int(action)} is not admissible now: {len(self.commands)} commands "
                f"are listed ({shown}); use info['action_mask']"
            )
        return self._send(index)

    def action_masks(self) -> np.ndarray:
        """The current mask as booleans (sb3-contrib's ``MaskablePPO`` calls this)."""
        mask = np.zeros(self.max_actions, dtype=bool)
        mask[: len(self.commands)] = True
        return mask


@register_wrapper("rlbench/AdmissibleActions-v1")
class AdmissibleActions(AdmissibleActionsV0):
    """Choose among ``info["admissible_commands"]``; any index is a legal action.

    Action ``i`` sends the ``i``-th listed command, as in version 0
    (:class:`AdmissibleActionsV0`). An index outside the current list (what PPO, A2C or DQN
    pick when they ignore ``info["action_mask"]``) is, by default, a *no-op turn*: the game is
    not stepped and never sees the index; the agent gets the previous observation again,
    reward ``-penalty``, ``terminated=False``, and the previous step's info (the same
    commands and mask) with ``info["inadmissible_action"]`` set to the index. No-op turns
    count toward ``max_turns``, so an agent that keeps choosing unlisted indices still sees its
    episode end (``truncated=True``). An agent that only picks listed commands gets exactly
    version 0's steps.

    Args:
        max_actions: the size of the ``Discrete`` action space. Commands beyond it are left
            out (``info["admissible_truncated"]`` says so).
        inadmissible: ``"noop"`` (the default) or ``"raise"`` (version 0's ``ValueError``).
        penalty: subtracted from the reward of a no-op turn (0 or more). The game's own
            statistics (``info["rlbench_episode"]``, below this wrapper) never include it.
        max_turns: the most turns of an episode, no-op turns included; ``None`` (the default)
            takes the env's ``spec.max_episode_steps`` (the game's time limit), if any. A turn
            that reaches it without the game ending returns ``truncated=True`` with the
            game's statistics so far in ``info["rlbench_episode"]`` (its return and commands
            sent; a success only by the card's rule), so the harness counts the episode.
    """

    def __init__(
        self,
        env: gym.Env,
        max_actions: int = 32,
        inadmissible: str = "noop",
        penalty: float = 0.01,
        max_turns: int | None = None,
    ) -> None:
        if inadmissible not in INADMISSIBLE_CHOICES:
            raise ValueError(
                f"inadmissible must be one of {', '.join(INADMISSIBLE_CHOICES)}, "
                f"got {inadmissible!r}"
            )
        if not (np.isfinite(penalty) and penalty >= 0):
            raise ValueError(f"penalty must be a finite number >= 0, got {penalty!r}")
        if max_turns is not None and max_turns < 1:
            raise ValueError(f"max_turns must be at least 1 or None, got {max_turns}")
        gym.utils.RecordConstructorArgs.__init__(
            self, max_actions=max_actions, inadmissible=inadmissible, penalty=penalty,
            max_turns=max_turns,
        )  # fmt: skip
        super().__init__(env, max_actions)
        self.inadmissible, self.penalty = inadmissible, float(penalty)
        limit = env.spec.max_episode_steps if env.spec is not None else None
        self.max_turns: int | None = max_turns if max_turns is not None else limit
        self.turns = 0
        self._last: tuple[Any, dict[str, Any]] | None = None

    def reset(self, **kwargs: Any):
        obs, info = super().reset(**kwargs)
        self.turns, self._last = 0, (obs, info)
        return obs, info

    def step(self, action: Any):
        index = self._admissible(action)
        if index is None and self.inadmissible == "raise":
            return super().step(action)
        if self._last is None:
            raise gym.error.ResetNeeded("call reset before step")
        self.turns += 1
        out_of_turns = self.max_turns is not None and self.turns >= self.max_turns
        if index is None:
            obs, info = self._last
            info = {**info, INADMISSIBLE_KEY: int(action)}
            return obs, 0.0 - self.penalty, False, out_of_turns, self._ended(info, out_of_turns)
        obs, reward, terminated, truncated, info = self._send(index)
        self._last = (obs, info)
        cut = out_of_turns and not (terminated or truncated)
        return obs, reward, terminated, truncated or out_of_turns, self._ended(info, cut)

    def _ended(self, info: dict[str, Any], cut: bool) -> dict[str, Any]:
        """``info`` of a turn that ends, by the turn limit, an episode the game did not end:
        with the game's own statistics so far (``info["rlbench_episode"]``, from the
        statistics wrapper below, if any), so evaluations count the episode."""
        if not cut:
            return info
        try:
            record = self.env.get_wrapper_attr("episode_record")()
        except AttributeError:
            return info
        return {**info, STATS_KEY: record, "is_success": record["success"]}


class ForwardActionMasks:
    """``action_masks()`` of the :class:`AdmissibleActions` below, on a wrapper above it.

    A property, so that where nothing below has ``action_masks`` the attribute is missing
    (``hasattr`` is False and sb3-contrib's ``is_masking_supported`` stays right).
    """

    env: gym.Env

    @property
    def action_masks(self) -> Callable[[], np.ndarray]:
        return self.env.get_wrapper_attr("action_masks")


def stable_hash(token: str) -> int:
    """A hash of ``token`` that is the same in every process (unlike ``hash``)."""
    return zlib.crc32(token.encode("utf-8"))


@register_wrapper("rlbench/HashedBagOfWords-v0")
class HashedBagOfWords(ForwardActionMasks, VersionedWrapper, gym.ObservationWrapper):
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
class DiffHistory(ForwardActionMasks, VersionedWrapper, gym.ObservationWrapper):
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
