"""Cached per-run scores and cached rankings, on SQLite and PostgreSQL: the migration that
adds them backfills existing rows, rankings read from them equal rankings computed from the
stored Result JSON, and every change to the ranked data (in this session, another engine or
a bulk statement) is seen at the next request."""

from __future__ import annotations

import asyncio
import json
import re
import threading

import pytest
from sqlalchemy import MetaData, event, select, update

from rlbench_suite.core.scoring import primary_values
from rlbench_suite.core.summary import normalized_values
from rlbench_suite.leaderboard import ranking, views
from rlbench_suite.leaderboard.catalog_sync import _row_values, sync_catalog
from rlbench_suite.leaderboard.db import make_engine, session_factory
from rlbench_suite.leaderboard.migrate import current_revision, head_revision, upgrade
from rlbench_suite.leaderboard.models import Environment, Method, Result
from rlbench_suite.leaderboard.queries import env_card
from rlbench_suite.leaderboard.response_cache import ResponseCache, SharedRead
from rlbench_suite.leaderboard.scores import success_scale
from rlbench_suite.leaderboard.store import (
    accept_result,
    default_method_name,
    document_hash,
    parse_result,
)
from tests.leaderboard_support import (
    ZOO_ENVS,
    ZOO_RESULTS,
    leaderboard_cards,
    list_all_results,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def document_scores(card, document):
    """A stored Result's per-episode scores recomputed from its document: normalized, or the
    primary metric's own values on a card without both references (Hopper's, until it has
    them)."""
    returns, successes = document["returns"], document["successes"]
    scores = normalized_values(card, returns, successes)
    return scores if scores is not None else primary_values(card.primary_metric, returns, successes)


def runs_from_documents(session, env: Environment) -> list[ranking.Run]:
    """The ranking's runs as computed before scores were cached: from each Result JSON."""
    card = env_card(env)
    query = (
        select(Result, Method.name, Method.family)
        .join(Method, Result.method_id == Method.id)
        .where(Result.env_id == env.id, Result.protocol_hash == env.protocol_hash)
        .order_by(Result.id)
    )
    runs = []
    for row, method, family in session.execute(query):
        scores = document_scores(card, row.document)
        runs.append(
            ranking.Run(
                row.id,
                row.env_id,
                method,
                float(scores.mean()),
                tuple(float(v) for v in scores),
                family,
                row.training_budget_steps,
                row.verification,
                row.artifact_sha256,
            )
        )
    return runs


def rankings_from_documents(factory) -> dict[str, list[dict]]:
    with factory() as session:
        envs = session.scalars(select(Environment).order_by(Environment.id)).all()
        return {
            e.id: [views.row_dict(r) for r in ranking.rank_env(
                runs_from_documents(session, e), success_scale(env_card(e)))]
            for e in envs
        }


def rankings_served(factory, filters: views.Filters | None = None) -> dict[str, list[dict]]:
    with factory() as session:
        ids = session.scalars(select(Environment.id).order_by(Environment.id)).all()
        return {i: views.env_ranking(session, i, filters or views.Filters())["rows"] for i in ids}


def test_rankings_from_cached_scores_equal_rankings_from_the_result_json(seeded):
    expected = rankings_from_documents(seeded)
    assert sum(len(rows) for rows in expected.values()) >= 20
    assert rankings_served(seeded) == expected
    assert rankings_served(seeded) == expected  # the second time from the cache
    with seeded() as session:
        for row in session.scalars(select(Result)):
            assert row.score is not None and len(row.episode_scores) == row.episodes
            assert row.budget_class == ranking.budget_class(row.training_budget_steps)


def insert_at_old_head(engine) -> int:
    """The zoo's results stored in a database at revision 0001, as that schema stored them."""
    meta = MetaData()
    meta.reflect(engine)
    envs, methods, results = (meta.tables[t] for t in ("environments", "methods", "results"))
    assert "score" not in results.c and "ranking_generation" not in envs.c
    cards, spec_hash = leaderboard_cards(ZOO_ENVS)
    method_ids: dict[str, int] = {}
    with engine.begin() as connection:
        for card in cards:
            connection.execute(
                envs.insert().values(id=card.id, **_row_values(card, spec_hash(card)))
            )
        for path in ZOO_RESULTS:
            doc = parse_result(json.loads(path.read_text()))
            name = default_method_name(doc.policy)
            if name not in method_ids:
                inserted = connection.execute(
                    methods.insert().values(name=name, family="policy-gradient", created_at=_now())
                )
                method_ids[name] = inserted.inserted_primary_key[0]
            card = next(c for c in cards if c.id == doc.env_id)
            values = primary_values(card.primary_metric, doc.returns, doc.successes)
            connection.execute(
                results.insert().values(
                    document_sha256=document_hash(doc),
                    env_id=doc.env_id,
                    spec_hash=doc.spec_hash,
                    protocol_hash=doc.protocol_hash,
                    artifact_sha256=doc.policy.get("artifact_sha256"),
                    training_budget_steps=doc.training_budget_steps,
                    verification="self-reported",
                    method_id=method_ids[name],
                    policy_name=doc.policy["name"],
                    episodes=len(doc.returns),
                    return_mean=sum(doc.returns) / len(doc.returns),
                    primary_mean=float(values.mean()),
                    created_at=_now(),
                    document=doc.model_dump(mode="json"),
                )
            )
    return len(ZOO_RESULTS)


def _now():
    from rlbench_suite.leaderboard.models import utcnow

    return utcnow()


def test_the_migration_backfills_scores_of_existing_rows(db_url):
    engine = make_engine(db_url)
    assert upgrade(engine, "0001") == "0001"
    stored = insert_at_old_head(engine)
    factory = session_factory(engine)
    assert upgrade(engine) == head_revision() == current_revision(engine) != "0001"
    with factory() as session:
        rows = session.scalars(select(Result)).all()
        assert len(rows) == stored >= 20
        for row in rows:
            card = env_card(session.get(Environment, row.env_id))
            scores = document_scores(card, row.document)
            assert row.episode_scores == pytest.approx(list(scores), abs=0, rel=0)
            assert row.score == float(scores.mean())
            assert row.budget_class == ranking.budget_class(row.training_budget_steps)
        assert {e.ranking_generation for e in session.scalars(select(Environment))} == {0}
    assert rankings_served(factory) == rankings_from_documents(factory)
    engine.dispose()


def test_a_stored_result_shows_at_the_next_request(seeded, random_results):
    cartpole = "rlbench/CartPole-v1"
    with seeded() as session:
        before = views.env_ranking(session, cartpole, views.Filters())["rows"]
    assert before and "late" not in [r["method"] for r in before]
    with seeded.begin() as session:
        session.execute(update(Result).where(Result.env_id == cartpole).values(verification="x"))
    with seeded() as session:  # a bulk UPDATE: the cached ranking is dropped
        assert (
            views.env_ranking(session, cartpole, views.Filters())["rows"][0]["verified_runs"] == 0
        )
    doc = json.loads(random_results[0].read_text())
    with seeded.begin() as session:
        accept_result(
            session, {**doc, "policy": {**doc["policy"], "name": "late-run"}}, method_name="late"
        )
    with seeded() as session:
        after = views.env_ranking(session, cartpole, views.Filters())["rows"]
    assert "late" in [r["method"] for r in after]


def test_a_change_by_another_engine_is_seen(db_url, random_results):
    """Two server processes on one database: each caches, neither serves the other's stale
    ranking (the generations live in the database)."""
    cards, spec_hash = leaderboard_cards(ZOO_ENVS)
    first, second = make_engine(db_url), make_engine(db_url)
    upgrade(first)
    a, b = session_factory(first), session_factory(second)
    with a.begin() as session:
        sync_catalog(session, cards, spec_hash)
    acrobot = "rlbench/Acrobot-v1"
    with b() as session:
        assert views.env_ranking(session, acrobot, views.Filters())["rows"] == []
    with a.begin() as session:
        accept_result(session, json.loads(random_results[1].read_text()))
        method = session.scalar(select(Method).where(Method.name == "random"))
        method.family = "baseline"  # an edit through the ORM
    with b() as session:
        rows = views.env_ranking(session, acrobot, views.Filters(family="baseline"))["rows"]
        assert [r["method"] for r in rows] == ["random"]
        suite = views.suite_ranking(session, "classic-control", views.Filters())
        assert "random" in [r["method"] for r in suite["incomplete"]]
    first.dispose()
    second.dispose()


def test_new_card_references_rescore_stored_results(seeded):
    cards, spec_hash = leaderboard_cards(ZOO_ENVS)
    cartpole = next(c for c in cards if c.id == "rlbench/CartPole-v1")
    low, high = cartpole.reference_values()
    expert = cartpole.reference.expert.model_copy(update={"value": high * 2})
    moved = cartpole.model_copy(
        update={"reference": cartpole.reference.model_copy(update={"expert": expert})}
    )
    assert moved.reference_values() == (low, high * 2)
    with seeded() as session:
        old = views.env_ranking(session, cartpole.id, views.Filters())["rows"][0]["iqm"]["point"]
    with seeded.begin() as session:
        sync_catalog(session, [moved if c.id == cartpole.id else c for c in cards], spec_hash)
    with seeded() as session:
        new = views.env_ranking(session, cartpole.id, views.Filters())["rows"][0]["iqm"]["point"]
    # the same returns on the new scale: score' = score * (high - low) / (2 high - low)
    assert new == pytest.approx(old * (high - low) / (2 * high - low))


def test_listing_results_never_reads_the_result_json(app_client):
    client, factory, _, _ = app_client
    statements: list[str] = []
    engine = factory.kw["bind"]

    def record(_conn, _cursor, statement, *_args) -> None:
        statements.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        listed = list_all_results(client)
        page = client.get("/envs/rlbench/CartPole-v1")
    finally:
        event.remove(engine, "before_cursor_execute", record)
    assert len(listed) == len(ZOO_RESULTS) and page.status_code == 200
    reads = [s for s in statements if "FROM results" in s]
    assert reads and not [s for s in reads if re.search(r"results\.document\b", s)]


def test_cached_responses_follow_every_change(app_client, random_results):
    """Whole GET responses are served from the cache until a change, then computed again."""
    client, factory, alice, _ = app_client
    cache = client.app.middleware_stack  # built on the first request
    client.get("/api/results")
    while not isinstance(cache, ResponseCache):
        cache = cache.app
    first = client.get("/api/results?limit=500")
    page = client.get("/envs/rlbench/CartPole-v1").text
    hits = cache.hits
    assert client.get("/api/results?limit=500").json() == first.json()
    assert client.get("/envs/rlbench/CartPole-v1").text == page
    assert cache.hits == hits + 2
    doc = json.loads(random_results[0].read_text())
    posted = client.post(
        "/api/results?method=late-arrival", json=doc, headers={"Authorization": f"Bearer {alice}"}
    )
    assert posted.status_code == 201
    after = client.get("/api/results?limit=500")
    total = int(first.headers["x-total-count"])
    assert int(after.headers["x-total-count"]) == total + 1
    assert after.json()[0]["method"] == "late-arrival"
    assert "late-arrival" in client.get("/envs/rlbench/CartPole-v1").text
    with factory.begin() as session:  # an edit through the ORM, outside the server
        method = session.scalar(select(Method).where(Method.name == "late-arrival"))
        method.family = "evolution-strategies"
    assert "evolution-strategies" in client.get("/envs/rlbench/CartPole-v1").text


def test_a_shared_generation_read_is_never_older_than_its_caller():
    """Callers that arrive while a read runs share the next read, which starts after they
    arrived: they see a change committed before they called, and 3 callers cost 2 reads."""
    value, release = {"generation": 1}, threading.Event()

    def read() -> int:
        seen = value["generation"]
        release.wait(10)
        return seen

    shared = SharedRead(read)

    async def scenario() -> list[int]:
        first = asyncio.ensure_future(shared())
        while shared.reads == 0:
            await asyncio.sleep(0.001)
        await asyncio.sleep(0.05)  # the first read has seen generation 1 and waits
        value["generation"] = 2  # a change committed while it runs
        later = [asyncio.ensure_future(shared()) for _ in range(2)]
        await asyncio.sleep(0.01)
        release.set()
        return await asyncio.gather(first, *later)

    assert asyncio.run(scenario()) == [1, 2, 2]
    assert shared.reads == 2
