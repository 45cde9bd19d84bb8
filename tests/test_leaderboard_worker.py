"""Verification: a submitted ONNX policy re-evaluated by the harness in a limited child
process, stored as verified; loops and starved processes stopped and reported; the queue
(rows) survives a worker that dies."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from sqlalchemy import select

from rlbench_suite.leaderboard import views
from rlbench_suite.leaderboard.models import Result, Submission, VerificationJob
from rlbench_suite.leaderboard.worker import (
    LOST,
    WorkerLimits,
    claim_next,
    requeue_stale,
    run_job,
    run_pending,
)
from tests.leaderboard_support import REPO, list_all_results, make_onnx, with_returns

ZOO_ONNX = REPO / "baselines/policies/CartPole-v1/ppo/seed-0/policy.onnx"
ZOO_RESULT = REPO / "baselines/results/CartPole-v1/ppo/seed-0/result.json"


def submit(client, token: str, content: bytes, method: str = "zoo-ppo") -> dict:
    metadata = {
        "env_id": "rlbench/CartPole-v1",
        "method": method,
        "training_budget_steps": 100096,
        "train_seeds": list(range(8)),
    }
    done = client.post(
        "/api/submissions",
        headers={"Authorization": f"Bearer {token}"},
        files={"policy": ("policy.onnx", content)},
        data={"metadata": json.dumps(metadata)},
    )
    assert done.status_code == 202, done.text
    return done.json()


def test_a_submitted_onnx_policy_is_verified_and_ranked(app_client):
    client, factory, alice, _ = app_client
    # a self-reported result of the same policy that the re-evaluation will not reproduce
    forged = json.loads(ZOO_RESULT.read_text())
    with_returns(forged, [forged["returns"][0] - 1.0, *forged["returns"][1:]])
    posted = client.post("/api/results", json=forged, headers={"Authorization": f"Bearer {alice}"})
    assert posted.status_code == 201, posted.text
    job = submit(client, alice, ZOO_ONNX.read_bytes())
    assert run_pending(factory) == [(job["job"], "done")]
    status = client.get(job["url"]).json()["job"]
    assert status["state"] == "done" and status["error"] is None
    with factory() as session:
        row = session.get(Result, status["result"])
        assert row.verification == "verified" and row.method.name == "zoo-ppo"
        assert row.artifact_sha256 == job["artifact_sha256"]
        assert row.document["policy"]["kind"] == "onnx"
        assert row.training_budget_steps == 100096
    # the same policy, the same seeds: the re-evaluation agrees with the self-reported result
    self_reported = json.loads(ZOO_RESULT.read_text())
    assert row.document["returns"] == self_reported["returns"]
    # its provenance names a command a user can run on the artifact, not the worker's files
    command = row.document["provenance"]["command"]
    assert command == ["rlbench", "eval", "rlbench/CartPole-v1", "--policy",
                       f"onnx:{job['artifact_sha256']}.onnx", "--workers", "1"]  # fmt: skip
    shown = client.get(f"/results/{status['result']}").text
    assert f"<code>{' '.join(command)}</code>" in shown and "rlbench-verify-" not in shown
    # the zoo's self-reported result of this policy is reproduced exactly: it is verified and
    # the re-run is its evidence, not a second listed row; the altered one is not reproduced:
    # it stays self-reported beside the re-run, with the difference
    with factory() as session:
        levels = {r.id: (r.verification, r.verifies_result_id) for r in session.scalars(
            select(Result).where(Result.artifact_sha256 == job["artifact_sha256"]))}  # fmt: skip
    altered = posted.json()["id"]
    zoo = next(i for i, (_, link) in levels.items() if i not in (altered, row.id))
    assert levels == {zoo: ("verified", None), altered: ("self-reported", None),
                      row.id: ("verified", zoo)}  # fmt: skip
    assert status["verifies"] == zoo
    assert f'policy artifact of <a href="/results/{zoo}">result #{zoo}</a>' in shown
    # users see one row for the verification: the zoo's, verified, with the evidence on its page
    listed = client.get("/").text.split("Newest verified results")[1].split("Newest results")[0]
    assert f'href="/results/{zoo}"' in listed and f'href="/results/{row.id}"' not in listed
    ids = {r["id"] for r in list_all_results(client)}
    assert {zoo, altered} <= ids and row.id not in ids
    page = client.get(f"/results/{zoo}").text
    assert f'<a href="/results/{row.id}">re-run #{row.id}</a>): verified' in page
    assert f"<dt>server's re-run score</dt><dd>{row.score:.1f}</dd>" in page
    assert "<dt>difference</dt><dd>0.0 (normalized score (0 random, 100 expert))</dd>" in page
    assert "<dt>tolerance</dt><dd>exact: the protocol fixes the seed of every episode" in page
    assert f"<dt>re-run command</dt><dd><code>{' '.join(command)}</code></dd>" in page
    assert f"<dt>verified</dt><dd>{row.created_at:%Y-%m-%d %H:%M}" in page
    differences = client.get(job["url"]).json()["disagreements"][str(altered)]
    assert differences[0].startswith("episode 0 (seed 1000000): (return, length, success)")
    # the altered result's page says so, with the server's re-run beside it
    page = client.get(f"/results/{altered}").text
    assert "did <strong>not</strong> reproduce this result" in page
    assert f'<a href="/results/{row.id}">#{row.id}</a>' in page and "<h2>Verification" not in page
    ranking = client.get("/api/envs/rlbench/CartPole-v1/ranking").json()
    ppo = next(r for r in ranking["rows"] if r["method"] == "zoo-ppo")
    assert ppo["runs"] == 5 and ppo["verified_runs"] == 1  # one run per artifact, verified first
    assert zoo in ppo["result_ids"] and row.id not in ppo["result_ids"]
    verified = client.get("/envs/rlbench/CartPole-v1", params={"verification": "verified"})
    assert "zoo-ppo" in verified.text and "1/1" in verified.text


def test_a_policy_is_ranked_under_one_method_and_refusals_leave_no_method(app_client):
    """The zoo's CartPole policy submitted again as another method is refused, naming the
    method it belongs to (before, it was verified, flipped the zoo's row to verified, and
    the new method was missing from the ranking); refused and repeated submissions create no
    method."""
    client, factory, alice, _ = app_client
    auth = {"Authorization": f"Bearer {alice}"}
    metadata = {"env_id": "rlbench/CartPole-v1", "method": "my-copy", "train_seeds": [0]}
    refused = client.post(
        "/api/submissions",
        headers=auth,
        files={"policy": ("policy.onnx", ZOO_ONNX.read_bytes())},
        data={"metadata": json.dumps(metadata)},
    )
    assert refused.status_code == 422
    assert "under method 'zoo-ppo'" in refused.json()["detail"]
    assert "submit it as 'zoo-ppo'" in refused.json()["detail"]
    # the same through a self-reported result under another method
    zoo = json.loads(ZOO_RESULT.read_text())
    with_returns(zoo, [zoo["returns"][0] - 1.0, *zoo["returns"][1:]])  # the same artifact
    posted = client.post("/api/results", json=zoo, headers=auth, params={"method": "my-copy"})
    assert posted.status_code == 422 and "under method 'zoo-ppo'" in posted.json()["detail"]
    # the zoo's own result again under a new method name: the stored row, no new method
    again = client.post(
        "/api/results", json=json.loads(ZOO_RESULT.read_text()), headers=auth,
        params={"method": "my-repeat"},
    )  # fmt: skip
    assert again.status_code == 200 and again.json()["created"] is False
    names = {m["name"] for m in client.get("/api/methods").json()}
    assert "zoo-ppo" in names and not {"my-copy", "my-repeat"} & names
    with factory() as session:
        rows = session.scalars(select(Result).where(Result.verification == "verified")).all()
        assert rows == []  # nothing was flipped
    # under its own method the policy is verified, and so is the zoo's row
    job = submit(client, alice, ZOO_ONNX.read_bytes(), method="zoo-ppo")
    assert run_pending(factory) == [(job["job"], "done")]
    with factory() as session:
        methods = {r.method.name for r in session.scalars(
            select(Result).where(Result.artifact_sha256 == job["artifact_sha256"]))}  # fmt: skip
    assert methods == {"zoo-ppo"}


def test_import_with_verify_queues_the_shipped_policy_and_the_worker_verifies_the_row(db_url):
    """``rlbench leaderboard import --verify`` (and ``serve --verify-zoo``): the zoo's result
    is re-evaluated from its shipped ONNX file and becomes verified; importing again queues
    nothing more."""
    from rlbench_suite.leaderboard.importer import import_files
    from rlbench_suite.leaderboard.startup import prepare_database
    from tests.leaderboard_support import leaderboard_cards

    cards, spec_hash = leaderboard_cards(("rlbench/CartPole-v1",))
    factory = prepare_database(db_url, cards, spec_hash)
    report = import_files(factory, [ZOO_RESULT], verify=True)
    assert report.added == report.queued == [str(ZOO_RESULT)] and report.refused == []
    with factory() as session:
        job = session.scalars(select(VerificationJob)).one()
        submission = session.get(Submission, job.submission_id)
        assert job.state == "queued" and submission.method.name == "zoo-ppo"
    assert run_pending(factory) == [(job.id, "done")]
    with factory() as session:
        rows = session.scalars(select(Result).order_by(Result.id)).all()
        imported, verification = rows
        assert imported.verification == verification.verification == "verified"
        assert verification.document["returns"] == imported.document["returns"]
        # one verification that agrees is one result: the imported row, the re-run its evidence
        assert (imported.verifies_result_id, verification.verifies_result_id) == (None, imported.id)
        assert views.counts(session)["results"] == views.counts(session)["verified"] == 1
        listed, total = views.list_results(session)
        assert [r["id"] for r in listed] == [imported.id] and total == 1
        ranked = views.env_ranking(session, "rlbench/CartPole-v1", views.Filters())["rows"]
        assert [(r["runs"], r["verified_runs"], r["result_ids"]) for r in ranked] == [
            (1, 1, [imported.id])]  # fmt: skip
    again = import_files(factory, [ZOO_RESULT], verify=True)
    assert again.existing == [str(ZOO_RESULT)] and again.queued == []
    factory.kw["bind"].dispose()


def test_a_looping_policy_is_stopped_by_the_cpu_limit_and_the_server_keeps_serving(app_client):
    client, factory, alice, _ = app_client
    job = submit(client, alice, make_onnx(loop=True), method="spinner")
    limits = WorkerLimits(cpu_s=3, wall_s=120)
    assert run_pending(factory, limits) == [(job["job"], "failed")]
    status = client.get(job["url"]).json()["job"]
    assert status["error"] == "stopped: CPU-time limit of 3 s exceeded"
    assert client.get("/").status_code == 200
    with factory() as session:
        assert session.scalar(select(Result).where(Result.verification == "verified")) is None


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        (WorkerLimits(wall_s=0.2), "stopped: wall-time limit of 0.2 s exceeded"),
        (WorkerLimits(memory_bytes=64 * 1024**2), "memory limit of 0.0625 GiB"),
    ],
)
def test_wall_time_and_memory_limits(app_client, limits, message):
    client, factory, alice, _ = app_client
    job = submit(client, alice, make_onnx(), method="tiny")
    assert run_pending(factory, limits) == [(job["job"], "failed")]
    assert message in client.get(job["url"]).json()["job"]["error"]


def test_the_queue_survives_a_worker_that_dies(app_client):
    client, factory, alice, _ = app_client
    job = submit(client, alice, make_onnx(), method="tiny")
    assert claim_next(factory, "dead") == job["job"]  # claimed, then the worker "dies"
    assert claim_next(factory, "other") is None  # a running job is not claimed twice
    assert requeue_stale(factory, dt.timedelta(hours=1)) == 0  # not stale yet
    assert requeue_stale(factory, dt.timedelta(0)) == 1
    with factory() as session:
        row = session.get(VerificationJob, job["job"])
        assert (row.state, row.attempts) == ("queued", 1)
    assert run_pending(factory) == [(job["job"], "done")]
    with factory() as session:
        assert session.get(VerificationJob, job["job"]).attempts == 2


def age(factory, job_id: int, **fields: dt.timedelta) -> None:
    """Move a job's ``started_at`` / ``heartbeat_at`` that far into the past."""
    with factory.begin() as session:
        job = session.get(VerificationJob, job_id)
        for name, ago in fields.items():
            setattr(job, name, getattr(job, name) - ago)


