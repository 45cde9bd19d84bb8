"""``rlbench datasets list | info | build | verify | delete | publish | serve``: offline
datasets, thin over :mod:`rlbench_suite.datasets`; ``download`` is
:mod:`~rlbench_suite.cli.datasets_download_command`, on the same ``datasets_app``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from rlbench_suite.cli.common import console, errors, fail, number, print_table, stopped
from rlbench_suite.cli.datasets_common import (
    CacheOption,
    card_for,
    check_cache,
    datasets_app,
    episode_progress,
    record_local_bytes,
    say_other_cpu,
    size_text,
)
from rlbench_suite.core.dataset_cards import (
    DatasetCard,
    dataset_card_paths,
    dataset_cards,
    dataset_catalog_errors,
    shown,
)
from rlbench_suite.core.wording import score
from rlbench_suite.datasets.hints import build_hint, datasets_command


def _cached_state(card: DatasetCard, cache: Path | None) -> str:
    """``yes`` (every file there with its size: a quick check, no hash), ``no`` (nothing
    there), else ``partly`` (a file missing or of another size, or a download's ``.part``)."""
    from rlbench_suite.datasets.cache import is_cached, is_partly_cached

    if is_cached(card, cache):
        return "yes"
    return "partly" if is_partly_cached(card, cache) else "no"


@datasets_app.command("list")
def list_datasets(cache: CacheOption = None) -> None:
    """Table of the dataset cards: id, env, kind, episodes, steps, size, the data's normalized
    score, cached (yes; partly: a file missing or cut short, or a download's .part; no)."""
    from rlbench_suite.datasets.table import data_score

    check_cache(cache, writing=False)
    for error in dataset_catalog_errors():
        errors.print(Text.assemble(("dataset card not loaded:", "red"), f" {error}"),
                     soft_wrap=True)  # fmt: skip
    rows = [
        (c.id, c.env_id, c.kind, number(c.episodes), number(c.steps),
         size_text(sum(f.size for f in c.files) if c.files else None),
         data_score(c),
         _cached_state(c, cache))
        for c in sorted(dataset_cards().values(), key=lambda c: c.id)
    ]  # fmt: skip
    print_table(f"rlbench-suite datasets ({len(rows)})",
                ["id", "env", "kind", "episodes", "steps", "size", "score", "cached"], rows,
                optional=("steps", "episodes", "kind", "env"),  # the last left out first
                caption="score: the data's mean return, normalized on the dataset card's "
                        "references (random 0, expert 100)")  # fmt: skip


@datasets_app.command("info")
def info(dataset_id: str, cache: CacheOption = None) -> None:
    """Everything the card says, and where the dataset is in the cache."""
    from rlbench_suite.datasets.cache import dataset_folder
    from rlbench_suite.datasets.hints import cpu_dependence
    from rlbench_suite.datasets.joint import is_joint
    from rlbench_suite.datasets.table import data_score

    card = card_for(dataset_id)
    check_cache(cache, writing=False)
    console.print(Text.assemble((card.id, "bold"), f" ({card.kind} data of {card.env_id})"))
    console.print(card.description, soft_wrap=True)
    console.print(f"card: {dataset_card_paths().get(card.id)}", soft_wrap=True, highlight=False)
    for p in card.source.policies:
        console.print(f"source: {p.episodes} episodes of {p.policy}"
                      + (f" with Gaussian action noise, std {p.noise_std}" if p.noisy else "")
                      + (f" with epsilon {p.epsilon:g} random actions" if p.epsilon else ""),
                      soft_wrap=True, highlight=False)  # fmt: skip
    run = card.source.training
    if run is not None:
        console.print(f"source: training run `rlbench train {card.env_id} --algo {run.algo} "
                      f"--seed {run.seed} --budget {run.budget}` ({run.hyperparams} "
                      f"hyperparameters) stopped at {run.stop} "
                      f"{'agent steps' if is_joint(card.env_id) else 'steps'}, its first "
                      f"{run.recorded_envs} {'games' if is_joint(card.env_id) else 'envs'} "
                      "recorded"
                      + (f"; curve {run.curve}: {number(run.curve_return)} at the stop"
                         if run.curve else "")
                      + ("" if run.deterministic else "; not deterministic"),
                      soft_wrap=True, highlight=False)  # fmt: skip
    first = "" if card.build.seed is None else f" (first seed {card.build.seed})"
    console.print(f"build: {card.build.command}{first}", soft_wrap=True, highlight=False)
    why = cpu_dependence(card)
    if why is not None or card.build.cpu is not None:
        console.print(f"built on: {card.build.cpu or 'a CPU the card does not record'}"
                      + (f" ({why}: it rebuilds on a CPU like it)" if why else ""),
                      soft_wrap=True, highlight=False)  # fmt: skip
    console.print(f"episodes {number(card.episodes)}, steps {number(card.steps)}, mean return "
                  f"{number(card.mean_return)} (normalized {data_score(card)})",
                  highlight=False)  # fmt: skip
    for kind in ("random", "expert"):
        ref = getattr(card.reference, kind)
        console.print(f"{kind} return: {number(ref.value)} ({ref.policy}, {ref.episodes} episodes)",
                      soft_wrap=True, highlight=False)  # fmt: skip
    console.print(f"content sha256: {card.content_sha256 or '- (not built)'}", highlight=False)
    for f in card.files:
        console.print(f"file {f.path}: {size_text(f.size)} sha256 {f.sha256}", highlight=False)
    console.print(f"remotes: {', '.join(map(shown, card.remotes)) or 'none'}", soft_wrap=True,
                  highlight=False)  # fmt: skip
    where = dataset_folder(card, cache)
    state = {"yes": "cached", "no": "not cached"}.get(_cached_state(card, cache),
                                                       "partly cached or damaged: "
                                                       + datasets_command(
                                                           f"verify {card.id}", cache)
                                                       + " says what is wrong")  # fmt: skip
    console.print(f"cache: {where} ({state})",
                  soft_wrap=True, highlight=False)  # fmt: skip


@datasets_app.command("build")
def build_command(
    dataset_id: str,
    write: Annotated[
        bool, typer.Option(help="Record the build's hashes in the card file.")
    ] = False,
    cache: CacheOption = None,
) -> None:
    """Build a dataset from source into the cache; its content hash must match the card's
    (or, with --write, is recorded in the card). The build goes to a staging folder and
    replaces the cached copy only when the hash matches (a mismatch keeps the old copy and
    exits 1)."""
    from rlbench_suite.datasets.builder import BuildMismatchError, SourceError, build
    from rlbench_suite.datasets.cache import dataset_folder

    card = card_for(dataset_id)
    check_cache(cache)
    if not write:  # --write records this build (and this CPU): nothing is refused
        say_other_cpu(card)
    try:
        with episode_progress(card) as progress:
            out = build(card, dataset_folder(card, cache), progress,  # type: ignore[arg-type]
                        expect_content=None if write else card.content_sha256)  # fmt: skip
    except BuildMismatchError as exc:
        raise fail(exc, code=1) from None
    except SourceError as exc:
        raise fail(exc) from None
    except KeyboardInterrupt:
        raise stopped(f"interrupted while building {card.id}; a build starts over (the cached "
                      "copy, if any, is as it was): run the same command again") from None
    console.print(f"built {card.id}: {out.episodes} episodes, {out.steps} steps, mean return "
                  f"{number(out.mean_return)} "
                  f"(normalized {score(card.normalized_score(out.mean_return))})",
                  highlight=False)  # fmt: skip
    if out.replay is not None:
        r = out.replay
        run, took = (f"{r.training_steps} steps", f"the recorded envs took {r.recorded_steps}")
        if r.agents > 1:  # joint data: the run's slots are agents, a recorded game one episode
            run = f"{r.training_steps} agent steps ({r.agents} agents a game)"
            took = f"the recorded games took {r.recorded_steps} joint steps"
        console.print(f"training run: {run}; {took}: {out.steps} in the {out.episodes} complete "
                      f"episodes, {r.open_steps} in episodes still running at the stop (left out)",
                      highlight=False)  # fmt: skip
    console.print(f"content sha256 {out.content_sha256}", highlight=False)
    for f in out.files:
        console.print(f"{out.folder / f.path}: {f.size} bytes, sha256 {f.sha256}", soft_wrap=True,
                      highlight=False)  # fmt: skip
    if write:
        from rlbench_suite.datasets.card_writer import write_build

        path = dataset_card_paths()[card.id]
        write_build(path, out)
        console.print(f"card updated: {path}", soft_wrap=True, highlight=False)
    else:
        record_local_bytes(card, out)


@datasets_app.command("verify")
def verify_command(
    dataset_ids: Annotated[
        list[str] | None, typer.Argument(help="Ids (default: every cached one).")
    ] = None,
    cache: CacheOption = None,
) -> None:
    """Re-hash cached datasets against their cards; name every file that is wrong."""
    from rlbench_suite.datasets.cache import (
        dataset_folder,
        expected_files,
        is_partly_cached,
        verify,
    )

    check_cache(cache, writing=False)

    cards = [card_for(i) for i in dataset_ids] if dataset_ids else [
        c for c in dataset_cards().values() if c.built and is_partly_cached(c, cache)
    ]  # fmt: skip
    bad = 0
    for card in cards:
        if card.built and not is_partly_cached(card, cache):
            errors.print(Text.assemble((f"{card.id}:", "red"), f" not cached "
                                       f"({dataset_folder(card, cache)}); run "
                                       f"{build_hint(card, cache)}"),
                         soft_wrap=True, highlight=False)  # fmt: skip
            bad += 1
            continue
        try:
            problems = verify(card, cache)
        except ValueError as exc:
            raise fail(exc) from None
        for problem in problems:
            errors.print(Text.assemble((f"{card.id}:", "red"), f" {problem}"), soft_wrap=True,
                         highlight=False)  # fmt: skip
        if problems:  # what to do next: resume, or fetch or rebuild over the bad copy
            errors.print(f"{card.id}: {_repair_advice(card, cache)}", soft_wrap=True,
                         highlight=False)  # fmt: skip
        bad += bool(problems)
        if not problems:
            local = expected_files(card, cache) != list(card.files)
            note = ("; the data file is not the card's bytes (another h5py, HDF5 or "
                    "deflate wrote it): locally verified, and `publish` needs the card's bytes")
            console.print(f"{card.id}: ok ({len(card.files)} files, content hash matches"
                          f"{note if local else ''})", soft_wrap=True, highlight=False)  # fmt: skip
    if not cards:
        console.print("no cached datasets to verify")
    if bad:
        raise typer.Exit(1)


def _repair_advice(card: DatasetCard, cache: Path | None) -> str:
    """What to run about a dataset that failed verification: resume an interrupted download
    (its ``.part`` files are kept bytes: deleting would throw them away), else replace it."""
    from rlbench_suite.datasets.remotes import resume_hint

    resume = resume_hint(card, cache)
    if resume is not None:
        return resume
    return (f"to replace it, run {datasets_command(f'delete {card.id}', cache)} then "
            f"{build_hint(card, cache)}")  # fmt: skip


@datasets_app.command("delete")
def delete_command(dataset_id: str, cache: CacheOption = None) -> None:
    """Remove a dataset from the cache."""
    from rlbench_suite.datasets.cache import dataset_folder, delete, lock_path, remove_stale_lock

    card = card_for(dataset_id)
    check_cache(cache, writing=False)
    folder = dataset_folder(card, cache)
    try:
        deleted = delete(card, cache)
    except PermissionError as exc:
        raise fail(exc) from None
    if deleted:
        said = f"deleted: {folder}"
    else:
        stale = remove_stale_lock(card, cache)
        lock = lock_path(folder)
        said = f"not cached: {folder}"
        if stale:
            said += f" (removed the lock file a download left: {lock})"
        elif stale is None:
            said += f" (another process is downloading it: lock {lock}; left alone)"
    console.print(said, soft_wrap=True, highlight=False)


@datasets_app.command("publish")
def publish_command(
    dataset_id: str,
    to: Annotated[str, typer.Option("--to", help="A folder, file:// or s3:// URL.")],
    cache: CacheOption = None,
) -> None:
    """Copy a cached, verified dataset to a remote (add the remote to the card to use it)."""
    from rlbench_suite.datasets.cache import dataset_folder
    from rlbench_suite.datasets.remotes import describe_error, publish

    card = card_for(dataset_id)
    check_cache(cache, writing=False)
    try:
        written = publish(card, to, cache)
    except ValueError as exc:
        raise fail(exc) from None
    except OSError as exc:  # a folder that cannot be made or written, no bucket: where and why
        where = str(exc.filename or to)
        read = where.startswith(str(dataset_folder(card, cache)))  # the cached copy's file
        why = (f"cannot {'read' if read else 'write'} {where}: {exc.strerror}" if exc.strerror
               else describe_error(exc, to))  # fmt: skip
        raise fail(f"cannot publish {card.id} to {shown(to)}: {shown(why)}") from None
    except Exception as exc:  # no credentials, no network: one line
        raise fail(f"cannot publish {card.id} to {shown(to)}: {describe_error(exc, to)}") from None
    for url in written:
        console.print(f"published {shown(url)}", soft_wrap=True, highlight=False)


@datasets_app.command("serve")
def serve_command(
    folder: Path,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port (0: any free one).")] = 8765,
) -> None:
    """Serve a folder over HTTP with Range requests: a mirror for `download --remote URL`."""
    from rlbench_suite.datasets.server import DatasetServer

    try:
        server = DatasetServer(folder, host, port, verbose=True)
    except FileNotFoundError as exc:
        raise fail(exc) from None
    except OSError as exc:  # the address is taken or not this machine's
        raise fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    console.print(f"serving {folder} at {server.url} (Ctrl-C stops)", soft_wrap=True,
                  highlight=False)  # fmt: skip
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


__all__ = ["datasets_app"]
