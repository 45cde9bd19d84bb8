"""The leaderboard's integrity under concurrency and repetition, on SQLite and PostgreSQL:
one run posted at once by many threads is stored once; the same policy submitted again
while its job is queued, running or done is not queued twice; a token's queue is capped; a
self-reported result posted after its artifact was verified is compared at once."""

from __future__ import annotations

import json
import re
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
    key on its first row only; a verified re-run gets none) and its downgrade drops it, also
    with verification jobs pointing at results (SQLite's copy of ``results`` was refused by
    their foreign keys)."""
    from sqlalchemy import MetaData, Table, insert

    from rlbench_suite.leaderboard.migrate import (
        current_revision,
        head_revision,
        migrate_to,
        upgrade,
    )
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
    assert upgrade(engine) == current_revision(engine) == head_revision()  # through 0003
    with cartpole() as session:
        rows = session.scalars(select(Result).order_by(Result.id)).all()
        keys = [r.run_sha256 for r in rows]
        expected = [run_sha256(r.method_id, r.document) for r in rows[:2]]
    assert keys == [*expected, None, None] and expected[0] != expected[1]
    with cartpole.begin() as session:  # the re-run is a verification job's result
        session.add(VerificationJob(submission_id=policy, state="done", result_id=rows[3].id))
    assert migrate_to(engine, "0002", downgrade=True) == "0002"
    with engine.connect() as connection:
        assert "run_sha256" not in Table("results", MetaData(), autoload_with=connection).c
        jobs = Table("verification_jobs", MetaData(), autoload_with=connection)
        assert not {"claimed_by", "heartbeat_at"} & set(jobs.c.keys())
        assert connection.execute(select(jobs.c.result_id)).scalars().all() == [rows[3].id]
        assert connection.scalar(select(func.count()).select_from(Table(
            "results", MetaData(), autoload_with=connection))) == 4  # fmt: skip
    upgrade(engine)


def test_migration_0004_links_the_reruns_that_verified_a_row_and_goes_back(cartpole):
    """0004 links a re-run (a job's result) to the self-reported row of its artifact that it
    verified; a re-run that verified none stays listed; 0005 dates each verified row's
    verification (a re-run's arrival; a reproduced row's or its re-run's, the later); the
    downgrades drop the columns, also with jobs pointing at results (copying ``results``,
    SQLite's way, would be refused)."""
    from sqlalchemy import MetaData, Table, insert, update

    from rlbench_suite.leaderboard.migrate import (
        current_revision,
        head_revision,
        migrate_to,
        upgrade,
    )
    from rlbench_suite.leaderboard.models import utcnow
    from tests.leaderboard_support import ZOO_RESULTS

    zoo = [p for p in ZOO_RESULTS if "CartPole-v1/ppo/seed-" in str(p)][:2]
    with cartpole.begin() as session:
        ids = [accept_result(session, json.loads(p.read_text())).result.id for p in zoo]
    engine = cartpole.kw["bind"]
    assert migrate_to(engine, "0003", downgrade=True) == "0003"
    reruns = []
    with engine.begin() as connection:  # before 0004: each zoo row re-run, the first agreeing
        tables = MetaData()
        results, submissions, jobs = (
            Table(name, tables, autoload_with=connection)
            for name in ("results", "submissions", "verification_jobs")
        )
        assert "verifies_result_id" not in results.c
        for result_id in ids:
            row = connection.execute(select(results).where(results.c.id == result_id)).one()
            row = row._asdict()
            policy = connection.execute(insert(submissions).values(
                kind="policy", method_id=row["method_id"], env_id=row["env_id"], metadata={},
                artifact_sha256=None, created_at=utcnow())).inserted_primary_key[0]  # fmt: skip
            copy = {**row, "submission_id": policy, "verification": "verified",
                    "run_sha256": None, "document_sha256": "e" * 63 + str(result_id),
                    "created_at": utcnow()}  # fmt: skip
            copy.pop("id")
            reruns.append(connection.execute(insert(results).values(**copy)).inserted_primary_key[0])
            connection.execute(insert(jobs).values(
                submission_id=policy, state="done", attempts=1, result_id=reruns[-1],
                created_at=utcnow()))  # fmt: skip
        connection.execute(
            update(results).where(results.c.id == ids[0]).values(verification="verified")
        )
    assert upgrade(engine, "0004") == current_revision(engine) == "0004"
    with engine.connect() as connection:
        results = Table("results", MetaData(), autoload_with=connection)
        assert "verified_at" not in results.c
        links = dict(connection.execute(select(results.c.id, results.c.verifies_result_id)).all())
    assert links == {ids[0]: None, ids[1]: None, reruns[0]: ids[0], reruns[1]: None}
    assert upgrade(engine) == current_revision(engine) == head_revision()  # through 0005
    with cartpole() as session:
        rows = {r.id: r for r in session.scalars(select(Result))}
    assert rows[ids[1]].verified_at is None  # self-reported
    assert [rows[r].verified_at for r in reruns] == [rows[r].created_at for r in reruns]
    assert rows[ids[0]].verified_at == rows[reruns[0]].created_at > rows[ids[0]].created_at
    assert migrate_to(engine, "0003", downgrade=True) == "0003"
    with engine.connect() as connection:
        columns = Table("results", MetaData(), autoload_with=connection).c
        assert not {"verifies_result_id", "verified_at"} & set(columns.keys())
        assert count(cartpole, VerificationJob) == 2
    assert upgrade(engine) == head_revision()


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
    # a policy verified with no self-reported result is one listed, verified row: its re-run
    listed = client.get("/api/results").json()
    assert [(r["id"], r["verification"]) for r in listed] == [(done["result"], "verified")]


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


ZOO = "CartPole-v1/ppo/seed-0"


def zoo_claim(altered: bool = False) -> dict:
    """The zoo's self-reported CartPole result (its first return lowered when ``altered``)."""
    from tests.leaderboard_support import REPO, with_returns

    claimed = json.loads((REPO / "baselines/results" / ZOO / "result.json").read_text())
    if altered:
        with_returns(claimed, [claimed["returns"][0] - 1.0, *claimed["returns"][1:]])
    return claimed


def verify_zoo_policy(client, factory, headers) -> dict:
    """Submit the zoo's CartPole ONNX and run the worker: the submission's answer."""
    from tests.leaderboard_support import REPO

    policy = (REPO / "baselines/policies" / ZOO / "policy.onnx").read_bytes()
    job = post_policy(client, headers, policy, "zoo-ppo").json()
    assert run_pending(factory) == [(job["job"], "done")]
    return job


@pytest.mark.parametrize("order", ["self-reported first", "re-run first"])
def test_an_agreeing_verification_is_one_listed_row_with_its_evidence(site, order):
    """The issue: a self-reported result whose artifact is re-run and agrees is marked
    verified; users see that one row (lists, counts, rankings, method pages), its page shows
    the re-run's score, the difference, the tolerance, the re-run's command and when; the
    re-run is kept as the evidence, whichever of the two came first."""
    client, factory, headers = site
    if order == "self-reported first":
        posted = client.post("/api/results", json=zoo_claim(), headers=headers)
        job = verify_zoo_policy(client, factory, headers)
    else:
        job = verify_zoo_policy(client, factory, headers)
        posted = client.post("/api/results", json=zoo_claim(), headers=headers)
    assert posted.status_code == 201, posted.text
    status = client.get(job["url"]).json()
    mine, rerun = posted.json()["id"], status["job"]["result"]
    assert status["job"]["verifies"] == mine and rerun != mine and status["disagreements"] == {}
    assert client.get(f"/api/results/{mine}").json()["verification"] == "verified"
    assert client.get(f"/api/results/{rerun}").json()["verifies_result_id"] == mine
    listed = client.get("/api/results")
    assert [r["id"] for r in listed.json()] == [mine] and listed.headers["X-Total-Count"] == "1"
    home = client.get("/").text
    assert "1 result (1 verified)" in home and f'href="/results/{mine}"' in home
    assert f'href="/results/{rerun}"' not in home
    method = client.get("/methods/zoo-ppo").text
    assert f'href="/results/{mine}"' in method and f'href="/results/{rerun}"' not in method
    indexed = client.get("/methods").text  # results, verified, environments
    assert re.search(r'>zoo-ppo</a></td><td>[^<]*</td><td>1</td><td>1</td><td>1</td>', indexed)
    ranking = client.get("/api/envs/rlbench/CartPole-v1/ranking").json()["rows"]
    assert [(r["runs"], r["verified_runs"], r["result_ids"]) for r in ranking] == [(1, 1, [mine])]
    with factory() as session:
        again = session.get(Result, rerun)
        command = " ".join(again.document["provenance"]["command"])
        score, at = again.score, session.get(Result, mine).verified_at
        assert at >= max(again.created_at, session.get(Result, mine).created_at)
    page = client.get(f"/results/{mine}").text
    assert "<strong>verified</strong>" in page
    assert f'(<a href="/results/{rerun}">re-run #{rerun}</a>): verified' in page
    assert f"<dt>server's re-run score</dt><dd>{score:.1f}</dd>" in page
    assert f"<dt>self-reported score</dt><dd>{score:.1f}</dd>" in page
    assert "<dt>difference</dt><dd>0.0 (normalized score (0 random, 100 expert))</dd>" in page
    assert "<dt>tolerance</dt><dd>exact: the protocol fixes the seed of every episode" in page
    assert f"<dt>re-run command</dt><dd><code>{command}</code></dd>" in page
    artifact = zoo_claim()["policy"]["artifact_sha256"]
    assert command == f"rlbench eval rlbench/CartPole-v1 --policy onnx:{artifact}.onnx --workers 1"
    assert f"<dt>verified</dt><dd>{at:%Y-%m-%d %H:%M:%S} UTC</dd>" in page
    evidence = client.get(f"/results/{rerun}").text
    assert f'policy artifact of <a href="/results/{mine}">result #{mine}</a>' in evidence


def test_newest_verified_results_go_by_when_they_were_verified(site):
    """A self-reported result verified after another policy's re-run is the newest verified
    result, on the home page and in the API, though its row is older (lists went by id)."""
    client, factory, headers = site
    mine = client.post("/api/results", json=zoo_claim(), headers=headers).json()["id"]
    other = post_policy(client, headers, onnx_variant(0)).json()
    assert run_pending(factory) == [(other["job"], "done")]
    other_rerun = client.get(other["url"]).json()["job"]["result"]
    assert other_rerun > mine
    verify_zoo_policy(client, factory, headers)
    listed = client.get("/api/results?verification=verified").json()
    assert [r["id"] for r in listed] == [mine, other_rerun]
    assert listed[0]["verified_at"] > listed[1]["verified_at"] > listed[0]["created_at"]
    home = client.get("/").text
    newest = home[home.index("<h2>Newest verified results</h2>") : home.index("<h2>Newest results")]
    assert re.findall(r'href="/results/(\d+)"', newest) == [str(mine), str(other_rerun)]
    assert f"verified {listed[0]['verified_at'][:16].replace('T', ' ')}" in newest
    from rlbench_suite.leaderboard.reconcile import evidence

    with factory() as session:  # the evidence's time is the row's verification
        row = session.get(Result, mine)
        shown = evidence(session, row).verified_at
        assert shown.replace(tzinfo=None) == row.verified_at.replace(tzinfo=None)


def test_a_disagreeing_verification_shows_both_rows_with_the_difference(site):
    """A re-run that does not reproduce the self-reported result: both are listed, the
    self-reported one stays self-reported with the differences, and the ranking counts the
    policy once (its verified re-run)."""
    client, factory, headers = site
    posted = client.post("/api/results", json=zoo_claim(altered=True), headers=headers)
    status = client.get(verify_zoo_policy(client, factory, headers)["url"]).json()
    mine, rerun = posted.json()["id"], status["job"]["result"]
    assert status["job"]["verifies"] is None
    assert status["disagreements"][str(mine)][0].startswith("episode 0 (seed 1000000)")
    listed = {r["id"]: r["verification"] for r in client.get("/api/results").json()}
    assert listed == {mine: "self-reported", rerun: "verified"}
    assert "2 results (1 verified)" in client.get("/").text
    page = client.get(f"/results/{mine}").text
    assert "did <strong>not</strong> reproduce this result" in page
    assert f'<a href="/results/{rerun}">#{rerun}</a>' in page and "episode 0 (seed 1000000)" in page
    ranking = client.get("/api/envs/rlbench/CartPole-v1/ranking").json()["rows"]
    assert [(r["runs"], r["verified_runs"], r["result_ids"]) for r in ranking] == [(1, 1, [rerun])]


def test_a_stored_row_that_no_longer_validates_is_a_disagreement_not_a_dead_worker(site):
    """A review: a self-reported row accepted under an earlier version's looser checks (here a
    normalized score its returns do not give) made ``reconcile`` raise a ValidationError, which
    killed the worker and left the job to fail again; it is now that row's disagreement."""
    client, factory, headers = site
    posted = client.post("/api/results", json=zoo_claim(), headers=headers)
    mine = posted.json()["id"]
    with factory.begin() as session:  # as an older server stored it
        row = session.get(Result, mine)
        document = json.loads(json.dumps(row.document))
        document["aggregates"]["return_mean"]["point"] += 1.0
        row.document = document
    status = client.get(verify_zoo_policy(client, factory, headers)["url"]).json()
    assert status["disagreements"][str(mine)] == [
        "the stored result no longer validates: (result): Value error, aggregates.return_mean "
        "does not match the per-episode returns"]
    listed = {r["id"]: r["verification"] for r in client.get("/api/results").json()}
    assert listed[mine] == "self-reported" and "verified" in listed.values()
