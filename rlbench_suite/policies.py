"""The :class:`Policy` protocol and the simplest adapters.

A policy maps an observation (and the step's ``info``) to an action. It is reset with a
seed at the start of every episode so that stochastic policies are reproducible.
The evaluation harness adds adapters for SB3 models and ONNX files.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import gymnasium as gym
import numpy as np

from rlbench_suite.wrappers.masks import get_action_mask


@runtime_checkable
class Policy(Protocol):
    """Anything with ``reset(seed)`` and ``act(observation, info) -> action``."""

    def reset(self, seed: int | None = None) -> None: ...

    def act(self, observation: Any, info: dict[str, Any]) -> Any: ...


class RandomPolicy:
    """Uniformly random actions from ``action_space``, restricted to the action mask if any."""

    def __init__(self, action_space: gym.Space, seed: int | None = None) -> None:
        self.action_space = action_space
        self.action_space.seed(seed)

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.action_space.seed(seed)

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        mask = get_action_mask(observation, info)
        if mask is None:
            return self.action_space.sample()
        return self.action_space.sample(mask=mask)


class CallablePolicy:
    """Adapts ``fn(observation, info) -> action`` (or ``fn(observation)``) to :class:`Policy`."""

    def __init__(self, fn: Callable[..., Any], *, takes_info: bool = True) -> None:
        self.fn = fn
        self.takes_info = takes_info

    def reset(self, seed: int | None = None) -> None:
        reset = getattr(self.fn, "reset", None)
        if callable(reset):
            reset(seed)

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        return self.fn(observation, info) if self.takes_info else self.fn(observation)


def as_policy(obj: Policy | Callable[..., Any]) -> Policy:
    """Return ``obj`` if it already is a :class:`Policy`, else wrap a callable."""
    if isinstance(obj, Policy):
        return obj
    if callable(obj):
        return CallablePolicy(obj)
    raise TypeError(
        f"expected a Policy (reset(seed), act(observation, info)) or a callable, got {type(obj)!r}"
    )


def masked_argmax(values: np.ndarray, mask: np.ndarray | None) -> int:
    """Index of the largest value among the legal actions (all actions if ``mask`` is None)."""
    if mask is None:
        return int(np.argmax(values))
    return int(np.argmax(np.where(mask.astype(bool), values, -np.inf)))
