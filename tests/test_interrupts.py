"""A Ctrl-C that Python drops inside a finalizer still stops the program
(``rlbench_suite.interrupts``; every ``rlbench`` command installs it)."""

from __future__ import annotations

import signal
import sys
import time
import types

import pytest
from typer.testing import CliRunner

from rlbench_suite.interrupts import redeliver_swallowed_interrupts


class _CtrlCInFinalizer:
    def __del__(self) -> None:
        signal.raise_signal(signal.SIGINT)  # the default handler raises KeyboardInterrupt here


@pytest.fixture
def shown(monkeypatch):
    """The unraisable errors that reach the hook installed before ours (Python's prints them)."""
    seen: list[type] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda info: seen.append(info.exc_type))
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield seen
    signal.signal(signal.SIGINT, previous)


def test_without_it_python_drops_the_ctrl_c_and_runs_on(shown):
    """The behaviour it corrects: the KeyboardInterrupt goes to the unraisable hook, not the
    program."""
    _CtrlCInFinalizer()
    time.sleep(0.2)
    assert shown == [KeyboardInterrupt]


def test_a_dropped_ctrl_c_is_raised_again_outside_the_finalizer(shown):
    redeliver_swallowed_interrupts()
    started, reached = time.monotonic(), []
    with pytest.raises(KeyboardInterrupt):
        _CtrlCInFinalizer()
        time.sleep(10)  # a blocking call: the Ctrl-C sent again interrupts it
        reached.append("after the sleep")
    assert reached == [] and time.monotonic() - started < 5
    assert shown == []  # no "Exception ignored" traceback for it


def test_other_unraisable_errors_still_reach_the_previous_hook_and_it_wraps_once(shown):
    redeliver_swallowed_interrupts()
    hook = sys.unraisablehook
    redeliver_swallowed_interrupts()
    assert sys.unraisablehook is hook
    sys.unraisablehook(types.SimpleNamespace(exc_type=ValueError))
    assert shown == [ValueError]


def test_every_rlbench_command_installs_it(shown):
    from rlbench_suite.cli import app

    before = sys.unraisablehook
    result = CliRunner().invoke(app, ["datasets", "list"])
    assert result.exit_code == 0, result.output
    assert sys.unraisablehook is not before
    sys.unraisablehook(types.SimpleNamespace(exc_type=ValueError))
    assert shown == [ValueError]


def test_a_cancelled_redelivery_never_arrives(shown):
    """The demo takes an error after Ctrl-C as the interruption and cancels the redelivery: the
    Ctrl-C must not arrive a second time, after the command has stopped for it (an uncaught
    KeyboardInterrupt then, and the process dies by SIGINT instead of exiting 130)."""
    from rlbench_suite.interrupts import REDELIVERY_DELAY, cancel_redelivery

    redeliver_swallowed_interrupts()
    _CtrlCInFinalizer()
    cancel_redelivery()
    try:
        time.sleep(REDELIVERY_DELAY * 6)
    except KeyboardInterrupt:
        pytest.fail("the Ctrl-C arrived a second time")
    assert shown == []
