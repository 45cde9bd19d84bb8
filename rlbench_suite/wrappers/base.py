"""Naming and versioning of the suite's wrappers.

Every standardized wrapper has a versioned name (``"rlbench/EpisodeStatistics-v0"``) and
records its constructor arguments (Gymnasium's ``RecordConstructorArgs``), so it appears
in ``env.spec.additional_wrappers`` and ``gym.make(env.spec)`` rebuilds the same stack.
A wrapper whose behaviour changes gets a new version; the old one stays importable.
"""

from __future__ import annotations

from typing import ClassVar

import gymnasium as gym

# name -> "module:Class", filled by @register_wrapper
WRAPPERS: dict[str, str] = {}


class VersionedWrapper(gym.utils.RecordConstructorArgs):
    """Mixin giving a wrapper its versioned public name (used in specs and reprs)."""

    wrapper_name: ClassVar[str] = ""

    @classmethod
    def class_name(cls) -> str:
        return cls.wrapper_name or cls.__name__


def register_wrapper(name: str):
    """Class decorator: give a wrapper the versioned ``name`` and list it in :data:`WRAPPERS`."""

    def decorate(cls: type) -> type:
        if name in WRAPPERS:
            raise ValueError(f"wrapper name {name!r} is already taken by {WRAPPERS[name]}")
        cls.wrapper_name = name
        WRAPPERS[name] = f"{cls.__module__}:{cls.__qualname__}"
        return cls

    return decorate


def wrapper_entry_point(name: str) -> str:
    """The ``module:Class`` entry point of wrapper ``name``, with a clear error if unknown."""
    try:
        return WRAPPERS[name]
    except KeyError:
        import difflib

        close = difflib.get_close_matches(name, WRAPPERS, n=3)
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        raise KeyError(
            f"unknown wrapper {name!r}.{hint} Known wrappers: {', '.join(sorted(WRAPPERS))}"
        ) from None
