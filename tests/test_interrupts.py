"""Ctrl-C and SIGTERM in long commands (``rlbench_suite.interrupts``; every ``rlbench`` command
installs it): remembered, and one that Python drops inside a finalizer still stops the program."""

from __future__ import annotations

import signal
import sys
import time
import types

import pytest
from typer.testing import CliRunner

from rlbench_suite import interrupts
from rlbench_suite.interrupts import redeliver_swallowed_interrupts


class _CtrlCInFinalizer:
    def __del__(self) -> None:
        signal.raise_signal(signal.SIGINT)  # the default handler raises KeyboardInterrupt here


@pytest.fixture
def shown(monkeypatch):
    """The unraisable errors that reach the hook installed before ours (Python's prints them)."""
    seen: list[type] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda info: seen.append(info.exc_type))
    monkeypatch.setattr(interrupts, "_received", [])
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    terminate = signal.getsignal(signal.SIGTERM)
    yield seen
    signal.signal(signal.SIGINT, previous)
    signal.signal(signal.SIGTERM, terminate)


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


class _SigtermInFinalizer:
    def __del__(self) -> None:
        signal.raise_signal(signal.SIGTERM)


def test_the_handlers_remember_the_signal_and_a_dropped_sigterm_is_sent_again(shown):
    interrupts.install()
    assert not interrupts.interrupted()
    with pytest.raises(KeyboardInterrupt):
        signal.raise_signal(signal.SIGINT)
    assert interrupts.interrupted() and interrupts.exit_code() == 130
    started = time.monotonic()
    with pytest.raises(SystemExit) as stopped:
        _SigtermInFinalizer()  # its SystemExit(143) is dropped by Python
        time.sleep(10)
    assert stopped.value.code == 143 and time.monotonic() - started < 5
    assert interrupts.exit_code() == 143 and shown == []


def test_the_command_reports_an_error_after_the_signal_as_the_interruption(
    shown, monkeypatch, capsys
):
    """onnxruntime's first import, cut by Ctrl-C, raises ImportError('initialization failed'):
    ``rlbench`` ends with one line and 130, not a traceback; without a signal the error is
    raised as any error is."""
    import rlbench_suite.cli as cli

    def command():
        interrupts._received.append(signal.SIGINT)
        raise ImportError("initialization failed")

    monkeypatch.setattr(cli, "app", command)
    with pytest.raises(SystemExit) as stopped:
        cli.main()
    assert stopped.value.code == 130
    assert capsys.readouterr().err.strip() == "interrupted (ImportError after the signal)"

    interrupts._received.clear()
    monkeypatch.setattr(cli, "app", lambda: (_ for _ in ()).throw(ImportError("broken")))
    with pytest.raises(ImportError, match="broken"):
        cli.main()

    def missing_after_the_signal():  # a review: this one escaped as a traceback
        interrupts._received.append(signal.SIGINT)
        raise ModuleNotFoundError("No module named 'deflate'", name="deflate")

    monkeypatch.setattr(cli, "app", missing_after_the_signal)
    with pytest.raises(SystemExit) as stopped:
        cli.main()
    assert stopped.value.code == 130
    assert capsys.readouterr().err.strip() == "interrupted (ModuleNotFoundError after the signal)"


def test_each_command_starts_with_no_signal_remembered_and_a_worker_exits_0_on_sigterm(shown):
    """A review: after one Ctrl-C, every later command in the same process (typer's CliRunner,
    a notebook) read its errors as interruptions; `rlbench train` of an unknown id exited 130."""
    from rlbench_suite.cli import app

    interrupts.install()
    with pytest.raises(KeyboardInterrupt):
        signal.raise_signal(signal.SIGINT)
    assert interrupts.interrupted()
    result = CliRunner().invoke(app, ["train", "rlbench/NoSuchEnv-v0", "--algo", "ppo"])
    assert result.exit_code == 2 and "interrupted" not in result.output
    assert not interrupts.interrupted()

    interrupts.install(sigterm_status=0)  # `leaderboard verify`, which serve stops
    with pytest.raises(SystemExit) as stopped:
        signal.raise_signal(signal.SIGTERM)
    assert stopped.value.code == 0 and interrupts.exit_code() == 0


def test_a_script_interrupted_ends_with_one_line_and_130(shown, capsys, tmp_path):
    """``scripts/train_zoo.py`` and ``train_offline.py`` showed two chained tracebacks on Ctrl-C
    (KeyboardInterrupt, then ``RunInterrupted: <run folder>``); ``run_script`` ends them with
    one line that says how to resume."""
    from rlbench_suite.baselines.sb3_run import RunInterrupted

    def training():
        try:
            signal.raise_signal(signal.SIGINT)
        except KeyboardInterrupt:
            raise RunInterrupted(tmp_path) from None

    with pytest.raises(SystemExit) as stopped:
        interrupts.run_script(training, "run the same command again")
    assert stopped.value.code == 130
    assert capsys.readouterr().err == "interrupted; run the same command again\n"

    def failing_after_the_signal():  # an error the Ctrl-C caused is the interruption
        interrupts._received.append(signal.SIGINT)
        raise ImportError("initialization failed")

    with pytest.raises(SystemExit) as stopped:
        interrupts.run_script(failing_after_the_signal, "resume")
    assert stopped.value.code == 130 and capsys.readouterr().err == "interrupted; resume\n"

    with pytest.raises(SystemExit) as finished:  # install() forgot the earlier signal
        interrupts.run_script(lambda: 3, "resume")
    assert finished.value.code == 3
    with pytest.raises(ValueError, match="a bug"):
        interrupts.run_script(lambda: (_ for _ in ()).throw(ValueError("a bug")), "resume")
