"""What the ``rlbench`` subcommands share: the app, consoles, progress bars, card lookup."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

import rlbench_suite
from rlbench_suite.core.cards import CardError, EnvCard, RefScore
from rlbench_suite.core.catalog import UnknownEnvError, catalog_errors, get_card, select_cards

app = typer.Typer(
    name="rlbench",
    help="rlbench-suite: environments, checks and reference scores for reinforcement learning.",
    no_args_is_help=True,
    add_completion=False,
)
console = Console()
errors = Console(stderr=True)


def fail(message: str, code: int = 2) -> typer.Exit:
    errors.print(f"[red]error:[/red] {message}")
    return typer.Exit(code)


def report_broken_cards() -> int:
    """Print the cards that failed to load; return how many."""
    for error in catalog_errors():
        errors.print(f"[red]card not loaded:[/red] {error}", markup=False)
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
    # SIGTERM unwinds like Ctrl-C, so running commands stop their workers and keep their logs
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    if cards:
        try:
            rlbench_suite.register_cards(cards)
        except CardError as exc:
            raise fail(str(exc)) from None


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def progress_bar() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
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
    return f"{ref.value:.4g}" + (f" ±{ref.std:.2g}" if ref.std is not None else "")