def test_a_long_job_whose_worker_beats_is_not_queued_again(app_client):
    """The review: a job running longer than twice the *new* worker's ``--wall-s`` was
    queued again while its worker was alive, so two workers ran it. Only a stale heartbeat
    frees a job now, however long it has run."""
    client, factory, alice, _ = app_client
    job = submit(client, alice, make_onnx(), method="tiny")["job"]
    assert claim_next(factory, "slow") == job
    age(factory, job, started_at=dt.timedelta(days=1))  # long running, heartbeat fresh
    assert requeue_stale(factory) == 0
    assert run_pending(factory, WorkerLimits(wall_s=1.0)) == []  # a new worker leaves it
    age(factory, job, heartbeat_at=dt.timedelta(minutes=2))  # its worker stopped beating
    assert requeue_stale(factory) == 1
    with factory() as session:
        row = session.get(VerificationJob, job)
        assert (row.state, row.claimed_by, row.heartbeat_at) == ("queued", None, None)


def test_the_heartbeat_keeps_a_running_job_its_workers(app_client):
    """While the child evaluates (a looping policy, about 3 s of CPU), the worker stamps the
    job every 0.2 s: a watcher requeueing after 1.5 s without a beat never takes it."""
    import threading

    client, factory, alice, _ = app_client
    job = submit(client, alice, make_onnx(loop=True), method="spinner")["job"]
    assert claim_next(factory, "beating") == job
    finished: list[str] = []
    runner = threading.Thread(
        target=lambda: finished.append(
            run_job(factory, job, WorkerLimits(cpu_s=3, wall_s=120), "beating", heartbeat_s=0.2)
        )
    )
    runner.start()
    requeued = 0
    while runner.is_alive():
        requeued += requeue_stale(factory, dt.timedelta(seconds=1.5))
        runner.join(0.3)
    assert requeued == 0 and finished == ["failed"]
    with factory() as session:
        row = session.get(VerificationJob, job)
        assert row.heartbeat_at - row.started_at > dt.timedelta(seconds=1.5)  # it beat
        assert row.error == "stopped: CPU-time limit of 3 s exceeded"


