"""What the ``rlbench`` subcommands share: the app, consoles, progress bars, card lookup."""

from __future__ import annotations

import collections
import errno
import importlib.util
import math
import os
import re
import sys
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Annotated, Literal

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

import rlbench_suite
from rlbench_suite import interrupts
from rlbench_suite.core.cards import CardError, EnvCard, RefScore
from rlbench_suite.core.catalog import UnknownEnvError, catalog_errors, get_card, select_cards

app = typer.Typer(
    name="rlbench",
    help="rlbench-suite: environments, checks and reference scores for reinforcement learning.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,  # docstrings' single line breaks join (paragraphs wrap to the terminal)
)
PIPE_WIDTH = 10_000


def make_console(stderr: bool = False) -> Console:
    """A console at the terminal's width; written to a pipe or a file (and COLUMNS unset),
    one wide enough that no line, table cell or number is ever wrapped. Strings print as they
    are, never read as Rich markup (a path, an error or a remote's answer holding ``[/x]``
    would crash the print or be restyled): styles are given as ``Text`` (``Text.assemble``)."""
    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty() or os.environ.get("COLUMNS"):
        return Console(stderr=stderr, markup=False)
    return Console(stderr=stderr, width=PIPE_WIDTH, markup=False)


console = make_console()
errors = make_console(stderr=True)


def one_line(error: BaseException | str) -> str:
    """An error as one line: pydantic's multi-line reports (with their URLs) condensed to
    ``field: message`` pairs, other messages' line breaks folded."""
    if isinstance(error, ValidationError):
        return "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}" for e in error.errors()
        )
    return " ".join(str(error).split())


def stopped(message: str) -> typer.Exit:
    """Print ``message`` on stderr (one line: what was kept, how to go on) and return the Exit
    for the signal that stopped the command (130 for Ctrl-C, 143 for SIGTERM)."""
    errors.print(message, soft_wrap=True, highlight=False)
    return typer.Exit(interrupts.exit_code())


def fail(message: BaseException | str, code: int = 2) -> typer.Exit:
    """Print ``error: <message>`` on stderr (one line) and return the Exit to raise."""
    errors.print(Text.assemble(("error: ", "red"), one_line(message)), soft_wrap=True)
    return typer.Exit(code)


_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][\w.-]*)(?:\[([^\]]*)\])?[^;]*(?:;(.*))?$")
_DISTRIBUTIONS = {"yaml": "pyyaml", "PIL": "pillow"}
"""Import names of the extras' packages that are not their distribution's name."""
_EXTRA_MARKER = re.compile(r"extra\s*==\s*['\"]([\w-]+)['\"]")
_BROAD_EXTRAS = ("all", "demo", "docs", "dev")
"""Extras that gather others or tools: named only for a package no narrower extra brings."""


def install_hint(exc: ImportError) -> str | None:
    """``pip install 'rlbench-suite[EXTRA]'`` when ``exc`` is the failed import of a package
    (not installed at all) that an extra of the suite brings and the core does not: the extra
    with the fewest requirements among those that bring it, as the installed metadata lists
    them; else None."""
    top = (exc.name or "").split(".")[0]
    if not top or (top != exc.name and importlib.util.find_spec(top) is not None):
        return None  # a part of an installed package failed: not a missing package

    def canonical(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    try:
        requires = metadata.requires("rlbench-suite") or []
    except metadata.PackageNotFoundError:
        return None
    wanted = canonical(_DISTRIBUTIONS.get(top, top))
    sizes: collections.Counter[str] = collections.Counter()
    bringing = set()
    for line in requires:
        found = _REQUIREMENT.match(line)
        if found is None:
            continue
        # the distribution, and the packages its extras bring (gymnasium[mujoco]: mujoco)
        brings = {canonical(n) for n in [found.group(1), *(found.group(2) or "").split(",")]
                  if n.strip()}  # fmt: skip
        extra = _EXTRA_MARKER.search(found.group(3) or "")
        if extra is None and wanted in brings:
            return None  # a core requirement: no extra brings it back
        if extra is not None:
            sizes[extra.group(1)] += 1
            if wanted in brings:
                bringing.add(extra.group(1))
    narrow = [e for e in bringing if e not in _BROAD_EXTRAS] or sorted(bringing)
    if not narrow:
        return None
    return f"pip install 'rlbench-suite[{min(narrow, key=lambda e: (sizes[e], e))}]'"


def usable_folder(path: Path, what: str,
                  mode: Literal["make", "can_make", "read"] = "make") -> Path:  # fmt: skip
    """``path`` as a folder: made if it is none yet (``make``), or only checked, to be made by
    whoever writes there first (``can_make``) or read if it is there (``read``: no file may be
    in its way). When it cannot be one (a file is in the way, no permission),
    ``error: <what> <path> cannot be a folder: <why>`` and exit 2."""
    try:
        if mode == "make":
            path.mkdir(parents=True, exist_ok=True)
        else:
            _can_be_folder(path, writable=mode == "can_make")
    except OSError as exc:
        in_the_way = isinstance(exc, FileExistsError | NotADirectoryError)
        why = "a file is in the way" if in_the_way else (exc.strerror or str(exc))
        raise fail(f"{what} {path} cannot be a folder: {why}") from None
    return path


def _can_be_folder(path: Path, writable: bool) -> None:
    """Raise what ``path.mkdir(parents=True)`` would, without making anything: its nearest
    existing ancestor must be a folder (that this process may write into, if ``writable``)."""
    probe = path.absolute()
    while not probe.exists() and not probe.is_symlink() and probe.parent != probe:
        probe = probe.parent
    if not probe.is_dir():  # a file, or a link to nothing
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(probe))
    if writable and probe != path.absolute() and not os.access(probe, os.W_OK | os.X_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(probe))


