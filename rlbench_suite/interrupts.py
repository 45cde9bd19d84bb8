"""Ctrl-C and SIGTERM for long commands: remembered, and never lost inside a finalizer.

:func:`install` (every ``rlbench`` command calls it) sets two handlers in the main thread:
Ctrl-C raises KeyboardInterrupt as Python's own handler does, and SIGTERM raises
``SystemExit(143)``, so running commands unwind, stop their workers and keep their logs. Both
remember the signal (:func:`interrupted`): an error raised after it may be its consequence,
not a fault (onnxruntime's first import reports a Ctrl-C as ``ImportError('initialization
failed')``), and callers report that error as the interruption.

A handler runs wherever the main thread happens to be. When that is a finalizer or a weakref
callback (``__del__``, SQLAlchemy's connection-pool callbacks), the exception it raises cannot
propagate: Python prints "Exception ignored in ..." and the program runs on. The
``sys.unraisablehook`` that :func:`install` wraps sends such a signal to the main thread again a
moment later (:data:`REDELIVERY_DELAY`, from a timer thread: sent from the hook itself, it
would be handled inside the hook and dropped again); the handler then runs outside the
finalizer, a blocking call (a sleep, a socket) is interrupted, and the command stops. Every
other unraisable error goes on to the hook that was there before. Code that takes an error
after Ctrl-C as the interruption (the demo) calls :func:`cancel_redelivery`, so that the
signal does not arrive a second time.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from typing import Any, NoReturn

_MARK = "_rlbench_redelivers_interrupts"
REDELIVERY_DELAY = 0.05
"""Seconds between a dropped signal and its redelivery: time for the hook to return."""
_received: list[int] = []
_pending: set[threading.Thread] = set()
_lock = threading.Lock()
_sigterm_status = 128 + signal.SIGTERM


def interrupted() -> bool:
    """Whether a Ctrl-C or SIGTERM reached a handler of :func:`install` since it was called."""
    return bool(_received)


def stopped_by_signal() -> bool:
    """Whether an error raised now is the signal's consequence (:func:`interrupted`); if so the
    caller stops for the signal, and a dropped one is not sent again (:func:`cancel_redelivery`)."""
    if _received:
        cancel_redelivery()
    return bool(_received)


def exit_code() -> int:
    """The exit status for the last signal received: 130 for Ctrl-C (also when none was: a
    KeyboardInterrupt raised by code), SIGTERM's from :func:`install` (143)."""
    if _received and _received[-1] == signal.SIGTERM:
        return _sigterm_status
    return 128 + signal.SIGINT


def _on_sigint(signum: int, frame: object) -> None:
    _received.append(signum)
    signal.default_int_handler(signum, frame)


def _on_sigterm(signum: int, frame: object) -> None:
    _received.append(signum)
    raise SystemExit(_sigterm_status)


def install(sigterm_status: int = 128 + signal.SIGTERM) -> None:
    """The handlers and the redelivery, with no signal remembered yet (main thread only; a
    SIGINT handler someone else set, or an ignored SIGINT, is left as it is). SIGTERM exits with
    ``sigterm_status`` (a worker that its server stops with SIGTERM: 0)."""
    global _sigterm_status
    if threading.current_thread() is not threading.main_thread():
        return
    _received.clear()
    cancel_redelivery()
    _sigterm_status = sigterm_status
    if signal.getsignal(signal.SIGINT) in (signal.default_int_handler, _on_sigint):
        signal.signal(signal.SIGINT, _on_sigint)
    signal.signal(signal.SIGTERM, _on_sigterm)
    redeliver_swallowed_interrupts()


def cancel_redelivery() -> None:
    """Forget the dropped signals not yet sent again: the program has stopped for them."""
    with _lock:
        _pending.clear()


def _resend(main: int, signum: int) -> None:
    with _lock:
        if threading.current_thread() not in _pending:
            return  # cancelled
        _pending.discard(threading.current_thread())
        signal.pthread_kill(main, signum)


def _dropped_signal(exc_type: object) -> int | None:
    """The signal whose handler raised ``exc_type``, if a handler here raised it."""
    if not isinstance(exc_type, type):
        return None
    if issubclass(exc_type, KeyboardInterrupt):
        return signal.SIGINT
    if issubclass(exc_type, SystemExit) and signal.SIGTERM in _received:
        return signal.SIGTERM
    return None


def redeliver_swallowed_interrupts() -> None:
    """Wrap the current ``sys.unraisablehook`` (once: a hook already wrapped is left alone)."""
    previous: Callable[[Any], object] = sys.unraisablehook
    if getattr(previous, _MARK, False):
        return

    def hook(info: Any) -> None:
        signum = _dropped_signal(info.exc_type)
        if signum is not None and threading.current_thread() is threading.main_thread():
            main = threading.main_thread().ident
            resend = threading.Timer(REDELIVERY_DELAY, _resend, (main, signum))
            resend.daemon = True
            with _lock:
                _pending.add(resend)
            resend.start()
            return  # no traceback: the program stops instead
        previous(info)

    setattr(hook, _MARK, True)
    sys.unraisablehook = hook


def run_script(main: Callable[[], int | None], resume_hint: str) -> NoReturn:
    """Run a script's ``main`` with :func:`install`'s handlers and exit with its status; a
    Ctrl-C (or an error it caused) ends as one line on stderr, ``interrupted; <resume_hint>``,
    and exit 130, not a traceback (SIGTERM exits 143 as in :func:`install`)."""
    install()
    try:
        code = main()
    except Exception:
        if not stopped_by_signal():
            raise
        _say_interrupted(resume_hint)
    except KeyboardInterrupt:
        cancel_redelivery()
        _say_interrupted(resume_hint)
    raise SystemExit(code)


def _say_interrupted(resume_hint: str) -> NoReturn:
    print(f"interrupted; {resume_hint}", file=sys.stderr, flush=True)
    raise SystemExit(exit_code()) from None


__all__ = [
    "cancel_redelivery",
    "exit_code",
    "install",
    "interrupted",
    "redeliver_swallowed_interrupts",
    "run_script",
    "stopped_by_signal",
]
