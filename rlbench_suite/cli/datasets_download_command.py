"""``rlbench datasets download``: resumed, verified downloads falling back across remotes, or
a build from source (``--build``); the other dataset commands are in
:mod:`~rlbench_suite.cli.datasets_commands`."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import (
    DownloadColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)
from rich.text import Text

from rlbench_suite import interrupts
from rlbench_suite.cli.common import console, errors, fail, stopped
from rlbench_suite.cli.datasets_common import (
    CacheOption,
    card_for,
    check_cache,
    dataset_bar,
    datasets_app,
    episode_progress,
    record_local_bytes,
    say_other_cpu,
    size_text,
)
from rlbench_suite.core.dataset_cards import DatasetCard
from rlbench_suite.datasets.hints import build_hint


@contextlib.contextmanager
def _byte_progress(card: DatasetCard) -> Iterator[object]:
    piped = not errors.is_terminal
    with dataset_bar(DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn()) as bar:
        tasks: dict[str, int] = {}
        finished: set[str] = set()

        def update(label: str, done: int, total: int) -> None:
            if label not in tasks:
                tasks[label] = bar.add_task(f"{label} of {card.id}", total=total)
            bar.update(tasks[label], completed=done)
            if done < total:  # (again) from another remote: its bytes are said again
                finished.discard(label)
            elif piped and label not in finished:
                finished.add(label)
                errors.print(f"{card.id} {label}: all {size_text(total)} here (its SHA-256 is "
                             "checked next)", soft_wrap=True, highlight=False)  # fmt: skip

        yield update


@datasets_app.command("download")
def download_command(
    dataset_ids: list[str],
    offline: Annotated[bool, typer.Option(help="Use only the cache; fail if not there.")] = False,
    build: Annotated[bool, typer.Option(help="Build from source when no remote has it.")] = False,
    remote: Annotated[
        list[str] | None, typer.Option(help="Try these remotes first (repeatable).")
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(min=0.001, help="Seconds without an answer before a remote is given up."),
    ] = None,
    cache: CacheOption = None,
) -> None:
    """Download datasets into the cache: resumed, verified, falling back across remotes.
    One id that fails exits 2 with its error (1 when a build's content hash is not the
    card's); several go on past a dataset that fails and exit 1 at the end, listing the
    failures (an unknown id stops it first, exit 2)."""
    if offline and remote:
        raise typer.BadParameter("--offline uses no remote: drop --remote, or --offline",
                                 param_hint="'--remote'")  # fmt: skip
    cards = [card_for(i) for i in dataset_ids]
    from rlbench_suite.datasets.remotes import check_remote, download_timeout

    try:
        if not offline:  # --offline reads no remote: its timeout is not asked for
            download_timeout(timeout)
        for given in remote or []:
            check_remote(given)
    except ValueError as exc:
        raise fail(exc) from None
    failed: list[str] = []
    code = 1
    for card in cards:
        try:
            _download_one(card, offline, build, remote, timeout, cache)
        except typer.Exit as exc:
            failed.append(card.id)
            code = exc.exit_code if len(cards) == 1 else 1
        except _BuildInterrupted:
            raise stopped(f"interrupted while building {card.id} from source; a build starts "
                          "over: run the same command again") from None  # fmt: skip
        except (KeyboardInterrupt, SystemExit) as exc:  # Ctrl-C, or SIGTERM's SystemExit
            if isinstance(exc, SystemExit) and not interrupts.interrupted():
                raise
            from rlbench_suite.datasets.remotes import kept_bytes, lock_held_elsewhere

            other = None if offline else lock_held_elsewhere(card, cache)
            if other is not None:  # its .part bytes are that process's, not this one's
                raise stopped(f"interrupted while another process downloads {card.id} (lock "
                              f"{other}); it goes on: run the same command again to wait for "
                              "it") from None  # fmt: skip
            kept, total = kept_bytes(card, cache)
            raise stopped(f"interrupted; run the same command again to resume ({kept} of "
                          f"{total} bytes kept)") from None  # fmt: skip
    if failed and len(cards) > 1:
        errors.print(Text.assemble(("failed:", "red"), f" {', '.join(failed)}"), soft_wrap=True,
                     highlight=False)  # fmt: skip
    if failed:
        raise typer.Exit(code)


def _download_one(card: DatasetCard, offline: bool, build: bool, remote: list[str] | None,
                  timeout: float | None, cache: Path | None) -> None:  # fmt: skip
    from rlbench_suite.datasets.cache import dataset_folder, verify
    from rlbench_suite.datasets.remotes import (
        DownloadError,
        download,
        lock_held_elsewhere,
        resume_hint,
    )

    if offline:
        problems = verify(card, cache, content=False) if card.built else ["not built"]
        if problems and not build:
            why = "; ".join(map(str, problems))
            raise fail(f"{card.id} is not complete in the cache "
                       f"({dataset_folder(card, cache)}) and --offline forbids downloading "
                       f"(--build builds it from source): {why}")  # fmt: skip
        if problems:  # --offline --build: no remote is tried, the source is local
            errors.print(f"{card.id}: not complete in the cache; building from source (--offline: "
                         "no remote tried)", soft_wrap=True, highlight=False)  # fmt: skip
            folder = _build_verified(card, cache)
            console.print(f"{card.id}: verified, in {folder}", soft_wrap=True, highlight=False)
            return
        console.print(f"{card.id}: cached at {dataset_folder(card, cache)}", soft_wrap=True,
                      highlight=False)  # fmt: skip
        return
    check_cache(cache)
    other = lock_held_elsewhere(card, cache)
    if other is not None:  # say so, then wait
        errors.print(f"{card.id}: waiting for another process downloading it (lock {other})",
                     soft_wrap=True, highlight=False)  # fmt: skip
    try:
        with _byte_progress(card) as progress:
            folder = download(card, cache, [*(remote or []), *card.remotes], timeout,
                              progress, _say_fallback)  # type: ignore[arg-type]  # fmt: skip
    except ValueError as exc:  # a remote that names no place (the card's: --remote's are checked)
        raise fail(exc) from None
    except DownloadError as exc:
        if not build:
            hint = "" if "--build" in str(exc) else (
                f"; build it from source with {build_hint(card, cache)}")
            resume = resume_hint(card, cache)
            if resume is not None and not remote and not card.remotes:  # else: the same again
                hint = f"; {resume}{hint.replace('; build', ', or build')}"
            raise fail(f"{exc}{hint}") from None
        errors.print(f"{exc}; building from source", soft_wrap=True, highlight=False)
        folder = _build_verified(card, cache)
    console.print(f"{card.id}: verified, in {folder}", soft_wrap=True, highlight=False)


def _say_fallback(line: str) -> None:
    """A remote failed and the next is tried: say which and why (on stderr)."""
    errors.print(f"note: {line}", soft_wrap=True, highlight=False)


class _BuildInterrupted(KeyboardInterrupt):
    """Ctrl-C during ``download --build``'s build: nothing is kept to resume from."""


def _build_verified(card: DatasetCard, cache: Path | None) -> Path:
    from rlbench_suite.datasets.builder import BuildMismatchError, SourceError, build
    from rlbench_suite.datasets.cache import dataset_folder

    say_other_cpu(card)
    try:
        with episode_progress(card) as progress:
            out = build(card, dataset_folder(card, cache), progress,  # type: ignore[arg-type]
                        expect_content=card.content_sha256)  # fmt: skip
    except (KeyboardInterrupt, SystemExit) as exc:  # Ctrl-C, or SIGTERM's SystemExit
        if isinstance(exc, SystemExit) and not interrupts.interrupted():
            raise
        raise _BuildInterrupted from None
    except BuildMismatchError as exc:
        raise fail(exc, code=1) from None
    except SourceError as exc:
        raise fail(exc) from None
    record_local_bytes(card, out)
    return out.folder
