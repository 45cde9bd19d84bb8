"""Naming and versioning of the suite's wrappers.

Every standardized wrapper has a versioned name (``"rlbench/EpisodeStatistics-v0"``) and
records its constructor arguments (Gymnasium's ``RecordConstructorArgs``), so it appears
in ``env.spec.additional_wrappers`` and ``gym.make(env.spec)`` rebuilds the same stack.
A wrapper whose behaviour changes gets a new version; the old one stays importable.
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym

from rlbench_suite.core.wrapper_names import WRAPPERS, add_wrapper_name, wrapper_entry_point


class VersionedWrapper(gym.utils.RecordConstructorArgs):
    """Mixin giving a wrapper its versioned public name (used in specs and reprs)."""

    wrapper_name: ClassVar[str] = ""

    @classmethod
    def class_name(cls) -> str:
        return cls.wrapper_name or cls.__name__


def register_wrapper(name: str):
    """Class decorator: give a wrapper the versioned ``name`` and list it in :data:`WRAPPERS`.

    A name of the suite's (:data:`~rlbench_suite.core.wrapper_names.STANDARD_WRAPPERS`) must
    be implemented where that table says; any other name is added to the table.
    """

    def decorate(cls: type) -> type:
        add_wrapper_name(name, f"{cls.__module__}:{cls.__qualname__}")
        cls.wrapper_name = name
        return cls

    return decorate


def apply_wrappers(env: gym.Env, stack: list[Any]) -> gym.Env:
    """Wrap ``env`` in ``stack``, innermost first: versioned names with their keyword
    arguments (``{"name", "kwargs"}`` dicts, or objects with those attributes: a card's
    ``WrapperRef`` or Gymnasium's ``WrapperSpec``), each built from the name's entry point in
    :data:`WRAPPERS`, never from anything the caller names."""
    from gymnasium.envs.registration import load_env_creator

    for ref in stack:
        name, kwargs = (ref["name"], ref.get("kwargs") or {}) if isinstance(ref, dict) else (
            ref.name, ref.kwargs or {}
        )  # fmt: skip
        env = load_env_creator(wrapper_entry_point(name))(env=env, **kwargs)
    return env


__all__ = [
    "WRAPPERS",
    "VersionedWrapper",
    "apply_wrappers",
    "register_wrapper",
    "wrapper_entry_point",
]
