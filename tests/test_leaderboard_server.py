"""The real server (uvicorn on 127.0.0.1) on SQLite and PostgreSQL: concurrent submissions
are each stored exactly once, and a server killed mid-submission loses none it acknowledged."""

from __future__ import annotations

import asyncio
import json
import signal

import httpx
import pytest
from sqlalchemy import create_engine, select

from rlbench_suite.leaderboard.db import normalize_url
from rlbench_suite.leaderboard.models import Result
from rlbench_suite.leaderboard.startup import prepare_database
from rlbench_suite.leaderboard.tokens import create_token
from tests.leaderboard_support import live_server, with_returns

pytestmark = pytest.mark.slow


def variants(path, n: int) -> list[bytes]:
    """``n`` distinct valid Results: one real result, each with its own first return (a copy
    differing only in bookkeeping, such as its command line, is the same run, stored once)."""
    data = json.loads(path.read_text())
    first, bodies = data["returns"][0], []
    for i in range(n):
        data["provenance"]["command"] = ["rlbench", "eval", "--run", str(i)]
        with_returns(data, [first + i, *data["returns"][1:]])
        bodies.append(json.dumps(data).encode())
    return bodies


def token_for(db_url: str) -> str:
    factory = prepare_database(db_url)
    with factory.begin() as session:
        _, value = create_token(session, "load")
    factory.kw["bind"].dispose()
    return value


def stored_ids(db_url: str) -> list[int]:
    engine = create_engine(normalize_url(db_url))
    with engine.connect() as connection:
        ids = list(connection.scalars(select(Result.id)))
    engine.dispose()
    return ids


async def post_all(
    base: str, token: str, bodies: list[bytes], killed: bool = False
) -> list[httpx.Response | None]:
    # a fresh connection per request: a kept-alive one can be closed by the server's idle
    # timeout just as the next POST goes out, which no client may safely retry
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as client:

        async def post(body: bytes) -> httpx.Response | None:
            try:
                return await client.post(
                    "/api/results", content=body, headers={"Authorization": f"Bearer {token}"}
                )
            except httpx.TransportError as exc:
                return None if killed else pytest.fail(f"{type(exc).__name__}: {exc}")

        return await asyncio.gather(*(post(b) for b in bodies))


def test_200_concurrent_submissions_are_each_stored_exactly_once(db_url, random_results):
    token = token_for(db_url)
    bodies = variants(random_results[0], 200)
    with live_server(db_url) as (base, _):
        # every result twice, all at once: 200 new rows, the second of each pair finds the first
        responses = asyncio.run(post_all(base, token, bodies + bodies))
    failed = [
        r if r is None else (r.status_code, r.text[:200])
        for r in responses
        if r is None or r.status_code not in (200, 201)
    ]
    assert failed == []
    ids = [r.json()["id"] for r in responses]
    assert ids[:200] == ids[200:]  # a pair got one id
    assert len(set(ids)) == 200
    assert sorted(r.json()["created"] for r in responses).count(True) == 200
    assert sorted(stored_ids(db_url)) == sorted(set(ids))


def test_a_killed_server_loses_no_acknowledged_submission(db_url, random_results):
    token = token_for(db_url)
    bodies = variants(random_results[1], 120)

    async def submit_and_kill(base: str, process) -> list[httpx.Response | None]:
        task = asyncio.create_task(post_all(base, token, bodies, killed=True))
        while True:  # kill the server once part of the submissions are in
            await asyncio.sleep(0.05)
            if len(stored_ids(db_url)) >= 20 or task.done():
                break
        process.send_signal(signal.SIGKILL)
        return await task

    with live_server(db_url) as (base, process):
        responses = asyncio.run(submit_and_kill(base, process))
    acknowledged = {r.json()["id"] for r in responses if r is not None and r.status_code == 201}
    assert acknowledged, "the server was killed before acknowledging anything"
    assert acknowledged <= set(stored_ids(db_url))


def test_rlbench_submit_of_an_onnx_policy_produces_a_verified_row(db_url, tmp_path):
    from rlbench_suite.leaderboard.worker import run_pending
    from tests.conftest import run_cli
    from tests.leaderboard_support import REPO

    token = token_for(db_url)
    result = REPO / "baselines/results/CartPole-v1/ppo/seed-1/result.json"
    policy = REPO / "baselines/policies/CartPole-v1/ppo/seed-1/policy.onnx"
    with live_server(db_url) as (base, _):
        no_token = {"RLBENCH_LEADERBOARD_TOKEN": "", "XDG_CONFIG_HOME": str(tmp_path)}
        refused = run_cli("submit", str(result), "--server", base, env=no_token)
        assert refused.returncode == 2
        assert "no token: set RLBENCH_LEADERBOARD_TOKEN" in refused.stderr
        done = run_cli(
            "submit",
            str(result),
            "--policy",
            str(policy),
            "--server",
            base,
            env={"RLBENCH_LEADERBOARD_TOKEN": token},
        )
        assert done.returncode == 0, done.stderr
        assert f"result stored (self-reported): {base}/results/" in done.stdout
        assert "queued for verification" in done.stdout
        factory = prepare_database(db_url)
        assert [state for _, state in run_pending(factory)] == ["done"]
        factory.kw["bind"].dispose()
        rows = httpx.get(f"{base}/api/results", params={"env": "rlbench/CartPole-v1"}).json()
    # the re-evaluation reproduced the submitted result: that one row is verified, the
    # server's re-run kept as its evidence rather than listed beside it
    submitted = int(done.stdout.split(f"{base}/results/")[1].split()[0])
    assert [(r["id"], r["verification"], r["method"]) for r in rows] == [
        (submitted, "verified", "zoo-ppo")]  # fmt: skip
