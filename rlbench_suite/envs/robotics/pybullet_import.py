"""PyBullet, imported once without its banner.

``import pybullet`` writes ``pybullet build time: ...`` from C straight to file descriptor 2,
so every command that touches a PyBullet env (the quadrotor's and the KUKA arm's) would print it
among its own output. :func:`import_pybullet` imports the module with that descriptor pointed at
``/dev/null`` for the import alone (the first import only: later ones are Python's cached module).
"""

from __future__ import annotations

import os
import sys
from types import ModuleType


def import_pybullet() -> ModuleType:
    """The ``pybullet`` module, its import-time banner dropped."""
    if "pybullet" in sys.modules:
        return sys.modules["pybullet"]
    sys.stderr.flush()
    saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        import pybullet
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
    return pybullet
