"""The ``rlbench`` command (typer + rich); each module registers its subcommands on ``app``."""

from rlbench_suite import interrupts
from rlbench_suite.cli import (  # noqa: F401  (the modules register their commands)
    analysis_commands,
    catalog_commands,
    curves_command,
    datasets_commands,
    datasets_download_command,
    demo_command,
    doctor_command,
    eval_commands,
    leaderboard_commands,
    text_figures_command,
    train_command,
    tune_command,
)
from rlbench_suite.cli.common import app, fail, install_hint, stopped


def main() -> None:
    """The ``rlbench`` command: :data:`app`, where an error raised after Ctrl-C or SIGTERM
    (:func:`rlbench_suite.interrupts.interrupted`: a library reporting the signal as its own
    failure, as onnxruntime's first import does with ``ImportError('initialization failed')``)
    ends as the interruption, one line and exit 130 (143 for SIGTERM), not a traceback; a
    package of an extra that is not installed is one ``error:`` line naming the extra, exit 2,
    and so is a file or folder the user may not read or write (``PermissionError``)."""
    try:
        app()
    except Exception as exc:
        if interrupts.stopped_by_signal():
            raise SystemExit(stopped(f"interrupted ({type(exc).__name__} after the signal)")
                             .exit_code) from None  # fmt: skip
        if isinstance(exc, PermissionError):
            raise SystemExit(fail(exc).exit_code) from None
        hint = install_hint(exc) if isinstance(exc, ModuleNotFoundError) else None
        if hint is None:
            raise
        raise SystemExit(fail(f"{exc}: this command needs it ({hint})").exit_code) from None


__all__ = ["app", "main"]
