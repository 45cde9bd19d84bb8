"""``rlbench leaderboard init|migrate|import|serve|export|verify|token ...``, ``rlbench submit``."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer

from rlbench_suite import interrupts
from rlbench_suite.cli.common import app, console, fail, print_table
from rlbench_suite.leaderboard.worker_limits import WorkerLimits

leaderboard_app = typer.Typer(help="The leaderboard server and its database.", no_args_is_help=True)
token_app = typer.Typer(help="API tokens for submitting results.", no_args_is_help=True)
method_app = typer.Typer(help="Methods' metadata (as the server's operator).", no_args_is_help=True)
app.add_typer(leaderboard_app, name="leaderboard")
leaderboard_app.add_typer(token_app, name="token")
leaderboard_app.add_typer(method_app, name="method")

DB_ENV_VAR = "RLBENCH_LEADERBOARD_DB"
DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        help=f"Database URL (sqlite:///PATH or postgresql://...); default "
        f"${DB_ENV_VAR}, else <data dir>/leaderboard/leaderboard.sqlite.",
    ),
]


LIMITS = WorkerLimits()
CpuOption = Annotated[int, typer.Option(min=1, help="CPU seconds per verification.")]
WallOption = Annotated[float, typer.Option(min=1, help="Wall seconds per verification.")]
MemoryOption = Annotated[float, typer.Option(min=0.1, help="Memory (GiB) per verification.")]


def database_url(db: str | None) -> str:
    """``--db``, else ``$RLBENCH_LEADERBOARD_DB``, else the embedded SQLite file."""
    from rlbench_suite.leaderboard.db import sqlite_url
    from rlbench_suite.paths import leaderboard_dir

    return db or os.environ.get(DB_ENV_VAR) or sqlite_url(leaderboard_dir())


def open_database(db: str | None, sync: bool = True):
    """Migrate the database (and sync the cards); a session factory, or a clean error."""
    from sqlalchemy.exc import OperationalError

    from rlbench_suite.leaderboard.db import DatabaseURLError, shown_url
    from rlbench_suite.leaderboard.startup import prepare_database

    url = database_url(db)
    cards = spec_hash = None
    if sync:
        from rlbench_suite.leaderboard.catalog_sync import board_cards
        from rlbench_suite.registry import spec_hash

        cards = board_cards()
    try:
        return prepare_database(url, cards, spec_hash), url
    except DatabaseURLError as exc:
        raise fail(exc) from None
    except OperationalError as exc:
        raise fail(f"cannot open the database {shown_url(url)}: {exc.orig}") from None


@leaderboard_app.command("init")
def init(db: DbOption = None) -> None:
    """Create (or migrate) the database and sync the environments and suites from the cards."""
    from sqlalchemy import func, select

    from rlbench_suite.core.wording import counted
    from rlbench_suite.leaderboard.db import shown_url
    from rlbench_suite.leaderboard.models import Environment, Suite

    factory, url = open_database(db)
    with factory() as session:
        active = select(func.count()).select_from(Environment).where(Environment.active)
        envs = session.scalar(active)
        suites = session.scalar(select(func.count()).select_from(Suite))
    console.print(
        f"leaderboard database {shown_url(url)}: {counted(envs, 'environment')}, "
        f"{counted(suites, 'suite')}",
        soft_wrap=True,
    )


@leaderboard_app.command("migrate")
def migrate(
    db: DbOption = None,
    revision: Annotated[
        str, typer.Option(help="Target revision: head, base (no tables) or a script's, e.g. 0001.")
    ] = "head",
    downgrade: Annotated[
        bool, typer.Option(help="Allow going back to an older revision (drops data).")
    ] = False,
) -> None:
    """Bring the database's schema to a revision (default: the newest)."""
    from rlbench_suite.leaderboard.db import DatabaseURLError, make_engine, shown_url
    from rlbench_suite.leaderboard.migrate import RevisionError, current_revision, migrate_to

    url = database_url(db)
    try:
        engine = make_engine(url)
        before = current_revision(engine)
        after = migrate_to(engine, revision, downgrade)
    except (DatabaseURLError, RevisionError) as exc:
        raise fail(exc) from None
    console.print(
        f"{shown_url(url)}: schema {before or '(empty)'} -> {after or '(empty)'}", soft_wrap=True
    )


VERIFY_HELP = (
    "Also queue the verification of each result whose ONNX policy is shipped (the zoo's): "
    "the worker re-evaluates it and marks the result verified where it reproduces it (the "
    "whole zoo takes hours of CPU)."
)


def _queued(queued: list[str], verify: bool) -> str:
    from rlbench_suite.core.wording import counted

    if not verify:
        return ""
    return f"; {counted(len(queued), 'verification job')} queued"


