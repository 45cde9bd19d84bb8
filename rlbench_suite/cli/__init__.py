"""The ``rlbench`` command (typer + rich); each module registers its subcommands on ``app``."""

from rlbench_suite import interrupts
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
from rlbench_suite.cli.common import app, errors


def main() -> None:
    """The ``rlbench`` command: :data:`app`, where an error raised after Ctrl-C or SIGTERM
    (:func:`rlbench_suite.interrupts.interrupted`: a library reporting the signal as its own
    failure, as onnxruntime's first import does with ``ImportError('initialization failed')``)
    ends as the interruption, one line and exit 130 (143 for SIGTERM), not a traceback."""
    try:
        app()
    except Exception as exc:
        if not interrupts.interrupted():
            raise
        interrupts.cancel_redelivery()
        errors.print(f"interrupted ({type(exc).__name__} after the signal)", soft_wrap=True,
                     highlight=False, markup=False)  # fmt: skip
        raise SystemExit(interrupts.exit_code()) from None


__all__ = ["app", "main"]
