"""What the ``rlbench datasets`` commands share: the command group, the ``--cache`` option,
ids to cards, the cache folder's check, sizes, a build's progress and notes."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
import typer.core
from rich.progress import BarColumn, Progress, ProgressColumn, TextColumn, TimeRemainingColumn
from rich.table import Column

from rlbench_suite.cli.common import app, errors, fail, throttle, usable_folder
from rlbench_suite.core.dataset_cards import DatasetCard, UnknownDatasetError, get_dataset_card

if TYPE_CHECKING:
    from rlbench_suite.datasets.builder import BuildOutput

COMMAND_ORDER = ("list", "info", "download", "verify", "delete", "build", "publish", "serve")
"""The order ``rlbench datasets --help`` lists the commands in (a user's: find, get, check)."""


class _DatasetsGroup(typer.core.TyperGroup):
    """The ``datasets`` group, its commands listed in :data:`COMMAND_ORDER`."""

    def list_commands(self, ctx: typer.Context) -> list[str]:
        known = super().list_commands(ctx)
        order = {name: i for i, name in enumerate(COMMAND_ORDER)}
        return sorted(known, key=lambda name: order.get(name, len(order)))


datasets_app = typer.Typer(
    help="Offline datasets: list, inspect, download, verify, build, publish and serve them.",
    no_args_is_help=True,
    cls=_DatasetsGroup,
)
app.add_typer(datasets_app, name="datasets")

CacheOption = Annotated[
    Path | None,
    typer.Option("--cache", help="The cache folder (default: RLBENCH_DATA_DIR/datasets)."),
]


def card_for(dataset_id: str) -> DatasetCard:
    """The card of ``dataset_id``; an unknown id is one ``error:`` line (closest ids), exit 2."""
    try:
        return get_dataset_card(dataset_id)
    except UnknownDatasetError as exc:
        raise fail(exc) from None


def check_cache(cache: Path | None, writing: bool = True) -> None:
    """Make the cache folder when missing (for the commands that only read it: check that no
    file is in its way); one line and exit 2 when it cannot be a folder."""
    from rlbench_suite.datasets.cache import cache_root

    usable_folder(cache_root(cache), "--cache" if cache is not None else "the dataset cache",
                  "make" if writing else "read")  # fmt: skip


def size_text(n: int | None) -> str:
    """``n`` bytes as a reader says it (``1.2 MB``; ``-`` for None)."""
    if n is None:
        return "-"
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000  # type: ignore[assignment]
    return str(n)


def dataset_bar(*columns: ProgressColumn) -> Progress:
    """A progress bar on stderr (only in a terminal) whose description (a dataset id, a file)
    is cut short with an ellipsis and whose bar shrinks before ``columns`` (the counts, the
    speed, the time left) do, so an 80-column terminal shows them whole on one line."""
    return Progress(
        TextColumn("[bold]{task.description}",
                   table_column=Column(ratio=2, no_wrap=True, overflow="ellipsis")),
        BarColumn(bar_width=None, table_column=Column(ratio=1)),
        *columns, console=errors, expand=True, disable=not errors.is_terminal,
    )  # fmt: skip


@contextlib.contextmanager
def episode_progress(card: DatasetCard) -> Iterator[object]:
    """A bar over the card's episodes, or over its training run's steps (medium-replay); piped,
    a line at most every :data:`~rlbench_suite.cli.common.PIPED_EVERY_S` seconds instead (a
    run takes minutes)."""
    run = card.source.training
    if not errors.is_terminal:
        yield _progress_lines(card)
        return
    text = ("{task.completed}/{task.total} training steps, {task.fields[episodes]} episodes"
            if run else "{task.completed}/{task.total} episodes, {task.fields[steps]} steps")
    with dataset_bar(TextColumn(text, table_column=Column(no_wrap=True)),
                     TimeRemainingColumn()) as bar:  # fmt: skip
        if run is not None:
            task = bar.add_task(f"build {card.id}", total=run.stop, episodes=0)
            yield lambda done, steps: bar.update(task, completed=steps, episodes=done)
        else:
            task = bar.add_task(f"build {card.id}", total=card.source.episodes, steps=0)
            yield lambda done, steps: bar.update(task, completed=done, steps=steps)


def _progress_lines(card: DatasetCard) -> Callable[[int, int], None]:
    """``update(episodes, steps)`` printing a plain progress line at most every
    :data:`~rlbench_suite.cli.common.PIPED_EVERY_S` seconds (the first after that long)."""
    run = card.source.training
    due = throttle()

    def update(done: int, steps: int) -> None:
        if not due():
            return
        where = (f"{steps}/{run.stop} training steps, {done} episodes recorded" if run
                 else f"{done}/{card.source.episodes} episodes, {steps} steps")  # fmt: skip
        errors.print(f"build {card.id}: {where}", soft_wrap=True, highlight=False)

    return update


def record_local_bytes(card: DatasetCard, out: BuildOutput) -> None:
    """After a build whose content hash is the card's: when its file bytes differ from the
    card's (another h5py, HDF5 or deflate), record the local verification so verify/load
    accept it."""
    from rlbench_suite.datasets.cache import VERIFIED_FILE, write_verified

    if card.content_sha256 is None or out.content_sha256 != card.content_sha256:
        return
    mine = {f.path: f for f in out.files}
    differ = [f.path for f in card.files if mine.get(f.path) != f]
    if differ:
        write_verified(out.folder, out.content_sha256, out.files)
        errors.print(f"note: the content hash matches the card's but the bytes of "
                     f"{', '.join(differ)} differ (another h5py, HDF5 or deflate?); recorded as "
                     f"locally verified in {out.folder / VERIFIED_FILE}; `publish` needs the "
                     "card's bytes", soft_wrap=True, highlight=False)  # fmt: skip


def say_other_cpu(card: DatasetCard) -> None:
    """A note on stderr when ``card``'s data was built on another kind of CPU (a training run's
    bits may differ here)."""
    from rlbench_suite.datasets.hints import other_cpu_note

    note = other_cpu_note(card)
    if note is not None:
        errors.print(note, soft_wrap=True, highlight=False, style="yellow")