@leaderboard_app.command("import")
def import_results(
    results: Annotated[list[Path], typer.Argument(help="Result files, or folders of them.")],
    db: DbOption = None,
    method: Annotated[
        str | None,
        typer.Option(help="The method they belong to (default: from each result's policy)."),
    ] = None,
    verify: Annotated[bool, typer.Option(help=VERIFY_HELP)] = False,
) -> None:
    """Import Result JSON files (e.g. baselines/results) as self-reported results."""
    from rlbench_suite.leaderboard.importer import import_files, result_files

    factory, _ = open_database(db)
    files = result_files(results)
    if not files:
        raise fail(f"no result files in {', '.join(map(str, results))}")
    report = import_files(factory, files, method=method, verify=verify)
    for name, why in report.refused:
        console.print(f"refused {name}: {why}", soft_wrap=True)
    console.print(
        f"imported {len(report.added)} new, {len(report.existing)} already there, "
        f"{len(report.refused)} refused{_queued(report.queued, verify)}"
    )
    if report.refused:
        raise typer.Exit(1)


@leaderboard_app.command("serve")
def serve(
    db: DbOption = None,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on.")] = 8000,
    seed: Annotated[bool, typer.Option(help="Import the zoo's results at start.")] = True,
    worker: Annotated[
        bool, typer.Option(help="Run the verification worker beside the server (stopped with it).")
    ] = True,
    verify_zoo: Annotated[
        bool, typer.Option(help="With --seed: " + VERIFY_HELP[0].lower() + VERIFY_HELP[1:])
    ] = False,
    cpu_s: CpuOption = LIMITS.cpu_s,
    wall_s: WallOption = LIMITS.wall_s,
    memory_gb: MemoryOption = LIMITS.memory_gb,
) -> None:
    """Serve the leaderboard site and API, with the verification worker in a child process."""
    import uvicorn

    from rlbench_suite.leaderboard.app import create_app
    from rlbench_suite.leaderboard.db import shown_url
    from rlbench_suite.leaderboard.importer import import_files, result_files
    from rlbench_suite.leaderboard.listen import PortUnavailable, bind_site
    from rlbench_suite.resources import content_dir

    if verify_zoo and not seed:
        raise fail("--verify-zoo needs --seed (it verifies the zoo results the seeding imports)")
    try:
        sock = bind_site(host, port)  # before any work: a taken port is refused at once
    except PortUnavailable as exc:
        raise fail(exc) from None
    factory, url = open_database(db)
    if seed:
        zoo = result_files([content_dir("baselines") / "results"])
        report = import_files(factory, zoo, verify=verify_zoo, replace=True)
        replaced = f", {report.superseded} superseded" if report.superseded else ""
        console.print(
            f"zoo results: {len(report.added)} new, {len(report.existing)} there, "
            f"{len(report.refused)} refused{replaced}{_queued(report.queued, verify_zoo)}"
        )

    port = sock.getsockname()[1]  # the one picked where --port was 0
    console.print(f"serving {shown_url(url)} on http://{host}:{port}/", soft_wrap=True)
    # uvicorn re-raises the SIGTERM it stopped on; raised as SystemExit(143) by the handler
    # every command installs (rlbench_suite.interrupts), the worker is stopped on the way out
    limits = WorkerLimits.from_options(cpu_s, wall_s, memory_gb)
    with _worker(url, limits) if worker else contextlib.nullcontext():
        if not worker:
            console.print("no verification worker (run `rlbench leaderboard verify` beside)")
        _keep_plots()
        server = uvicorn.Server(uvicorn.Config(create_app(factory), log_level="info"))
        with sock, contextlib.suppress(KeyboardInterrupt):  # as uvicorn.run: Ctrl-C stops it
            server.run(sockets=[sock])
        if not server.started:  # uvicorn logged why
            raise typer.Exit(3)


@contextlib.contextmanager
def _worker(url: str, limits: WorkerLimits) -> Iterator[None]:
    """``serve``'s verification worker, said when it starts and stops."""
    from rlbench_suite.leaderboard.worker_process import worker_beside

    process = None
    try:
        with worker_beside({DB_ENV_VAR: url}, limits=limits) as process:
            console.print(
                f"verification worker: pid {process.pid} (--no-worker runs none); each "
                f"verification gets {limits.cpu_s} CPU s, {limits.wall_s:g} wall s, "
                f"{limits.memory_gb:g} GiB",
                soft_wrap=True,
            )
            yield
    finally:
        if process is not None:
            console.print(f"verification worker stopped (exit {process.returncode})")


