"""``rlbench demo``: the whole suite at work, step by step (see the package docstring)."""

from __future__ import annotations

import contextlib
import socket
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from rlbench_suite.core.cards import EnvCard
from rlbench_suite.core.catalog import get_card
from rlbench_suite.core.dataset_cards import get_dataset_card
from rlbench_suite.core.result import Result, ResultError, load_result
from rlbench_suite.core.wording import counted
from rlbench_suite.demo import board
from rlbench_suite.demo.defaults import (
    DEFAULT_DATASET,
    DEFAULT_PORT,
    QUICK_TRAIN_STEPS,
    TRAIN_CAP_SECONDS,
    TRAIN_STEPS,
)
from rlbench_suite.demo.report import DemoError, Reporter
from rlbench_suite.envs.robotics.pybullet_import import import_pybullet
from rlbench_suite.evaluation import default_protocol, evaluate
from rlbench_suite.leaderboard.listen import PortUnavailable, bind_site
from rlbench_suite.paths import datasets_dir, leaderboard_dir, result_file
from rlbench_suite.policies.core import file_sha256

STEPS = ("the leaderboard database", "the shipped baselines on a quick suite",
         "a dataset through a local mirror", "training the fast quadrotor baseline",
         "verification by the leaderboard's worker", "summary",
         "serving the leaderboard")  # fmt: skip


@dataclass(frozen=True)
class DemoOptions:
    """What ``rlbench demo`` was asked to do."""

    data_dir: Path
    db: str | None = None
    """A database URL; default the embedded SQLite file in ``<data dir>/leaderboard``."""
    quick: bool = False
    """One card per family and a few seconds of training (the tests)."""
    serve: bool = True
    port: int | None = None
    """None: 8000, or any free port when 8000 is taken; 0: any free port."""
    train_steps: int | None = None
    """Quadrotor training's step budget; default TRAIN_STEPS (QUICK_TRAIN_STEPS with quick)."""
    train_seconds: float = TRAIN_CAP_SECONDS
    """A wall-time cap on that training."""
    dataset: str = DEFAULT_DATASET
    host: str = "127.0.0.1"

    @property
    def demo_dir(self) -> Path:
        return self.data_dir / "demo"


@dataclass
class Evaluated:
    """One evaluated policy: the summary table's row."""

    card: EnvCard
    label: str
    result: Result
    stored: board.Stored
    job: int | None = None
    why_not: str | None = None
    shipped: str | None = None
    """The method of the shipped baseline this policy is set beside (the trained quadrotor's)."""
    shortfall: str | None = None
    """Why this policy falls short of what it was trained for (the summary says it)."""


@dataclass
class Demo:
    """The state the steps share."""

    options: DemoOptions
    out: Reporter
    factory: object = None
    url: str = ""
    entries: list[Evaluated] = field(default_factory=list)
    verifier: board.Verifier | None = None


def bind(host: str, port: int | None, out: Reporter) -> socket.socket:
    """A socket bound for the site, before the long steps, so a taken port fails at once."""
    try:
        return bind_site(host, DEFAULT_PORT if port is None else port)
    except PortUnavailable as exc:
        if port is not None:
            raise DemoError(f"{exc} or --no-serve") from None
    sock = bind_site(host, 0)
    out.say(f"port {DEFAULT_PORT} is taken; the site will use port {sock.getsockname()[1]}")
    return sock


def evaluate_shown(demo: Demo, card: EnvCard, policy: str,
                   path: Path) -> tuple[Result, str, bool]:  # fmt: skip
    """Evaluate under the card's protocol with a progress bar, the result written to ``path``
    (kept from an earlier demo when it is the same policy and protocol); the result, how it
    was obtained, and whether it was kept."""
    from rlbench_suite.policies.specs import artifact_of

    protocol = default_protocol(card)
    artifact = artifact_of(policy)
    try:
        earlier = load_result(path) if path.is_file() else None
    except ResultError:
        earlier = None
    if (earlier is not None and earlier.protocol_hash == protocol.hash and artifact is not None
            and earlier.policy.get("artifact_sha256") == file_sha256(artifact)):  # fmt: skip
        return earlier, "kept from an earlier demo", True
    log = path.with_name(path.name + ".episodes.jsonl")
    with demo.out.progress(card.id, protocol.episodes) as update:
        done = [0]

        def advance(_: object) -> None:
            done[0] += 1
            update(done[0])

        try:
            result = evaluate(card, policy, protocol, workers=1, out=path, resume=True,
                              on_episode=advance)  # fmt: skip
        except ValueError as exc:
            if "different evaluation" not in str(exc):
                raise
            log.unlink()  # an earlier demo's log of another policy or protocol
            done[0] = 0
            result = evaluate(card, policy, protocol, workers=1, out=path, on_episode=advance)
    return result, f"{protocol.episodes} episodes in {result.wall_time_s:.1f} s", False


