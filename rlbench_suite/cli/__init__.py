"""The ``rlbench`` command (typer + rich); each module registers its subcommands on ``app``."""

from rlbench_suite.cli import catalog_commands, eval_commands  # noqa: F401  (registers commands)
from rlbench_suite.cli.common import app

__all__ = ["app"]