def test_a_worker_that_lost_its_job_stores_nothing(app_client, caplog):
    """A worker whose heartbeat went stale (paused, cut off from the database) finishes its
    job after another worker re-ran it: it stores no second verified row and says why."""
    client, factory, alice, _ = app_client
    job = submit(client, alice, make_onnx(), method="tiny")["job"]
    assert claim_next(factory, "paused") == job
    age(factory, job, heartbeat_at=dt.timedelta(minutes=5))
    assert run_pending(factory, owner="second") == [(job, "done")]  # requeued, re-run
    with caplog.at_level("WARNING", logger="rlbench_suite.leaderboard.worker"):
        assert run_job(factory, job, WorkerLimits(), "paused") == LOST
    assert f"verification job {job} is no longer worker paused's" in caplog.text
    with factory() as session:
        rows = session.scalars(select(Result).where(Result.verification == "verified")).all()
        row = session.get(VerificationJob, job)
        assert len(rows) == 1 and (row.state, row.claimed_by) == ("done", "second")
        assert row.result_id == rows[0].id


def test_a_worker_whose_job_is_taken_over_stops_its_evaluation_early(app_client, caplog):
    """A looping policy under a 300 s CPU limit: once another worker takes the job (its
    heartbeat was stale), the first worker's next beat finds it gone and kills the child at
    once, instead of running it to the limit before noticing; it stores nothing."""
    import threading

    from sqlalchemy import update

    client, factory, alice, _ = app_client
    job = submit(client, alice, make_onnx(loop=True), method="spinner")["job"]
    assert claim_next(factory, "first") == job
    limits = WorkerLimits(cpu_s=300, wall_s=300)
    finished: list[str] = []
    runner = threading.Thread(
        target=lambda: finished.append(run_job(factory, job, limits, "first", heartbeat_s=0.2))
    )
    with caplog.at_level("WARNING", logger="rlbench_suite.leaderboard.worker"):
        runner.start()
        runner.join(1.0)  # the child is evaluating, the worker beating
        assert runner.is_alive()
        with factory.begin() as session:  # requeued and claimed by another worker
            session.execute(update(VerificationJob).where(VerificationJob.id == job)
                            .values(claimed_by="second"))  # fmt: skip
        runner.join(120)  # far less than the 300 s the child would loop for
    assert not runner.is_alive() and finished == [LOST]
    assert f"verification job {job} was taken from worker first" in caplog.text
    assert "its evaluation was stopped early, nothing stored" in caplog.text
    with factory() as session:
        row = session.get(VerificationJob, job)
        assert (row.state, row.claimed_by, row.result_id, row.error) == (
            "running", "second", None, None)  # fmt: skip
        assert session.scalar(select(Result).where(Result.method.has(name="spinner"))) is None