def score_text(card: EnvCard, result: Result) -> str:
    """The result's normalized score, else the card's primary metric (the table's scale), with
    its interval."""
    from rlbench_suite.core.scoring import scored_by_success
    from rlbench_suite.demo.summary import interval

    if result.normalized_score is not None:
        return f"normalized {interval(result.normalized_score)}"
    key = "success_rate" if scored_by_success(card.primary_metric) else "return_mean"
    return f"{card.primary_metric} {interval(result.aggregates[key])}"


def record(demo: Demo, card: EnvCard, label: str, policy: str, result: Result, path: Path,
           kept: bool, method: board.NewMethod | None = None) -> Evaluated:  # fmt: skip
    """Store ``result`` (written to ``path``, or kept there from an earlier demo) in the
    leaderboard and queue its ONNX policy for verification."""
    from rlbench_suite.policies.specs import artifact_of

    stored = board.store(demo.factory, result, method)
    state = "stored as" if stored.created else "already stored as"
    demo.out.say(f"  {card.id}: {score_text(card, result)}; {state} result #{stored.result_id} "
                 f"(method {stored.method!r})")  # fmt: skip
    demo.out.made_here(f"{card.id} result", path, kept=kept)
    entry = Evaluated(card, label, result, stored)
    artifact = artifact_of(policy)
    if artifact is not None and artifact.suffix == ".onnx":
        entry.job = board.queue_verification(demo.factory, stored, artifact)
    demo.entries.append(entry)
    return entry


def step_database(demo: Demo) -> None:
    from rlbench_suite.leaderboard.db import shown_url, sqlite_url

    demo.url = demo.options.db or sqlite_url(leaderboard_dir(demo.options.data_dir))
    there = board.has_board(demo.url)
    demo.factory = board.open_board(demo.url)
    report = board.import_zoo(demo.factory)
    demo.out.made_here("leaderboard database (SQLite unless --db says otherwise)"
                       + (", brought up to date" if there else ""),
                       shown_url(demo.url), kept=there)  # fmt: skip
    demo.out.say(f"  the cards synced; the zoo's committed results (baselines/results): "
                 f"{len(report.added)} imported, {len(report.existing)} already there, "
                 f"{len(report.refused)} refused")  # fmt: skip


def step_baselines(demo: Demo) -> None:
    from rlbench_suite.demo.suite import quick_suite

    picks = quick_suite(1 if demo.options.quick else 2)
    families = ", ".join(sorted({p.card.family for p in picks}))
    demo.out.say(f"  {len(picks)} cards ({families}), per family the quickest among those "
                 "with a committed baseline; each under its card's full protocol")  # fmt: skip
    for pick in picks:
        path = result_file(
            pick.card.namespace,
            pick.card.name,
            pick.policy,
            default_protocol(pick.card).hash,
            root=demo.options.data_dir,
        )
        result, how, kept = evaluate_shown(demo, pick.card, pick.policy, path)
        demo.out.say(f"  {pick.card.id} {pick.policy}: {how}")
        record(demo, pick.card, pick.label, pick.policy, result, path, kept)
    queued = [
        e
        for e in demo.entries
        if e.job is not None and board.job_outcome(demo.factory, e.job)[0] == "queued"
    ]
    demo.verifier = board.Verifier(demo.factory).start()
    demo.out.say(
        f"  {len(queued)} ONNX policies submitted for verification (those not verified "
        "yet); the leaderboard's worker re-evaluates them in the background"
    )


