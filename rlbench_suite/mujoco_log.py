"""MuJoCo's warnings, routed away from a ``MUJOCO_LOG.TXT`` in the working directory.

MuJoCo's default warning handler appends every warning to ``MUJOCO_LOG.TXT`` in the current
directory (and prints it). :func:`route_mujoco_log` installs the suite's handler instead:
each warning becomes a Python ``RuntimeWarning`` (shown once per message by the default
filters), except the known deprecation notices of models the suite does not own
(:data:`SILENCED`), which are dropped. ``import rlbench_suite`` calls it, so every path
that makes a MuJoCo env (training, evaluation, datasets, previews, the verification worker)
gets it, without importing MuJoCo: where MuJoCo is not imported yet, the handler is installed
right after its first import.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.util
import sys
import warnings
from types import ModuleType
from typing import Any

SILENCED: tuple[str, ...] = ("compiler attribute 'settotalmass' is deprecated",)
"""Parts of MuJoCo warnings that are dropped: Gymnasium's half_cheetah.xml sets the deprecated
``settotalmass`` at every load; the model is Gymnasium's, so the notice is not the user's to act
on."""


def mujoco_warning(message: str) -> None:
    """The suite's MuJoCo warning handler (module doc)."""
    if any(part in message for part in SILENCED):
        return
    warnings.warn(f"MuJoCo: {message}", RuntimeWarning, stacklevel=2)


def _install(mujoco: ModuleType) -> None:
    mujoco.set_mju_user_warning(mujoco_warning)


class _AfterImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``mujoco`` with the other finders, then installs the handler once it has run."""

    def __init__(self) -> None:
        self._loader: Any = None

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != "mujoco":
            return None
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(self)  # one import only; the real finders find the package
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        self._loader, spec.loader = spec.loader, self
        return spec

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__.loader = module.__loader__ = self._loader  # as if never intercepted
        self._loader.exec_module(module)
        _install(module)


def route_mujoco_log() -> None:
    """Install :func:`mujoco_warning` as MuJoCo's warning handler: now if MuJoCo is imported,
    else right after its first import. Nothing happens without MuJoCo; calling it again does
    nothing more."""
    mujoco = sys.modules.get("mujoco")
    if mujoco is not None:
        _install(mujoco)
        return
    if any(isinstance(finder, _AfterImport) for finder in sys.meta_path):
        return
    if importlib.util.find_spec("mujoco") is not None:
        sys.meta_path.insert(0, _AfterImport())
