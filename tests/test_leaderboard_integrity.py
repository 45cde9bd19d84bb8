"""The leaderboard's integrity under concurrency and repetition, on SQLite and PostgreSQL:
one run posted at once by many threads is stored once; the same policy submitted again
while its job is queued, running or done is not queued twice; a token's queue is capped; a
self-reported result posted after its artifact was verified is compared at once."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import func, select

from rlbench_suite.leaderboard.models import Result, Submission, VerificationJob
from rlbench_suite.leaderboard.startup import prepare_database
from rlbench_suite.leaderboard.store import accept_result
from rlbench_suite.leaderboard.worker import run_pending
from tests.leaderboard_support import leaderboard_cards, make_onnx

THREADS = 25


@pytest.fixture
def cartpole(db_url):
    """A migrated database with the CartPole card only."""
    cards, spec_hash = leaderboard_cards(("rlbench/CartPole-v1",))
    factory = prepare_database(db_url, cards, spec_hash)
    yield factory
    factory.kw["bind"].dispose()


def count(factory, model) -> int:
    with factory() as session:
        return session.scalar(select(func.count()).select_from(model))


def test_one_run_posted_by_many_threads_at_once_is_stored_once(cartpole, random_results):
    """The review's race: 25 threads posting the same run (differing only in provenance and
    wall time, which ``same_run`` calls the same run) got 3 rows."""
    data = json.loads(random_results[0].read_text())
    bodies = []
    for i in range(THREADS):
        copy = json.loads(json.dumps(data))
        copy["wall_time_s"] = 1.0 + i
        copy["provenance"]["command"] = ["rlbench", "eval", "--copy", str(i)]
        bodies.append(copy)
    start = threading.Barrier(THREADS)

    def post(body: dict) -> tuple[int, bool]:
        start.wait()
        with cartpole.begin() as session:
            stored = accept_result(session, body, token_id=None)
            return stored.result.id, stored.created

    with ThreadPoolExecutor(THREADS) as pool:
        outcomes = list(pool.map(post, bodies))
    assert len({result_id for result_id, _ in outcomes}) == 1
    assert [created for _, created in outcomes].count(True) == 1
    assert count(cartpole, Result) == 1
    assert count(cartpole, Submission) == 1  # the losers' submissions are not kept


def test_migration_0003_keys_the_stored_runs_once_and_goes_back(cartpole):
    """0003 fills ``run_sha256`` on self-reported rows (a run already stored twice keeps its
    key on its first row only; a verified re-run gets none) and its downgrade drops it."""
    from sqlalchemy import MetaData, Table, insert

    from rlbench_suite.leaderboard.migrate import current_revision, migrate_to, upgrade
    from rlbench_suite.leaderboard.store import run_sha256
    from tests.leaderboard_support import ZOO_RESULTS

    zoo = [p for p in ZOO_RESULTS if "CartPole-v1/ppo/seed-" in str(p)][:2]
    with cartpole.begin() as session:
        ids = [accept_result(session, json.loads(p.read_text())).result.id for p in zoo]
    engine = cartpole.kw["bind"]
    assert migrate_to(engine, "0002", downgrade=True) == "0002"
    with engine.begin() as connection:  # rows stored before 0003: a duplicate, a re-run
        tables = MetaData()
        results = Table("results", tables, autoload_with=connection)
        submissions = Table("submissions", tables, autoload_with=connection)
        assert "run_sha256" not in results.c
        first = connection.execute(select(results).where(results.c.id == ids[0])).one()._asdict()
        rerun_of = connection.execute(select(results).where(results.c.id == ids[1])).one()
        policy = connection.execute(
            insert(submissions).values(
                kind="policy",
                method_id=first["method_id"],
                env_id=first["env_id"],
                metadata={},
                created_at=first["created_at"],
            )
        ).inserted_primary_key[0]
        for source, changes in ((first, {}), (rerun_of._asdict(), {"submission_id": policy})):
            row = {**source, **changes, "document_sha256": "f" * 63 + str(len(changes))}
            row.pop("id")
            connection.execute(insert(results).values(**row))
    assert upgrade(engine) == current_revision(engine) == "0003"
    with cartpole() as session:
        rows = session.scalars(select(Result).order_by(Result.id)).all()
        keys = [r.run_sha256 for r in rows]
        expected = [run_sha256(r.method_id, r.document) for r in rows[:2]]
    assert keys == [*expected, None, None] and expected[0] != expected[1]
    assert migrate_to(engine, "0002", downgrade=True) == "0002"
    with engine.connect() as connection:
        assert "run_sha256" not in Table("results", MetaData(), autoload_with=connection).c
        jobs = Table("verification_jobs", MetaData(), autoload_with=connection)
        assert not {"claimed_by", "heartbeat_at"} & set(jobs.c.keys())
    upgrade(engine)


def onnx_variant(i: int) -> bytes:
    """The tiny CartPole policy, made a distinct artifact by its doc string."""
    import onnx

    model = onnx.load_model_from_string(make_onnx())
    model.doc_string = f"variant {i}"
    return model.SerializeToString()


@pytest.fixture
def site(cartpole):
    """A TestClient over ``cartpole`` whose token may have 2 verification jobs waiting;
    yields (client, factory, auth headers)."""
    from fastapi.testclient import TestClient

    from rlbench_suite.leaderboard.app import create_app
    from rlbench_suite.leaderboard.limits import Limits
    from rlbench_suite.leaderboard.tokens import create_token

    with cartpole.begin() as session:
        _, token = create_token(session, "alice")
    limits = Limits(policy_bytes=64 * 1024, submissions_per_minute=1000, queued_jobs_per_token=2)
    with TestClient(create_app(cartpole, limits)) as client:
        yield client, cartpole, {"Authorization": f"Bearer {token}"}


def post_policy(client, headers, content: bytes, method: str = "tiny"):
    metadata = {"env_id": "rlbench/CartPole-v1", "method": method, "train_seeds": [0]}
    return client.post(
        "/api/submissions",
        headers=headers,
        files={"policy": ("policy.onnx", content)},
        data={"metadata": json.dumps(metadata)},
    )


def test_a_tokens_waiting_jobs_are_capped_naming_the_limit_and_the_count(site):
    client, factory, headers = site
    for i in range(2):
        assert post_policy(client, headers, onnx_variant(i), f"m{i}").status_code == 202
    refused = post_policy(client, headers, onnx_variant(2), "m2")
    assert refused.status_code == 429
    assert refused.json()["detail"].startswith(
        "queue limit: at most 2 verification jobs queued or running per token, and this "
        "token has 2; submit again when some are done"
    )
    assert count(factory, VerificationJob) == 2  # the refused one left no job behind
    assert [state for _, state in run_pending(factory)] == ["done", "done"]
    assert post_policy(client, headers, onnx_variant(2), "m2").status_code == 202


def test_the_same_policy_again_answers_its_job_and_is_verified_once(site):
    """Submitted again for the same env and method while its job is queued, and after it is
    done, the policy gets that job (200, created false), not a second job and verified row."""
    client, factory, headers = site
    content = onnx_variant(0)
    first = post_policy(client, headers, content)
    assert first.status_code == 202 and first.json()["created"] is True
    again = post_policy(client, headers, content)
    assert again.status_code == 200, again.text
    assert (again.json()["job"], again.json()["created"]) == (first.json()["job"], False)
    assert run_pending(factory) == [(first.json()["job"], "done")]
    done = post_policy(client, headers, content).json()
    assert (done["job"], done["state"]) == (first.json()["job"], "done")
    with factory() as session:
        verified = session.scalars(select(Result).where(Result.verification == "verified")).all()
    assert [r.id for r in verified] == [done["result"]]
    assert count(factory, VerificationJob) == 1 and run_pending(factory) == []


def test_the_same_new_policy_submitted_by_many_threads_at_once_gets_one_job(cartpole):
    from rlbench_suite.leaderboard.artifacts import PolicyMetadata, submit_policy

    content = onnx_variant(7)
    metadata = PolicyMetadata(env_id="rlbench/CartPole-v1", method="tiny", train_seeds=[0])
    start = threading.Barrier(10)

    def submit(_: int) -> tuple[int, bool]:
        start.wait()
        with cartpole.begin() as session:
            queued = submit_policy(session, content, "policy.onnx", metadata, None)
            return queued.job.id, queued.created

    with ThreadPoolExecutor(10) as pool:
        outcomes = list(pool.map(submit, range(10)))
    assert len({job for job, _ in outcomes}) == 1
    assert [created for _, created in outcomes].count(True) == 1
    assert count(cartpole, VerificationJob) == count(cartpole, Submission) == 1


def test_a_self_reported_result_posted_after_its_verification_is_compared_at_once(site):
    """The zoo's policy is verified first; its self-reported result arrives after: the
    re-run reproduces it, so it is verified at once; an altered one is kept self-reported
    with the differences, as when the self-reported result comes first."""
    from tests.leaderboard_support import REPO, with_returns

    client, factory, headers = site
    folder = "CartPole-v1/ppo/seed-0"
    policy = (REPO / "baselines/policies" / folder / "policy.onnx").read_bytes()
    job = post_policy(client, headers, policy, "zoo-ppo").json()
    assert run_pending(factory) == [(job["job"], "done")]
    claimed = json.loads((REPO / "baselines/results" / folder / "result.json").read_text())
    same = client.post("/api/results", json=claimed, headers=headers)
    assert same.status_code == 201 and same.json()["verification"] == "verified"
    with_returns(claimed, [claimed["returns"][0] - 1.0, *claimed["returns"][1:]])
    altered = client.post("/api/results", json=claimed, headers=headers)
    assert altered.status_code == 201 and altered.json()["verification"] == "self-reported"
    status = client.get(job["url"]).json()
    differences = status["disagreements"][str(altered.json()["id"])]
    assert differences[0].startswith("episode 0 (seed 1000000): (return, length, success)")
    assert list(status["disagreements"]) == [str(altered.json()["id"])]


def test_a_transaction_postgresql_aborts_for_a_deadlock_runs_again(db_url, cartpole):
    """Two transactions locking two rows in opposite orders: PostgreSQL aborts one (40P01)
    and ``db.retried`` runs it again, so both complete."""
    if db_url.startswith("sqlite"):
        pytest.skip("SQLite has one writer: its transactions never deadlock")
    from sqlalchemy import update

    from rlbench_suite.leaderboard.db import retried
    from rlbench_suite.leaderboard.models import ApiToken, utcnow
    from rlbench_suite.leaderboard.tokens import create_token

    with cartpole.begin() as session:
        ids = [create_token(session, name)[0].id for name in ("a", "b")]
    both_hold_one = threading.Barrier(2)
    runs: list[int] = []

    def touch(session, token_id: int) -> None:
        session.execute(
            update(ApiToken).where(ApiToken.id == token_id).values(last_used_at=utcnow())
        )

    def work(first: int, second: int) -> int:
        runs.append(first)
        with cartpole.begin() as session:
            touch(session, first)
            if runs.count(first) == 1:
                both_hold_one.wait(timeout=30)
            touch(session, second)
        return first

    with ThreadPoolExecutor(2) as pool:
        done = list(pool.map(lambda pair: retried(lambda: work(*pair)), [ids, ids[::-1]]))
    assert done == ids and len(runs) == 3  # one of the two ran twice