def step_dataset(demo: Demo) -> None:
    from rlbench_suite.datasets.cache import dataset_folder
    from rlbench_suite.demo.mirror import download_from_mirror, fill_mirror, keep_in_cache

    card = get_dataset_card(demo.options.dataset)
    mirror, fresh = demo.options.demo_dir / "mirror", demo.options.demo_dir / "downloads"
    with demo.out.progress(f"build {card.id}", card.source.episodes) as update:
        filled = fill_mirror(card, mirror, datasets_dir(demo.options.data_dir),
                             lambda episodes, _steps: update(episodes))  # fmt: skip
    demo.out.made_here(f"mirror folder, {card.id} {filled.how}", mirror)
    if filled.note:
        demo.out.say(f"  note: {filled.note}")
    with demo.out.progress(f"download {card.id}", None) as update:
        got = download_from_mirror(
            filled.card, mirror, fresh, lambda _label, done, total: update(done, total=total)
        )
    demo.out.say(f"  served at {got.url} (127.0.0.1, a free port; stopped after the "
                 f"download), {got.bytes_served} bytes sent")  # fmt: skip
    demo.out.say(f"  downloaded and verified (each file's SHA-256, then the episodes' content "
                 f"hash {card.content_sha256[:16]}...) into a fresh cache:")  # fmt: skip
    for file in got.files:
        demo.out.say(f"  {card.id} {file.path}: {file.size} bytes, sha256 {file.sha256}")
    demo.out.made_here(f"{card.id} in a fresh cache", got.folder)
    cache = datasets_dir(demo.options.data_dir)
    copied = keep_in_cache(card, fresh, cache)  # None: the cache held it already
    demo.out.made_here(f"{card.id} in your dataset cache (the site serves it, and "
                       f"gym.make('{card.id}') reads it)", copied or dataset_folder(card, cache),
                       kept=copied is None)  # fmt: skip


def step_quad(demo: Demo) -> None:
    from rlbench_suite.demo.quad import DEMO_SEED, GOAL, QUAD_ID, demo_method, train_quad

    card = get_card(QUAD_ID)
    steps = demo.options.train_steps or (QUICK_TRAIN_STEPS if demo.options.quick else TRAIN_STEPS)
    cap = demo.options.train_seconds
    folder = demo.options.demo_dir / "quad"
    demo.out.say(
        f"  fast_ppo (the zoo's hyperparameters, seed {DEMO_SEED}) on the batched NumPy "
        f"backend for up to {steps:,} steps (stopping at success {GOAL} there; wall-time cap "
        f"{cap:g} s), then flown on PyBullet"
    )
    with demo.out.progress("train", steps, "speed", "screen") as update:
        run = train_quad(
            card,
            folder,
            steps,
            cap,
            progress=lambda done, s, screen: update(
                min(done, steps),
                speed=f"{done / max(s, 1e-9):,.0f} steps/s",
                screen=f"success {screen.success_rate:.2f} (numpy)" if screen else "",
            ),
        )
    for screen in run.screens:
        demo.out.say(
            f"  after {screen.seconds:5.1f} s, {screen.steps:>9,} steps: success "
            f"{screen.success_rate:.2f} on the batched backend (curve seeds)"
        )
    demo.out.say(
        f"  trained {run.steps:,} steps with {run.n_envs} drones in {run.seconds:.1f} s "
        f"({run.steps_per_s:,.0f} steps/s); kept the snapshot at {run.best.steps:,} steps"
    )
    demo.out.say(f"  training {run.stopped}", style=None if run.reached else "bold yellow")
    demo.out.made_here("quadrotor policy (ONNX and its sidecar)", run.policy)
    policy = f"onnx:{run.policy}"
    (folder / "result.json.episodes.jsonl").unlink(missing_ok=True)
    result, how, kept = evaluate_shown(demo, card, policy, folder / "result.json")
    success = result.aggregates["success_rate"]
    demo.out.say(f"  on PyBullet ({how}): success rate {success.point:.2f} "
                 f"[{success.low:.2f}, {success.high:.2f}]")  # fmt: skip
    entry = record(
        demo,
        card,
        "demo: fast_ppo trained just now",
        policy,
        result,
        folder / "result.json",
        kept,
        method=demo_method(card, run),
    )
    entry.shipped = board.zoo_method(card, "fast_ppo")
    if success.point < GOAL:
        entry.shortfall = (f"success {success.point:.2f} on PyBullet, below the goal of {GOAL}: "
                           f"training {run.stopped}")  # fmt: skip
        demo.out.say(f"  the trained policy falls short: {entry.shortfall}", style="bold yellow")


