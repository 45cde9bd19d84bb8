"""The submission rate limit is one budget per token across server processes: counted in
the database, on SQLite and PostgreSQL, by two app instances and by two uvicorn processes."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from fastapi import HTTPException
from fastapi.testclient import TestClient

from rlbench_suite.leaderboard.app import create_app
from rlbench_suite.leaderboard.limits import Limits, SubmissionRate
from rlbench_suite.leaderboard.startup import prepare_database
from rlbench_suite.leaderboard.tokens import create_token
from tests.leaderboard_support import leaderboard_cards, live_server

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def database(db_url):
    """A migrated database with CartPole's card and tokens ``alice`` and ``bob``."""
    cards, spec_hash = leaderboard_cards(("rlbench/CartPole-v1",))
    factory = prepare_database(db_url, cards, spec_hash)
    with factory.begin() as session:
        tokens = {name: create_token(session, name) for name in ("alice", "bob")}
    yield db_url, factory, {name: (row.id, value) for name, (row, value) in tokens.items()}
    factory.kw["bind"].dispose()


def post(client, token: str):
    return client.post("/api/results", content=b"[]", headers={"Authorization": f"Bearer {token}"})


def test_two_app_instances_share_one_budget_per_token(database):
    _, factory, tokens = database
    limits = Limits(submissions_per_minute=6)
    first, second = TestClient(create_app(factory, limits)), TestClient(create_app(factory, limits))
    alice, bob = tokens["alice"][1], tokens["bob"][1]
    statuses = [post(first if i % 2 else second, alice).status_code for i in range(9)]
    assert statuses == [422] * 6 + [429] * 3  # 422: "[]" is no Result, but it was counted
    refused = post(first, alice)
    assert "at most 6 submissions per minute per token" in refused.json()["detail"]
    assert 1 <= int(refused.headers["retry-after"]) <= 61
    assert post(second, bob).status_code == 422  # another token has its own budget


def test_the_window_moves(database):
    _, factory, tokens = database
    now = [1000.0]
    rate = SubmissionRate(2, factory, window_s=60, clock=lambda: now[0])
    token_id = tokens["alice"][0]
    rate.check(token_id)
    now[0] += 30
    rate.check(token_id)
    now[0] += 1
    with pytest.raises(HTTPException) as refused:
        rate.check(token_id)
    assert refused.value.status_code == 429 and refused.value.headers["Retry-After"] == "30"
    now[0] += 29.5  # the first hit has left the window; the second has not
    rate.check(token_id)
    with pytest.raises(HTTPException):
        rate.check(token_id)


SERVER = """
import sys, uvicorn
from rlbench_suite.leaderboard.app import create_app
from rlbench_suite.leaderboard.db import make_engine, session_factory
from rlbench_suite.leaderboard.limits import Limits
url, port = sys.argv[1], int(sys.argv[2])
app = create_app(session_factory(make_engine(url)), Limits(submissions_per_minute=10))
uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
"""


async def _burst(bases: list[str], token: str, n: int) -> list[int]:
    async def one(i: int) -> int:
        async with httpx.AsyncClient(timeout=60) as http:
            response = await http.post(
                f"{bases[i % len(bases)]}/api/results",
                content=b"[]",
                headers={"Authorization": f"Bearer {token}"},
            )
            return response.status_code

    return list(await asyncio.gather(*(one(i) for i in range(n))))


def test_two_server_processes_enforce_one_budget_under_concurrency(database):
    url, _, tokens = database
    with live_server(url, SERVER) as (first, _), live_server(url, SERVER) as (second, _):
        statuses = asyncio.run(_burst([first, second], tokens["alice"][1], 30))
    assert sorted(statuses) == [422] * 10 + [429] * 20