def _keep_plots() -> None:
    """The server and the export keep the plots they draw under the data dir."""
    from rlbench_suite.leaderboard.plots import use_disk_cache
    from rlbench_suite.paths import plot_cache_dir

    use_disk_cache(plot_cache_dir())


@leaderboard_app.command("export")
def export(
    out: Annotated[Path, typer.Argument(help="The folder to write the site into.")],
    db: DbOption = None,
) -> None:
    """Write the whole site as static HTML (with its plots) for hosting without a server."""
    from rlbench_suite.leaderboard.app import create_app
    from rlbench_suite.leaderboard.export import ExportFolderError, export_site

    factory, _ = open_database(db)
    _keep_plots()
    try:
        files = export_site(create_app(factory), out)
    except ExportFolderError as exc:
        raise fail(exc) from None
    pages = sum(f.name == "index.html" for f in files)
    console.print(
        f"exported {pages} pages and {len(files) - pages} other files to {out}", soft_wrap=True
    )


@leaderboard_app.command("verify")
def verify(
    db: DbOption = None,
    once: Annotated[bool, typer.Option(help="Run the queued jobs, then stop.")] = False,
    poll_s: Annotated[
        float, typer.Option(min=0.1, help="Seconds between looks at the queue.")
    ] = 5.0,
    cpu_s: CpuOption = LIMITS.cpu_s,
    wall_s: WallOption = LIMITS.wall_s,
    memory_gb: MemoryOption = LIMITS.memory_gb,
    parent_pid: Annotated[
        int | None, typer.Option(hidden=True, help="Stop when this process is gone (serve's).")
    ] = None,
) -> None:
    """Verify queued ONNX submissions: re-evaluate each in a limited process, store it verified."""
    import time

    from rlbench_suite.leaderboard.worker import run_pending

    # SIGTERM (serve stopping) unwinds, exit 0: the running evaluation is killed, its job
    # re-queued
    interrupts.install(sigterm_status=0)
    factory, _ = open_database(db, sync=parent_pid is None)
    limits = WorkerLimits.from_options(cpu_s, wall_s, memory_gb)
    while parent_pid is None or os.getppid() == parent_pid:
        for job_id, state in run_pending(factory, limits):
            console.print(f"verification job {job_id}: {state}")
        if once:
            return
        time.sleep(poll_s)


def token_config_file() -> Path:
    """Where ``rlbench submit`` looks for a token when ``$RLBENCH_LEADERBOARD_TOKEN`` is unset."""
    import platformdirs

    return Path(platformdirs.user_config_dir("rlbench-suite")) / "leaderboard-token"


def submission_token() -> str:
    """The token to submit with (the env var, else the config file), or a clean error."""
    from rlbench_suite.leaderboard.client import SubmitError, find_token

    try:
        return find_token(token_config_file())
    except SubmitError as exc:
        raise fail(exc) from None


def submit_files(server: str, token: str, result: Path, policy: Path | None,
                 method: str | None) -> None:  # fmt: skip
    """POST ``result`` (and the ONNX ``policy`` that produced it, queued for verification) to
    ``server``, printing the URLs of the stored row and of the queued verification."""
    import json

    from rlbench_suite.core.result import ResultError, load_result
    from rlbench_suite.leaderboard.client import (
        SubmitError,
        check_policy_metadata,
        policy_metadata,
        submit_policy,
        submit_result,
    )
    from rlbench_suite.leaderboard.store import default_method_name

    try:
        doc = load_result(result)
        if policy is not None:
            _check_policy_file(policy, doc.policy.get("artifact_sha256"))
            data = json.loads(doc.model_dump_json())
            name = method or default_method_name(data["policy"])
            check_policy_metadata(policy_metadata(data, name))
        answer = submit_result(server, token, result, method)
        state = "stored" if answer["created"] else "already there"
        console.print(f"result {state} ({answer['verification']}): {answer['url']}", soft_wrap=True)
        if policy is not None:
            queued = submit_policy(server, token, policy, data, name)
            what = "queued for verification" if queued["created"] else (
                f"already submitted (verification {queued['state']})")  # fmt: skip
            console.print(
                f"policy {queued['artifact_sha256'][:12]} {what}: {queued['url']}", soft_wrap=True
            )
    except (ResultError, SubmitError, OSError) as exc:
        raise fail(exc) from None


