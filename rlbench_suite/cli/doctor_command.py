"""``rlbench doctor``: what is installed and whether the simulators work on this machine."""

from __future__ import annotations

import typer
from rich.table import Table

from rlbench_suite.cli.common import app, console, report_broken_cards
from rlbench_suite.core.catalog import cards, catalog_errors
from rlbench_suite.core.provenance import PACKAGES, package_versions


@app.command()
def doctor() -> None:
    """Versions, the MuJoCo GL backend, PyBullet and torch threads."""
    import os
    import platform

    table = Table(title="rlbench doctor", show_header=False)
    table.add_column("item", style="bold")
    table.add_column("value", overflow="fold")
    table.add_row(
        "python", f"{platform.python_version()} ({platform.machine()}, {os.cpu_count()} CPUs)"
    )
    installed = package_versions()
    for dist in PACKAGES:
        table.add_row(dist, installed.get(dist, "not installed"))
    table.add_row("cards", f"{len(cards())} loaded, {len(catalog_errors())} failed to load")
    table.add_row("MuJoCo GL backend", _mujoco_gl())
    table.add_row("PyBullet", _pybullet())
    table.add_row("torch threads", _torch_threads())
    console.print(table)
    if report_broken_cards():
        raise typer.Exit(1)


def _mujoco_gl() -> str:
    import os

    backend = os.environ.get("MUJOCO_GL", "(default)")
    try:
        import mujoco

        model = mujoco.MjModel.from_xml_string("<mujoco><worldbody/></mujoco>")
        with mujoco.Renderer(model, 8, 8) as renderer:
            renderer.render()
        return f"MUJOCO_GL={backend}: offscreen rendering works"
    except ImportError:
        return "mujoco not installed (pip install 'rlbench-suite[robotics]')"
    except Exception as exc:
        return f"MUJOCO_GL={backend}: rendering fails ({exc}); try MUJOCO_GL=egl or osmesa"


def _pybullet() -> str:
    from rlbench_suite.envs.robotics.pybullet_import import import_pybullet

    try:
        pybullet = import_pybullet()
    except ImportError:
        return "not installed (pip install 'rlbench-suite[robotics]')"
    client = pybullet.connect(pybullet.DIRECT)
    try:
        return f"DIRECT connection ok (API {pybullet.getAPIVersion(physicsClientId=client)})"
    finally:
        pybullet.disconnect(client)


def _torch_threads() -> str:
    try:
        import torch
    except ImportError:
        return "torch not installed (pip install torch==2.13.0, then 'rlbench-suite[baselines]')"
    return f"{torch.get_num_threads()} (interop {torch.get_num_interop_threads()})"
