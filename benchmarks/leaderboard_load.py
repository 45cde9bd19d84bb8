"""The leaderboard under load: a database of realistic results, a live server, 50 clients.

:func:`synthetic_results` makes Result JSONs shaped like the zoo's (one real zoo result per
environment is the template: its protocol, seeds, lengths and successes, with returns
drawn between the card's random and expert levels per method and seed), spread over many
methods, families, budgets and training seeds; :func:`fill` stores them through the
leaderboard's own store (``accept_result``, as ``POST /api/results`` does).
:class:`LiveServer` serves a database with uvicorn on 127.0.0.1 in a child process;
:class:`LatencyLoad` sends requests from 50 concurrent clients (``wrk``, or httpx where wrk is
missing) and keeps each request's latency.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness import Timed

REPO = Path(__file__).resolve().parents[1]
FAMILIES = ("policy-gradient", "off-policy actor-critic", "value-based", "model-based", "evolution")
BUDGETS = (100_352, 1_000_000, 5_000_000, None)
CLIENTS = 50


def _templates() -> dict[str, dict[str, Any]]:
    """One committed zoo result per environment (the first by path)."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(REPO.glob("baselines/results/**/result.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        found.setdefault(doc["env_id"], doc)
    return found


def _with_returns(template: dict[str, Any], returns: np.ndarray) -> dict[str, Any]:
    """A copy of ``template`` with these returns and the figures computed from them (the
    server refuses a result whose figures disagree with its own episodes)."""
    from rlbench_suite.core.offline_cards import resolve_card
    from rlbench_suite.core.summary import with_figures

    doc = json.loads(json.dumps(template))
    doc["returns"] = [float(r) for r in returns]
    return with_figures(resolve_card(doc["env_id"]), doc)


def synthetic_results(total: int, seed: int = 0) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """``total`` (method, family, Result JSON) triples: methods cover most environments,
    each with 1-16 training seeds; returns sit between the env's lowest and highest
    template return according to the method's skill, with per-seed and per-episode noise."""
    rng = np.random.default_rng(seed)
    templates = _templates()
    envs = sorted(templates)
    made, m = 0, 0
    while made < total:
        method = f"method-{m:03d}"
        family = FAMILIES[m % len(FAMILIES)]
        budget = BUDGETS[m % len(BUDGETS)]
        skill = rng.uniform(0.2, 1.0)
        for env_id in envs:
            if made >= total or rng.random() > 0.6:
                continue
            template = templates[env_id]
            base = np.asarray(template["returns"], dtype=float)
            low, high = float(base.min()), float(base.max())
            for s in range(int(rng.integers(1, 17))):
                if made >= total:
                    break
                level = np.clip(skill + rng.normal(0, 0.1), 0, 1)
                noise = rng.normal(0, 0.05 * (abs(high - low) + 1), len(base))
                returns = np.clip(base * level + noise, min(low, 0.0), max(high, 0.0))
                doc = _with_returns(template, returns)
                doc["training_budget_steps"] = budget
                doc["policy"] = {
                    **doc["policy"],
                    "name": f"{method}/seed-{s}",
                    "kind": "onnx",
                    "spec": f"onnx:{method}-{s}.onnx",
                    "artifact_sha256": hashlib.sha256(
                        f"{method}/{env_id}/{s}".encode()
                    ).hexdigest(),
                    "training_budget_steps": budget,
                }
                made += 1
                yield method, family, doc
        m += 1


def fill(url: str, total: int, batch: int = 200, progress: Any = None) -> dict[str, int]:
    """A migrated, synced database at ``url`` holding ``total`` synthetic results, stored
    through ``accept_result``; returns how many results each environment got."""
    import rlbench_suite  # noqa: F401  (registers the cards)
    from rlbench_suite.leaderboard.catalog_sync import board_cards
    from rlbench_suite.leaderboard.startup import prepare_database
    from rlbench_suite.leaderboard.store import accept_result, method_named
    from rlbench_suite.registry import spec_hash

    factory = prepare_database(url, board_cards(), spec_hash)
    per_env: dict[str, int] = {}
    items = list(synthetic_results(total))
    for start in range(0, len(items), batch):
        with factory.begin() as session:
            for method, family, doc in items[start : start + batch]:
                method_named(session, method, family=family)
                stored = accept_result(session, doc, method_name=method)
                if not stored.created:
                    raise RuntimeError(f"synthetic result of {method} stored twice")
                per_env[doc["env_id"]] = per_env.get(doc["env_id"], 0) + 1
        if progress is not None:
            progress(min(start + batch, len(items)), len(items))
    factory.kw["bind"].dispose()
    return per_env


SERVER = """
import sys, uvicorn
from rlbench_suite.leaderboard.app import create_app
from rlbench_suite.leaderboard.db import make_engine, session_factory
url, port = sys.argv[1], int(sys.argv[2])
app = create_app(session_factory(make_engine(url)))
uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LiveServer:
    """``uvicorn`` serving the (already filled) database at ``url`` on 127.0.0.1."""

    def __init__(self, url: str) -> None:
        import httpx

        port = free_port()
        self.base = f"http://127.0.0.1:{port}"
        self.process = subprocess.Popen(
            [sys.executable, "-c", SERVER, url, str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        deadline = time.monotonic() + 120
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited: {self.process.stderr.read()[-2000:]}")
            with contextlib.suppress(httpx.TransportError):
                httpx.get(f"{self.base}/api/envs", timeout=5)
                return
            if time.monotonic() > deadline:
                self.close()
                raise RuntimeError("the server did not answer within 120 s")
            time.sleep(0.2)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)


WRK_SCRIPT = """
-- after the run: the whole latency histogram (microseconds, count) and the counts, as JSON
done = function(summary, latency, requests)
  local buckets = {}
  for i = 1, #latency do
    local value, count = latency(i)
    buckets[#buckets + 1] = string.format("[%d,%d]", value, count)
  end
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {"requests":%d,"duration_us":%d,"errors":%d,"histogram":[%s]}\\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout + e.status,
    table.concat(buckets, ",")))