def test_a_policy_that_acts_through_the_suites_wrappers_is_verified(app_client):
    """The zoo's TextMaze policy acts through AdmissibleActions and HashedBagOfWords (its
    sidecar's ``wrappers``): submitted with them, the worker plays it through the same stack
    and reproduces the zoo's result; a wrapper name outside the suite's is refused."""
    from fastapi.testclient import TestClient

    from rlbench_suite.leaderboard.app import create_app
    from rlbench_suite.leaderboard.limits import Limits

    _, factory, alice, _ = app_client
    client = TestClient(create_app(factory, Limits(policy_bytes=1024**2)))  # a 289 kB policy
    folder = REPO / "baselines/policies/TextMaze-v0/maskable_ppo/seed-0"
    sidecar = json.loads((folder / "policy.onnx.meta.json").read_text())
    metadata = {"env_id": "rlbench/TextMaze-v0", "method": "zoo-maskable_ppo",
                "training_budget_steps": sidecar["training_budget_steps"],
                "train_seeds": sidecar["train_seeds"], "wrappers": sidecar["wrappers"]}  # fmt: skip
    headers = {"Authorization": f"Bearer {alice}"}
    policy = {"policy": ("policy.onnx", (folder / "policy.onnx").read_bytes())}
    done = client.post("/api/submissions", headers=headers, files=policy,
                       data={"metadata": json.dumps(metadata)})  # fmt: skip
    assert done.status_code == 202, done.text
    assert run_pending(factory) == [(done.json()["job"], "done")]
    status = client.get(done.json()["url"]).json()["job"]
    expected = json.loads(
        (REPO / "baselines/results/TextMaze-v0/maskable_ppo/seed-0/result.json").read_text()
    )
    with factory() as session:
        row = session.get(Result, status["result"])
        assert row.verification == "verified"
        assert row.document["returns"] == expected["returns"]
    hostile = {**metadata, "wrappers": [{"name": "evil:Module", "kwargs": {}}]}
    refused = client.post("/api/submissions", headers=headers, files=policy,
                          data={"metadata": json.dumps(hostile)})  # fmt: skip
    assert refused.status_code == 422
    assert "unknown wrapper 'evil:Module'; accepted:" in refused.text
    assert "rlbench/AdmissibleActions-v1" in refused.text
    forged = {**metadata, "wrappers": [*sidecar["wrappers"],
                                       {"name": "rlbench/EpisodeStatistics-v0", "kwargs": {}}]}
    refused = client.post("/api/submissions", headers=headers, files=policy,
                          data={"metadata": json.dumps(forged)})  # fmt: skip
    assert refused.status_code == 422, refused.text
    assert "may not include rlbench/EpisodeStatistics-v0" in refused.text