def _check_policy_file(policy: Path, artifact: str | None) -> None:
    """Before sending anything: ``policy`` is a readable file, and the one the Result was
    evaluated with where the Result names its artifact (else the pair would be two runs)."""
    import hashlib

    if not policy.is_file():
        raise fail(f"--policy {policy}: no such file (the ONNX policy that produced the result)")
    digest = hashlib.sha256(policy.read_bytes()).hexdigest()
    if artifact and digest != artifact:
        raise fail(
            f"--policy {policy} is not the policy the result was evaluated with: its SHA-256 "
            f"is {digest[:12]}..., the result's policy artifact is {artifact[:12]}...; pass "
            "that policy's file, or submit the result without --policy"
        )


@app.command("submit")
def submit(
    result: Annotated[Path, typer.Argument(help="The Result JSON to submit.")],
    server: Annotated[str, typer.Option(help="The leaderboard's URL.")],
    policy: Annotated[
        Path | None, typer.Option(help="The ONNX policy that produced it, to verify.")
    ] = None,
    method: Annotated[str | None, typer.Option(help="The method it belongs to.")] = None,
) -> None:
    """Submit a result (and its ONNX policy) to a leaderboard; the token comes from
    $RLBENCH_LEADERBOARD_TOKEN or <config dir>/leaderboard-token."""
    submit_files(server, submission_token(), result, policy, method)


@token_app.command("create")
def token_create(
    name: Annotated[str, typer.Argument(help="Who the token is for.")], db: DbOption = None
) -> None:
    """Issue a token; its value is printed once and only its hash is stored."""
    from rlbench_suite.leaderboard.tokens import TokenError, create_token

    factory, _ = open_database(db, sync=False)
    try:
        with factory.begin() as session:
            _, value = create_token(session, name)
    except TokenError as exc:
        raise fail(exc) from None
    console.print(f"token {name!r} created; it is shown only now:")
    console.print(value, soft_wrap=True, highlight=False)


@token_app.command("revoke")
def token_revoke(
    name: Annotated[str, typer.Argument(help="The token's name.")], db: DbOption = None
) -> None:
    """Revoke a token: requests with it are refused from now on."""
    from rlbench_suite.leaderboard.tokens import TokenError, revoke_token

    factory, _ = open_database(db, sync=False)
    try:
        with factory.begin() as session:
            row, fresh = revoke_token(session, name)
            when = row.revoked_at
    except TokenError as exc:
        raise fail(exc) from None
    console.print(f"token {name!r} revoked" if fresh else
                  f"token {name!r} was already revoked on {when:%Y-%m-%d %H:%M} UTC")  # fmt: skip


@token_app.command("list")
def token_list(db: DbOption = None) -> None:
    """The tokens, with when they were created, last used and revoked (never their values)."""
    from rlbench_suite.leaderboard.tokens import list_tokens

    factory, _ = open_database(db, sync=False)
    with factory() as session:
        rows = [
            (
                t.name,
                f"{t.created_at:%Y-%m-%d %H:%M}",
                f"{t.last_used_at:%Y-%m-%d %H:%M}" if t.last_used_at else "-",
                f"revoked {t.revoked_at:%Y-%m-%d}" if t.revoked_at else "live",
            )
            for t in list_tokens(session)
        ]
    print_table("API tokens", ["name", "created", "last used", "state"], rows)


@method_app.command("edit")
def method_edit(
    name: Annotated[str, typer.Argument(help="The method's name (its key; it does not change).")],
    authors: Annotated[str | None, typer.Option(help="Authors ('' clears).")] = None,
    paper_url: Annotated[str | None, typer.Option(help="http(s) link to the paper.")] = None,
    code_url: Annotated[str | None, typer.Option(help="http(s) link to the code.")] = None,
    description: Annotated[str | None, typer.Option(help="A description.")] = None,
    family: Annotated[
        str | None,
        typer.Option(help="Algorithm family (the rankings' filter), e.g. policy-gradient."),
    ] = None,
    db: DbOption = None,
) -> None:
    """Edit any method's metadata on the server's database (the API lets only the token that
    created a method edit it)."""
    from rlbench_suite.leaderboard.methods import MethodEditError, edit_method, option, parse_edit

    given = {"authors": authors, "paper_url": paper_url, "code_url": code_url,
             "description": description, "family": family}  # fmt: skip
    changes = {k: v for k, v in given.items() if v is not None}
    if not changes:
        raise fail(f"nothing to change: pass any of {', '.join(map(option, given))}")
    factory, _ = open_database(db, sync=False)
    try:
        with factory.begin() as session:
            method = edit_method(session, name, parse_edit(changes, cli=True), token_id=None)
            shown = {k: getattr(method, k) for k in changes}
    except (MethodEditError, LookupError) as exc:
        raise fail(exc) from None
    for key, value in shown.items():
        console.print(f"{name}: {key} = {value!r}", soft_wrap=True, highlight=False)
