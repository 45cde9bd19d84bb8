"""Ctrl-C that Python drops: raised again where the program can catch it.

A SIGINT's handler runs wherever the main thread happens to be. When that is a finalizer or a
weakref callback (``__del__``, SQLAlchemy's connection-pool callbacks, torch's), the
KeyboardInterrupt it raises cannot propagate: Python prints "Exception ignored in ..." and the
program runs on as if Ctrl-C had never been pressed. :func:`redeliver_swallowed_interrupts`
installs a ``sys.unraisablehook`` that, for such a KeyboardInterrupt, sends SIGINT to the main
thread again a moment later (:data:`REDELIVERY_DELAY`, from a timer thread: a signal sent from
the hook itself would be handled inside the hook, and dropped again). The handler then runs
outside the finalizer, a blocking call (a sleep, a socket) is interrupted as by Ctrl-C itself,
and the command stops as Ctrl-C stops it. Every other unraisable error goes on to the hook that
was there before. Code that takes an error after Ctrl-C as the interruption (the demo) calls
:func:`cancel_redelivery`, so that the Ctrl-C does not arrive a second time.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

_MARK = "_rlbench_redelivers_interrupts"
REDELIVERY_DELAY = 0.05
"""Seconds between a dropped Ctrl-C and its redelivery: time for the hook to return."""
_pending: set[threading.Thread] = set()
_lock = threading.Lock()


def cancel_redelivery() -> None:
    """Forget the dropped Ctrl-Cs not yet sent again: the program has stopped for them."""
    with _lock:
        _pending.clear()


def _resend(main: int) -> None:
    with _lock:
        if threading.current_thread() not in _pending:
            return  # cancelled
        _pending.discard(threading.current_thread())
        signal.pthread_kill(main, signal.SIGINT)


def redeliver_swallowed_interrupts() -> None:
    """Wrap the current ``sys.unraisablehook`` (once: a hook already wrapped is left alone)."""
    previous: Callable[[Any], object] = sys.unraisablehook
    if getattr(previous, _MARK, False):
        return

    def hook(info: Any) -> None:
        swallowed = isinstance(info.exc_type, type) and issubclass(info.exc_type, KeyboardInterrupt)
        if swallowed and threading.current_thread() is threading.main_thread():
            resend = threading.Timer(REDELIVERY_DELAY, _resend, (threading.main_thread().ident,))
            resend.daemon = True
            with _lock:
                _pending.add(resend)
            resend.start()
            return  # no traceback: the program stops instead
        previous(info)

    setattr(hook, _MARK, True)
    sys.unraisablehook = hook


__all__ = ["cancel_redelivery", "redeliver_swallowed_interrupts"]
