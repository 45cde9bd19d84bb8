"""The :class:`Policy` protocol and the simplest adapters.

A policy maps an observation (and the step's ``info``) to an action. It is reset with a
seed at the start of every episode so that stochastic policies are reproducible.
The evaluation harness adds adapters for SB3 models and ONNX files.
"""

from __future__ import annotations

import inspect
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
    """Return ``obj`` if it already is a :class:`Policy`, else wrap a callable.

    A callable taking one positional argument gets ``fn(observation)``; one taking two (or
    ``*args``) gets ``fn(observation, info)``.
    """
    if isinstance(obj, Policy):
        return obj
    if callable(obj):
        return CallablePolicy(obj, takes_info=_positional_arity(obj) != 1)
    raise TypeError(
        f"expected a Policy (reset(seed), act(observation, info)) or a callable, got {type(obj)!r}"
    )


def _positional_arity(fn: Callable[..., Any]) -> int | None:
    """How many positional arguments ``fn`` takes (None if unbounded or unknown)."""
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters):
        return None
    return sum(p.kind in kinds for p in parameters)


def policy_seed(seed: int) -> int:
    """A seed for a policy's random stream, independent of an environment seeded with ``seed``.

    Gymnasium seeds an environment's ``np_random`` and a space's RNG the same way, so seeding
    both with one integer gives two identical streams: a "random" policy would then be a
    function of the environment's own randomness.
    """
    return int(np.random.SeedSequence([seed, 0x5EED]).generate_state(1)[0])
