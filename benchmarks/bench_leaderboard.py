"""The leaderboard's speed goals (issue 15), on a live server.

``leaderboard_latency``: with 10,000 results in the database (``--quick``: 150), generated
by :mod:`benchmarks.leaderboard_load` across the suite's zoo environments and about 90
methods and stored through the leaderboard's store, uvicorn serves the database on
127.0.0.1 in a child process and 50 concurrent clients send GETs back to back (a closed
loop): the environment page with the most results, and ``GET /api/results``. The clients are
``wrk`` (native, one thread, 3 s per round; ``--quick``: 1 s) where it is on PATH, else httpx
AsyncClients in this process (which then measures its own CPU time too); the detail's
``generator`` says which. The same on SQLite and on PostgreSQL (a throwaway cluster like the
tests'; skipped with a message where it cannot start). A round's rate is requests per second
(wall clock), and each variant's detail has the p50 and p99 latency of every request it sent
after the warm-up round (whose p99 is kept apart, as is the time of the route's very first
request, sent alone on a cold cache); goal: p99 under 100 ms on SQLite.
Rows: each route against a static file served by the same server to the same clients
(``/static/style.css``: no database, no template, but Starlette's ``StaticFiles`` stats and
reads the file in the thread pool at each request, where the cached routes answer from
memory), and PostgreSQL against SQLite.

``leaderboard_verify``: the verification worker's re-evaluation of an ONNX policy
(``worker.evaluate_submission``: a child process under the worker's limits, the card's
protocol) against ``rlbench eval ENV --policy onnx:FILE --workers 1`` as a child process, the
zoo's CartPole-v1 PPO policy (seed 0) on the card's evaluation episodes. Both play the same
episodes (the detail records each one's returns' sum). Goal: the worker at most 1.2x.

Run with the CPU burn so the machine's state is measured in the same run:
``--only leaderboard_latency leaderboard_verify cpu_burn --json
benchmarks/results/leaderboard.json``.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from rich.console import Console

from benchmarks.harness import Case, Comparison, Settings, Variant, benchmark
from benchmarks.leaderboard_load import REPO, LatencyLoad, LiveServer, fill

P99_GOAL_MS = 100.0
CARTPOLE = "rlbench/CartPole-v1"
POLICY = REPO / "baselines/policies/CartPole-v1/ppo/seed-0/policy.onnx"
console = Console(stderr=True)


class _Backend:
    """A filled database and its server, shared by the variants that use it."""

    def __init__(self, name: str, total: int) -> None:
        self.name, self.total, self.users = name, total, 0
        self.stack = contextlib.ExitStack()
        self.server: LiveServer | None = None
        self.busiest = ""

    def open(self) -> LiveServer:
        if self.server is None:
            url = self.stack.enter_context(_database(self.name))
            console.print(f"leaderboard: storing {self.total:,} results in {self.name} ...")
            counts = fill(url, self.total)
            self.busiest = max(counts, key=lambda env: counts[env])
            self.server = LiveServer(url)
            self.stack.callback(self.server.close)
        self.users += 1
        return self.server

    def release(self) -> None:
        self.users -= 1
        if self.users == 0:
            self.stack.close()
            self.server = None


@contextlib.contextmanager
def _database(backend: str):
    if backend == "SQLite":
        with tempfile.TemporaryDirectory(prefix="bench-lb-") as folder:
            yield f"sqlite:///{folder}/leaderboard.sqlite"
        return
    from tests.leaderboard_support import create_database, postgres_cluster

    with postgres_cluster() as server:
        yield create_database(server, "bench_" + uuid.uuid4().hex[:8])


def postgres_problem() -> str | None:
    """Why PostgreSQL cannot run here, or None."""
    from tests.leaderboard_support import PostgresUnavailable, postgres_cluster

    try:
        with postgres_cluster():
            return None
    except (PostgresUnavailable, RuntimeError, OSError, subprocess.SubprocessError) as exc:
        return str(exc).splitlines()[0]


class _Page(LatencyLoad):
    def __init__(self, backend: _Backend, page: str, round_s: int) -> None:
        self.backend = backend
        server = backend.open()
        path = {
            "env page": f"/envs/{backend.busiest}",
            "GET /api/results": "/api/results",
            "static file": "/static/style.css",
        }[page]
        super().__init__(server, path, backend.name, round_s)

    def stats(self) -> dict[str, Any]:
        stats = super().stats()
        return {
            **stats,
            "results_in_db": self.backend.total,
            "p99_goal_ms": P99_GOAL_MS,
            "p99_goal_met": stats["p99_ms"] is not None and stats["p99_ms"] < P99_GOAL_MS,
        }

    def close(self) -> None:
        self.backend.release()


@benchmark("leaderboard_latency")
def leaderboard_latency(settings: Settings) -> list[Case]:
    """Environment page and GET /api/results at 50 clients: SQLite beside PostgreSQL."""
    total = 150 if settings.quick else 10_000
    names = ["SQLite"]
    problem = postgres_problem()
    if problem is None:
        names.append("PostgreSQL")
    else:
        console.print(f"leaderboard_latency: PostgreSQL skipped: {problem}")
    backends = {name: _Backend(name, total) for name in names}
    round_s = 1 if settings.quick else 3  # per round, where wrk sends the requests
    variants = [
        Variant(f"{name} {page}", lambda b=backends[name], p=page: _Page(b, p, round_s))
        for name in names
        for page in ("env page", "GET /api/results")
    ]
    # the floor of this machine, server and client: a static file from the same server
    variants.append(
        Variant("SQLite static file", lambda: _Page(backends["SQLite"], "static file", round_s))
    )
    comparisons = [
        Comparison("SQLite env page", "SQLite static file"),
        Comparison("SQLite GET /api/results", "SQLite static file"),
    ]
    if "PostgreSQL" in names:
        comparisons += [
            Comparison(f"PostgreSQL {page}", f"SQLite {page}")
            for page in ("env page", "GET /api/results")
        ]
    return [
        Case(
            env=f"{total:,} results, 50 clients",
            variants=variants,
            comparisons=comparisons,
            work_per_round=400 if not settings.quick else 250,
            unit="requests",
            rounds=8 if not settings.quick else 2,
            clock="wall",
        )
    ]


class _Evaluation:
    """One whole evaluation of the CartPole policy per call, by the worker or the CLI."""

    def __init__(self, worker: bool) -> None:
        self.worker = worker
        self.folder = Path(tempfile.mkdtemp(prefix="bench-verify-"))
        self.sums: list[float] = []

    def __call__(self, n: int) -> int:
        for _ in range(n):
            self.sums.append(sum(self._evaluate()["returns"]))
        return n

    def _evaluate(self) -> dict[str, Any]:
        if self.worker:
            from rlbench_suite.leaderboard.worker import WorkerLimits, evaluate_submission

            meta = {"method": "bench", "training_budget_steps": 100_000}
            data, error = evaluate_submission(POLICY.read_bytes(), CARTPOLE, meta, WorkerLimits())
            if data is None:
                raise RuntimeError(f"the worker's evaluation failed: {error}")
            return data
        out = self.folder / f"result-{len(self.sums)}.json"  # eval resumes an existing one
        command = [sys.executable, "-m", "rlbench_suite.cli", "eval", CARTPOLE,
                   "--policy", f"onnx:{POLICY}", "--workers", "1", "--out", str(out)]  # fmt: skip
        subprocess.run(command, check=True, capture_output=True, cwd=self.folder)
        return json.loads(out.read_text())

    def describe(self) -> str:
        how = "worker.evaluate_submission" if self.worker else "rlbench eval --workers 1"
        return f"{how} of {POLICY.relative_to(REPO)} on {CARTPOLE}"

    def stats(self) -> dict[str, Any]:
        return {"returns_sum": sorted(set(self.sums)), "evaluations": len(self.sums)}


@benchmark("leaderboard_verify")
def leaderboard_verify(settings: Settings) -> list[Case]:
    """The worker's ONNX re-evaluation beside `rlbench eval` of the same ONNX."""
    return [
        Case(
            env="CartPole-v1 PPO (ONNX)",
            variants=[
                Variant("worker re-evaluation", lambda: _Evaluation(worker=True)),
                Variant("rlbench eval", lambda: _Evaluation(worker=False)),
            ],
            comparisons=[Comparison("worker re-evaluation", "rlbench eval", goal=1.2)],
            work_per_round=1,
            unit="evaluations",
            rounds=5 if not settings.quick else 1,
            clock="wall",
            warmup=not settings.quick,
        )
    ]
