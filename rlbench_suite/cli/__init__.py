"""The ``rlbench`` command (typer + rich); each module registers its subcommands on ``app``."""

from rlbench_suite.cli import (  # noqa: F401  (the modules register their commands)
    analysis_commands,
    catalog_commands,
    curves_command,
    datasets_commands,
    demo_command,
    doctor_command,
    eval_commands,
    leaderboard_commands,
    text_figures_command,
    train_command,
    tune_command,
)
from rlbench_suite.cli.common import app

__all__ = ["app"]