def test_a_policy_submitted_twice_under_two_methods_is_refused_before_it_is_verified(app_client):
    """The review's race: the same new ONNX posted as race-m1 then race-m2 got two verified
    rows, and race-m2's never showed in the ranking."""
    client, _, alice, _ = app_client
    content = make_onnx()
    submit(client, alice, content, method="race-m1")
    metadata = {"env_id": "rlbench/CartPole-v1", "method": "race-m2", "train_seeds": [0]}
    second = client.post(
        "/api/submissions",
        headers={"Authorization": f"Bearer {alice}"},
        files={"policy": ("policy.onnx", content)},
        data={"metadata": json.dumps(metadata)},
    )
    assert second.status_code == 422
    assert "already submitted on rlbench/CartPole-v1 under method 'race-m1'" in second.text


def test_seeding_again_replaces_a_retrained_zoo_seed_and_its_verification(db_url, tmp_path):
    """The review restarted serve after Wordle's zoo was retrained: the old three seeds
    stayed beside the new ones (6 runs, IQM 46.5 [0.5, 96]). Seeding (replace=True) deletes
    what a new file of the same method, env and policy name supersedes."""
    from rlbench_suite.leaderboard.importer import import_files
    from rlbench_suite.leaderboard.startup import prepare_database
    from tests.leaderboard_support import leaderboard_cards

    cards, spec_hash = leaderboard_cards(("rlbench/CartPole-v1",))
    factory = prepare_database(db_url, cards, spec_hash)
    assert import_files(factory, [ZOO_RESULT], verify=True, replace=True).added
    assert run_pending(factory)[0][1] == "done"  # the old artifact's verification row too
    retrained = json.loads(ZOO_RESULT.read_text())
    retrained["policy"]["artifact_sha256"] = "ab" * 32  # the same seed, trained again
    with_returns(retrained, [retrained["returns"][0] - 1.0, *retrained["returns"][1:]])
    path = tmp_path / "result.json"
    path.write_text(json.dumps(retrained))
    report = import_files(factory, [path], replace=True)
    assert report.added == [str(path)] and report.superseded == 2
    with factory() as session:
        rows = session.scalars(select(Result)).all()
        assert [r.artifact_sha256 for r in rows] == ["ab" * 32]
        assert session.scalars(select(VerificationJob)).one().result_id is None
    factory.kw["bind"].dispose()
