"""What the demo prints: numbered steps, what each made and where, progress bars, tables.

On a terminal the progress bars are rich's; written to a pipe or a file there are no bars
and no colours (rich writes no ANSI codes to a non-terminal), only a line per finished piece
of work, so a log reads as plainly as the screen.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from rlbench_suite.interrupts import cancel_redelivery, redeliver_swallowed_interrupts


class DemoError(RuntimeError):
    """A step of the demo failed; the message names the step and says why, on one line."""


class DemoInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) during a step; the message names the step."""


def one_line(error: BaseException) -> str:
    """``Type: message`` on one line (the type left out for the suite's own clear errors)."""
    text = " ".join(str(error).split()) or "(no message)"
    plain = isinstance(error, (ValueError, LookupError, OSError, DemoError))
    return text if plain else f"{type(error).__name__}: {text}"


def fitted_widths(columns: list[list[str]], space: int) -> list[int | None]:
    """Widths for a table of ``columns`` (each its cells' texts) within ``space``
    characters (3 per column and 1 for borders and padding): None each where every cell
    fits on one line, else the widest columns narrowed a character at a time, none below
    its longest word (a word is folded only where even that does not fit)."""
    widths = [max(map(len, column)) for column in columns]
    if sum(widths) + 3 * len(widths) + 1 <= space:
        return [None] * len(widths)
    floors = [max(len(w) for text in column for w in text.split() or [""]) for column in columns]
    budget = max(space - 3 * len(widths) - 1, len(widths))
    while sum(widths) > budget:
        narrowable = [i for i, w in enumerate(widths) if w > max(floors[i], 1)]
        if not narrowable:  # the longest words alone are too wide: fold them
            narrowable = [i for i, w in enumerate(widths) if w > 1]
            floors = [1] * len(widths)
        widest = max(narrowable, key=lambda i: widths[i])
        widths[widest] -= 1
    return widths


def print_wrapped(console: Console, text: str, style: str | None = None) -> None:
    """``text`` wrapped at its spaces to the console's width, continuation lines indented two
    more than the first; a word longer than a line (a path, a URL) stays whole on a line of its
    own (the terminal folds it, so it can still be copied). A piped console is wide enough that
    nothing wraps (``cli.common.make_console``)."""
    body = text.lstrip(" ")
    indent = text[: len(text) - len(body)]
    lines = textwrap.wrap(body, console.width, initial_indent=indent,
                          subsequent_indent=indent + "  ", break_long_words=False,
                          break_on_hyphens=False) or [""]  # fmt: skip
    for line in lines:
        console.print(line, style=style, soft_wrap=True, highlight=False, markup=False)


@dataclass
class Reporter:
    """Prints the demo's steps on ``console``; ``total`` is the number of steps."""

    console: Console
    total: int
    interrupted: bool = False
    """Set by :meth:`watch_interrupts`' handler: an error after Ctrl-C is the interruption
    (a signal landing in a C extension's import can surface as an ImportError)."""
    delivered: bool = False
    """Whether the interruption reached the demo as an exception (:meth:`stop_if_swallowed`)."""

    @contextlib.contextmanager
    def watch_interrupts(self) -> Iterator[None]:
        """Ctrl-C raises KeyboardInterrupt as usual, and is remembered (main thread only); one
        that Python drops inside a finalizer is sent again a moment later
        (:func:`rlbench_suite.interrupts.redeliver_swallowed_interrupts`), and one that anything
        else swallowed stops the demo at its next line (:meth:`stop_if_swallowed`)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def handler(signum: int, frame: object) -> None:
            self.interrupted = True
            signal.default_int_handler(signum, frame)

        previous, hook = signal.signal(signal.SIGINT, handler), sys.unraisablehook
        redeliver_swallowed_interrupts()
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)
            sys.unraisablehook = hook

    def stop_if_swallowed(self) -> None:
        """Raise KeyboardInterrupt for a Ctrl-C whose exception never reached the demo: the
        handler runs wherever the main thread is, and the exception it raises can be dropped
        there (by Python inside a finalizer, or by a library's ``except BaseException``).
        Called at each line the demo prints and at each step's end, so it stops there."""
        if self.interrupted and not self.delivered:
            self._stopped()
            raise KeyboardInterrupt

    def _stopped(self) -> None:
        """The demo stops for the Ctrl-C now: it is not to be raised, nor sent, again."""
        self.delivered = True
        cancel_redelivery()

    def say(self, text: str, style: str | None = None) -> None:
        """A line of prose, wrapped at word boundaries (:func:`print_wrapped`); first, a Ctrl-C
        that was swallowed stops the demo (:meth:`stop_if_swallowed`)."""
        self.stop_if_swallowed()
        print_wrapped(self.console, text, style)

    def made_here(self, what: str, where: object, *, kept: bool = False) -> None:
        """One line saying what was made and where: ``made:`` for something this run wrote,
        ``kept:`` for something an earlier run left there and this one reused as it was."""
        self.say(f"  {'kept' if kept else 'made'}: {what}: {where}")

    @contextlib.contextmanager
    def step(self, number: int, title: str) -> Iterator[None]:
        """A step's header; an exception inside becomes a :class:`DemoError` naming it, and
        Ctrl-C a :class:`DemoInterrupted`."""
        where = f"step {number}/{self.total} ({title})"
        self.console.print()
        self.say(f"[{number}/{self.total}] {title}", style="bold")
        try:
            yield
            self.stop_if_swallowed()
        except (DemoError, DemoInterrupted):
            raise
        except KeyboardInterrupt:
            self._stopped()
            raise DemoInterrupted(where) from None
        except Exception as exc:
            if self.interrupted:  # an error the Ctrl-C caused (an import it cut short, say)
                self._stopped()
                raise DemoInterrupted(where) from None
            raise DemoError(f"{where} failed: {one_line(exc)}") from exc

    @contextlib.contextmanager
    def progress(self, description: str, total: float | None,
                 *fields: str) -> Iterator[Callable[..., None]]:  # fmt: skip
        """A bar on a terminal (none when piped); yields ``update(completed, **fields)``."""
        columns = [TextColumn(f"{{task.fields[{name}]}}") for name in fields]
        with Progress(TextColumn("  {task.description}"), BarColumn(), MofNCompleteColumn(),
                      *columns, TimeElapsedColumn(), console=self.console,
                      disable=not self.console.is_terminal) as bar:  # fmt: skip
            task = bar.add_task(description, total=total, **{name: "" for name in fields})
            yield lambda completed, **values: bar.update(task, completed=completed, **values)

    def table(self, title: str, columns: list[str], rows: list[tuple[str, ...]]) -> None:
        """A table whose cells are never cut: a line per row where the console is wide enough
        (a piped console is; see ``cli.common``), else the widest columns narrowed (cells
        wrapping at their spaces) until the table fits, so no column is dropped."""
        cells = [[name, *(row[i] for row in rows)] for i, name in enumerate(columns)]
        widths = fitted_widths(cells, self.console.width)
        table = Table(title=title, title_justify="left")
        for name, width in zip(columns, widths, strict=True):
            table.add_column(name, width=width, no_wrap=width is None, overflow="fold")
        for row in rows:
            table.add_row(*row)
        self.console.print(table)