def number(value: float | None, digits: int = 4) -> str:
    """A number at sensible precision: ``digits`` significant digits (whole numbers from
    ``10**digits`` up, no exponent), floating-point dust (|x| < 1e-12) as 0, None as '-'."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if abs(value) < 1e-12:
        return "0"
    if abs(value) >= 10**digits:
        return f"{value:.0f}"
    return f"{value:.{digits}g}"


def print_table(
    title: str, columns: list[str], rows: list[tuple[str, ...]], optional: tuple[str, ...] = (),
    caption: str | None = None,
) -> list[str]:
    """Print a table whose cells are never cut or wrapped; return the columns shown.

    Where the console is too narrow, the ``optional`` columns are left out (last named
    first) and a note names them; piped output is never narrow (:func:`make_console`). A table
    still wider than the console is printed whole, its lines longer than the console (the
    terminal folds them), never with a cell cut short. ``caption`` goes under the table.
    """
    widths = {c: max([len(c), *(len(r[i]) for r in rows)]) for i, c in enumerate(columns)}
    shown = list(columns)
    hidden: list[str] = []
    for name in reversed(optional):
        if sum(widths[c] + 3 for c in shown) + 1 <= console.width:
            break
        shown.remove(name)
        hidden.insert(0, name)
    table = Table(title=title, caption=caption)
    for name in shown:
        table.add_column(name, no_wrap=True, min_width=widths[name])
    for row in rows:
        table.add_row(*(cell for name, cell in zip(columns, row, strict=True) if name in shown))
    needed = sum(widths[c] + 3 for c in shown) + 1
    if needed <= console.width:
        console.print(table)
    else:  # rich would shrink the columns, cutting cells ("19542" as "195"), or drop some
        console.print(table, width=needed, crop=False)
    if hidden:
        console.print(f"({', '.join(hidden)} left out at this width; widen the terminal or pipe "
                      "the output to see them)")  # fmt: skip
    return shown


def interval(point: float, low: float, high: float, digits: int = 4) -> str:
    """``point [low, high]`` with :func:`number`."""
    return f"{number(point, digits)} [{number(low, digits)}, {number(high, digits)}]"


def report_broken_cards() -> int:
    """Print the cards that failed to load; return how many."""
    for error in catalog_errors():
        errors.print(Text.assemble(("card not loaded: ", "red"), str(error)))
    return len(catalog_errors())


def _version(value: bool) -> None:
    if value:
        console.print(f"rlbench-suite {rlbench_suite.__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
    cards: Annotated[
        list[Path] | None,
        typer.Option(
            "--cards",
            help="Your own card file or folder to register first (repeatable; also "
            "RLBENCH_CARDS, see docs/cards.md).",
        ),
    ] = None,
) -> None:
    """rlbench-suite command line."""
    # SIGTERM unwinds like Ctrl-C, so running commands stop their workers and keep their logs;
    # both are remembered, and one dropped inside a finalizer still stops the command
    interrupts.install()
    importable_here()
    if cards:
        try:
            rlbench_suite.register_cards(cards)
        except CardError as exc:
            raise fail(str(exc)) from None


def importable_here() -> None:
    """Let modules in the working directory import, as under ``python -m``: a card's
    ``entry_point = "mylab_envs:Corridor"`` or ``--policy module:mylab_envs:walk_right`` next
    to the cards. Appended, so the working directory never shadows an installed package."""
    here = os.getcwd()
    if here not in sys.path and "" not in sys.path:
        sys.path.append(here)


PIPED_EVERY_S = 30.0
"""Piped (no bar), a long command says how far it is at most this often."""


def throttle() -> Callable[[], bool]:
    """``due()``: True at most once every :data:`PIPED_EVERY_S` seconds, the first time after
    that long (a piped progress line's clock)."""
    last = [time.monotonic()]

    def due() -> bool:
        if time.monotonic() - last[0] < PIPED_EVERY_S:
            return False
        last[0] = time.monotonic()
        return True

    return due


def progress_bar(*extra: TextColumn) -> Progress:
    """Description, bar, done/total, ``extra`` columns, elapsed time."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        *extra,
        TimeElapsedColumn(),
        console=errors,
        transient=False,
        disable=not errors.is_terminal,  # piped or in a log: no bar lines among the output
    )


def cards_or_all(ids: list[str] | None) -> list[EnvCard]:
    if not ids:
        return select_cards()
    try:
        return [get_card(i) for i in ids]
    except UnknownEnvError as exc:
        raise fail(str(exc)) from None


def reference_how(ref: RefScore) -> str:
    """How a reference score was obtained, in a few words."""
    if ref.method == "exact":
        return f"{ref.policy}, exact, suite {ref.suite_version}, {ref.measured}"
    seeds = ref.seeds or []
    return (
        f"{ref.policy}, {ref.episodes} episodes, seeds {seeds[0]}..{seeds[-1]}, "
        f"suite {ref.suite_version}, {ref.measured}"
    )


def score_text(card: EnvCard, kind: str) -> str:
    ref = getattr(card.reference, kind)
    if ref is None:
        return "-"
    return number(ref.value) + (f" ±{number(ref.std, 2)}" if ref.std is not None else "")