def step_verify(demo: Demo) -> None:
    if demo.verifier is None:
        demo.verifier = board.Verifier(demo.factory)
    ran = demo.verifier.finish()
    demo.out.say(f"  {counted(len(ran), 'verification job')} ran (each a limited child "
                 "process re-running the card's protocol on the ONNX policy with onnxruntime "
                 "only)")  # fmt: skip
    for entry in demo.entries:
        level = board.verification(demo.factory, entry.stored.result_id)
        if entry.job is None:
            why = None if level == "verified" else "no ONNX policy to verify"
        else:
            state, why = board.job_outcome(demo.factory, entry.job)
            why = None if level == "verified" else why or f"job {state}"
        entry.why_not = why
        demo.out.say(f"  {entry.card.id} result #{entry.stored.result_id}: {level}"
                     + (f" ({why})" if why else ""))  # fmt: skip


def step_summary(demo: Demo) -> None:
    from rlbench_suite.demo.summary import summary_rows

    rows, notes = summary_rows(demo.factory, demo.entries)
    demo.out.table(
        "The demo's results on the leaderboard",
        ["env", "baseline", "IQM normalized score [95% CI]", "over", "verified"],
        rows,
    )
    for note in notes:
        demo.out.say(note)
    total, verified = board.counts(demo.factory)
    demo.out.say(
        f"every evaluation ran its card's full protocol; IQM over the method's runs "
        f"on the leaderboard (a shipped baseline: the zoo's seeds with this evaluation), "
        f"over one run's episodes when it has one (the policy trained just now is a method "
        f"of its own); database: {total} results, {verified} verified"
    )


def run_demo(options: DemoOptions, console: Console) -> Demo:
    """Run every step (module doc); raises DemoError or DemoInterrupted naming the step."""
    total = len(STEPS) if options.serve else len(STEPS) - 1
    demo = Demo(options, Reporter(console, total))
    sock = bind(options.host, options.port, demo.out) if options.serve else None
    try:
        with demo.out.watch_interrupts():
            import_pybullet()  # its banner would land among the steps' output
            demo.out.say(
                f"rlbench demo: everything it makes goes under {options.data_dir}", style="bold"
            )
            steps = [step_database, step_baselines, step_dataset, step_quad, step_verify,
                     step_summary]  # fmt: skip
            for number, (title, step) in enumerate(zip(STEPS, steps, strict=False), start=1):
                with demo.out.step(number, title):
                    step(demo)
        if sock is not None:
            with demo.out.step(total, STEPS[-1]):
                serve(demo, sock)
    finally:
        if sock is not None:
            sock.close()
    return demo


def serve(demo: Demo, sock: socket.socket) -> None:
    """The site and API on ``sock`` until Ctrl-C (uvicorn, as ``rlbench leaderboard serve``)."""
    import uvicorn

    from rlbench_suite.leaderboard.app import create_app

    host, port = sock.getsockname()[:2]
    server = uvicorn.Server(uvicorn.Config(create_app(demo.factory), log_level="warning"))
    sock.listen(128)  # a visit as soon as the URL is printed waits for uvicorn, not refused
    demo.out.say(f"  the leaderboard site: http://{host}:{port}/ (API docs at /api/docs); "
                 "Ctrl-C stops it", style="bold")  # fmt: skip
    with contextlib.suppress(KeyboardInterrupt):  # uvicorn re-raises the signal it handled
        server.run(sockets=[sock])
    demo.out.say("  stopped serving; the database stays, serve it again with `rlbench "
                 f"leaderboard serve --db {demo.url}`")  # fmt: skip