end
"""


def wrk_path() -> str | None:
    """The ``wrk`` load generator on PATH, or None (the httpx clients are used instead)."""
    return shutil.which("wrk")


class LatencyLoad:
    """GETs of ``path`` from :data:`CLIENTS` concurrent clients, each its own connection
    sending requests back to back (a closed loop), with every request's latency kept across
    calls but the first call's (the harness's warm-up, on a cold cache), kept apart.

    The clients are ``wrk`` (native, one thread; a Lua ``done()`` hands back its whole
    latency histogram) where it is on PATH: each call runs it for ``round_s`` seconds.
    Otherwise, ``n`` requests per call from httpx AsyncClients in this process, whose own
    CPU time on a small machine shows up in the latencies."""

    def __init__(self, server: LiveServer, path: str, label: str, round_s: int = 3) -> None:
        self.server, self.path, self.label, self.round_s = server, path, label, round_s
        self.wrk = wrk_path()
        self.latencies: list[float] = []  # the httpx clients' (seconds)
        self.histogram: dict[int, int] = {}  # wrk's (microseconds: requests)
        self.warmup_requests = 0
        self.first_ms: float | None = None
        self.warmup_p99_ms: float | None = None
        self.errors = 0
        self.calls = self.requests = 0

    @property
    def generator(self) -> str:
        if self.wrk:
            return (
                f"wrk, 1 thread, {CLIENTS} connections, {self.round_s} s per round; its latency "
                "histogram is corrected for coordinated omission (a response slower than a "
                "connection's mean interval also counts the requests it held back)"
            )
        return f"{CLIENTS} httpx AsyncClients in the benchmark's process (wrk not on PATH)"

    async def _httpx(self, n: int) -> float:
        import httpx

        queue = list(range(n))

        async def client() -> None:
            async with httpx.AsyncClient(base_url=self.server.base, timeout=60) as http:
                while queue:
                    queue.pop()
                    start = time.perf_counter()
                    response = await http.get(self.path)
                    self.latencies.append(time.perf_counter() - start)
                    if response.status_code != 200:
                        self.errors += 1

        start = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(CLIENTS)))
        return time.perf_counter() - start

    def _run_wrk(self, seconds: int) -> Timed:
        with tempfile.NamedTemporaryFile("w", suffix=".lua") as script:
            script.write(WRK_SCRIPT)
            script.flush()
            command = [str(self.wrk), "-t1", f"-c{CLIENTS}", f"-d{seconds}s", "--timeout", "60s",
                       "-s", script.name, self.server.base + self.path]  # fmt: skip
            out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        line = next(x for x in out.splitlines() if x.startswith("WRK_JSON "))
        doc = json.loads(line.removeprefix("WRK_JSON "))
        self.errors += doc["errors"]
        for value, count in doc["histogram"]:
            self.histogram[value] = self.histogram.get(value, 0) + count
        return Timed(doc["requests"], doc["duration_us"] / 1e6)

    def _first_get_ms(self) -> float:
        import httpx

        start = time.perf_counter()
        response = httpx.get(self.server.base + self.path, timeout=300)
        response.raise_for_status()
        return round((time.perf_counter() - start) * 1000, 2)

    def __call__(self, n: int) -> Timed:
        self.calls += 1
        if self.calls == 1:  # the route's first request, alone (on a cold cache)
            self.first_ms = self._first_get_ms()
        wrk = self.wrk is not None
        done = self._run_wrk(self.round_s) if wrk else Timed(n, asyncio.run(self._httpx(n)))
        if self.calls == 1:
            self.warmup_requests = done.units
            self.warmup_p99_ms = self._percentiles_ms()[1]
            self.latencies, self.histogram = [], {}
        else:
            self.requests += done.units
        return done

    def _samples_ms(self) -> np.ndarray:
        if self.wrk:
            values = np.fromiter(self.histogram, dtype=float)
            return np.repeat(values / 1000, list(self.histogram.values()))
        return np.asarray(self.latencies) * 1000

    def _percentiles_ms(self) -> tuple[float | None, float | None, float | None]:
        ms = self._samples_ms()
        if ms.size == 0:
            return None, None, None
        p50, p99 = np.percentile(ms, [50, 99])
        return round(float(p50), 2), round(float(p99), 2), round(float(ms.max()), 2)

    def describe(self) -> str:
        return f"GET {self.path} ({self.label}), {CLIENTS} concurrent clients"

    def stats(self) -> dict[str, Any]:
        p50, p99, top = self._percentiles_ms()
        return {
            "generator": self.generator,
            "requests": self.requests,
            "latency_samples": int(self._samples_ms().size),
            "errors": self.errors,
            "p50_ms": p50,
            "p99_ms": p99,
            "max_ms": top,
            "warmup_requests": self.warmup_requests,
            "warmup_p99_ms": self.warmup_p99_ms,
            "first_request_ms": self.first_ms,
        }
