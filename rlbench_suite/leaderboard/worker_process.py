"""The verification worker as a child process of ``rlbench leaderboard serve``.

:func:`worker_beside` starts ``rlbench leaderboard verify`` (the database URL passed in the
environment, never on the command line) and stops it when the block ends: SIGTERM, then
SIGKILL after a grace period. A worker dies with its server even when the server is killed
outright: on Linux it asks the kernel for SIGTERM when its parent dies (``PR_SET_PDEATHSIG``),
and everywhere it stops polling once its parent is gone (``--parent-pid``). A worker stopped
mid-job puts the job back in the queue (``worker.run_pending``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator

from rlbench_suite.leaderboard.worker_limits import WorkerLimits

PR_SET_PDEATHSIG = 1
GRACE_S = 30.0


def _die_with_parent() -> None:  # runs in the child between fork and exec
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


@contextlib.contextmanager
def worker_beside(
    db_env: dict[str, str], poll_s: float = 2.0, limits: WorkerLimits | None = None
) -> Iterator[subprocess.Popen]:
    """``rlbench leaderboard verify`` in a child process for as long as the block runs;
    ``db_env`` names the database (``{"RLBENCH_LEADERBOARD_DB": url}``), ``limits`` what
    each verification may use (default: the worker's)."""
    command = [sys.executable, "-m", "rlbench_suite.cli", "leaderboard", "verify",
               "--poll-s", str(poll_s), "--parent-pid", str(os.getpid()),
               *(limits or WorkerLimits()).options()]  # fmt: skip
    process = subprocess.Popen(command, env={**os.environ, **db_env}, preexec_fn=_die_with_parent)
    try:
        yield process
    finally:
        stop(process)


def stop(process: subprocess.Popen, grace_s: float = GRACE_S) -> int:
    """Stop ``process``: SIGTERM, then SIGKILL after ``grace_s``; its exit code."""
    if process.poll() is None:
        process.terminate()
        try:
            return process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            process.kill()
    return process.wait()
