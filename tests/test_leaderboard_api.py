"""The leaderboard's JSON API on SQLite and PostgreSQL: submissions with tokens, limits and
checks against the card, and hostile input (bad JSON, huge bodies, forged fields, injection
strings, path tricks, custom ONNX operators)."""

from __future__ import annotations

import html
import json
import logging

import pytest
from sqlalchemy import func, select, text

from rlbench_suite.leaderboard import views
from rlbench_suite.leaderboard.models import PolicyArtifact, Result, VerificationJob
from tests.leaderboard_support import ZOO_RESULTS, list_all_results, make_onnx

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def count(factory, model) -> int:
    with factory() as session:
        return session.scalar(select(func.count()).select_from(model))


def test_a_result_is_stored_once_and_linked(app_client, random_results):
    client, factory, alice, _ = app_client
    body = random_results[0].read_bytes()
    before = count(factory, Result)
    first = client.post("/api/results", content=body, headers=bearer(alice))
    assert first.status_code == 201, first.text
    assert first.json()["created"] is True and first.json()["verification"] == "self-reported"
    again = client.post("/api/results", content=body, headers=bearer(alice))
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
    assert again.json()["created"] is False and count(factory, Result) == before + 1
    page = client.get(first.json()["url"])
    assert page.status_code == 200 and "rlbench/CartPole-v1" in page.text
    stored = client.get(f"/api/results/{first.json()['id']}").json()
    assert stored["result"]["returns"] == json.loads(body)["returns"]
    assert stored["method"] == "random"


def test_the_server_sets_the_verification_level(app_client, random_results):
    client, factory, alice, _ = app_client
    data = json.loads(random_results[1].read_text())
    data["verification"] = "verified"
    done = client.post("/api/results", json=data, headers=bearer(alice))
    assert done.status_code == 201 and done.json()["verification"] == "self-reported"
    with factory() as session:
        row = session.get(Result, done.json()["id"])
        assert row.verification == "self-reported"
        assert row.document["verification"] == "self-reported"


def test_tokens_missing_wrong_and_revoked_are_refused_and_never_echoed(
    app_client, random_results, caplog
):
    client, factory, alice, mallory = app_client
    body = random_results[0].read_bytes()
    caplog.set_level(logging.DEBUG)
    cases = [
        ({}, "missing token"),
        ({"Authorization": "Basic abc"}, "malformed Authorization header"),
        (bearer(alice + "x"), "unknown or revoked token"),
        (bearer(mallory), "unknown or revoked token"),
    ]
    for headers, message in cases:
        done = client.post("/api/results", content=body, headers=headers)
        assert done.status_code == 401 and message in done.json()["detail"]
        assert done.headers["www-authenticate"] == "Bearer"
        assert alice not in done.text and mallory not in done.text
    assert count(factory, Result) == len(ZOO_RESULTS)
    for page in ("/", "/methods/random", "/api/results"):
        assert alice not in client.get(page).text
    assert all(
        alice not in r.getMessage() and mallory not in r.getMessage() for r in caplog.records
    )


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        (b"{not json", 400, "malformed JSON: JSONDecodeError at byte 1"),
        (b"\xff\xfe", 400, "malformed JSON"),
        (b"[1, 2]", 422, "a result is a JSON object, got list"),
        (b'{"schema_version": 1, "env_id": 5}', 422, "invalid result"),
        (b'{"schema_version": "1; DROP TABLE results"}', 422, "schema_version"),
        # the review's 500s: json's RecursionError, and nesting that broke later checks
        (b"[" * 5000 + b"]" * 5000, 400, "nested deeper than 32 levels"),
        (b'{"env_id": ' + b"[" * 40 + b"]" * 40 + b"}", 400, "nested deeper than 32 levels"),
    ],
)
def test_malformed_bodies_are_refused_with_what_is_wrong(app_client, body, status, message):
    client, factory, alice, _ = app_client
    done = client.post("/api/results", content=body, headers=bearer(alice))
    assert done.status_code == status and message in done.json()["detail"]
    assert count(factory, Result) == len(ZOO_RESULTS)


def test_deep_metadata_and_edits_are_refused_not_crashed(app_client):
    client, factory, alice, _ = app_client
    deep = "[" * 3000 + "]" * 3000
    done = client.post("/api/submissions", headers=bearer(alice),
                       files={"policy": ("p.onnx", b"x")}, data={"metadata": deep})  # fmt: skip
    assert done.status_code == 400 and "the metadata is nested deeper" in done.json()["detail"]
    edit = client.patch("/api/methods/random", headers=bearer(alice),
                        content=b'{"authors": ' + b"[" * 3000 + b"]" * 3000 + b"}")  # fmt: skip
    assert edit.status_code == 400 and "the edit is nested deeper" in edit.json()["detail"]
    for budget, seeds, problem in ((10**16, [0], "training_budget_steps"),
                                   (100, [-1], "train_seeds")):  # fmt: skip
        meta = {"env_id": "rlbench/CartPole-v1", "method": "deep-m",
                "training_budget_steps": budget, "train_seeds": seeds}  # fmt: skip
        refused = client.post("/api/submissions", headers=bearer(alice),
                              files={"policy": ("p.onnx", b"x")},
                              data={"metadata": json.dumps(meta)})  # fmt: skip
        assert refused.status_code == 422 and problem in refused.json()["detail"], refused.text
    assert count(factory, Result) == len(ZOO_RESULTS)


def test_a_token_sent_in_the_url_never_reaches_the_server_log(app_client, caplog):
    """The review saw ``POST /api/results?token=rlb_...`` in serve's access log."""
    import logging

    _, _, alice, _ = app_client  # the app is built: its log filter is installed
    access = logging.getLogger("uvicorn.access")
    with caplog.at_level(logging.INFO, logger="uvicorn.access"):
        # the record uvicorn's access logger writes for a request line
        access.info('%s - "%s %s HTTP/%s" %d', "127.0.0.1:5000", "POST",
                    f"/api/results?token={alice}&method=m", "1.1", 422)  # fmt: skip
    assert "/api/results?token=[redacted]&method=m" in caplog.text
    assert alice not in caplog.text and alice[4:] not in caplog.text


def test_huge_bodies_are_refused_naming_the_limit(app_client):
    client, _, alice, _ = app_client
    huge = b" " * (300 * 1024)
    done = client.post("/api/results", content=huge, headers=bearer(alice))
    assert done.status_code == 413
    assert "the limit of /api/results is 262144 bytes" in done.json()["detail"]

    def chunks():  # no Content-Length: counted as it streams
        for _ in range(40):
            yield b" " * 8192

    done = client.post("/api/results", content=chunks(), headers=bearer(alice))
    assert done.status_code == 413 and "over 262144 bytes" in done.json()["detail"]


def test_a_result_under_another_protocol_is_refused_with_the_difference(app_client):
    client, _, alice, _ = app_client
    data = json.loads(ZOO_RESULTS[0].read_text())
    data["protocol"]["deterministic"] = False
    from rlbench_suite.core.protocol import EvalProtocol

    data["protocol_hash"] = EvalProtocol(**data["protocol"]).hash
    done = client.post("/api/results", json=data, headers=bearer(alice))
    assert done.status_code == 422
    assert "deterministic: false vs the card's true" in done.json()["detail"]


@pytest.mark.parametrize(
    ("wrappers", "message"),
    [
        ([{"name": "rlbench/KitchenOwnContribution-v0", "kwargs": {"bonus": {"pot": 2}}}],
         "invalid policy record: wrappers.0.kwargs.bonus: must be a number, true/false, a "
         "string or null (a wrapper's kwargs are flat), not an object"),
        ([{"name": "bonus_wrap", "kwargs": {}}], "unknown wrapper 'bonus_wrap'; accepted: "),
        (["TimeLimit", 5, None], "invalid policy record: wrappers.0"),
    ],
)  # fmt: skip
def test_a_result_whose_policy_record_names_wrappers_a_submission_could_not_is_refused(
    app_client, wrappers, message
):
    """A self-reported Result's ``policy.wrappers`` follow the rule of a policy submission's
    metadata (the suite's own wrappers, flat kwargs): refused in one line, nothing stored."""
    client, factory, alice, _ = app_client
    before = count(factory, Result)
    data = json.loads(ZOO_RESULTS[0].read_text())
    data["policy"]["wrappers"] = wrappers
    done = client.post("/api/results", json=data, headers=bearer(alice))
    assert done.status_code == 422 and message in done.json()["detail"], done.json()
    assert ".int:" not in done.json()["detail"] and count(factory, Result) == before


def test_the_rate_limit_is_named_in_the_refusal(app_client):
    client, _, alice, _ = app_client
    statuses = [client.post("/api/results", content=b"[]", headers=bearer(alice)) for _ in range(9)]
    assert [s.status_code for s in statuses[:8]] == [422] * 8
    refused = statuses[8]
    assert refused.status_code == 429
    assert "at most 8 submissions per minute per token" in refused.json()["detail"]
    assert int(refused.headers["retry-after"]) >= 1


def test_script_and_sql_strings_are_stored_verbatim_and_shown_escaped(app_client, random_results):
    client, factory, alice, _ = app_client
    data = json.loads(random_results[0].read_text())
    hostile = "<script>alert('x')</script>'; DROP TABLE results;--"
    data["policy"]["name"] = hostile
    data["provenance"]["command"] = [hostile]
    done = client.post("/api/results", json=data, headers=bearer(alice))
    assert done.status_code == 201, done.text
    page = client.get(f"/results/{done.json()['id']}").text
    assert "<script>" not in page and "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in page
    with factory() as session:
        assert session.execute(text("SELECT count(*) FROM results")).scalar() > 0
        row = session.get(Result, done.json()["id"])
        assert (
            row.policy_name == hostile
            and row.method.name == "script_alert(_x_)_/script___ DROP TABLE results"
        )
    refused = client.post(
        "/api/results", params={"method": "<b>x</b>"}, json=data, headers=bearer(alice)
    )
    assert refused.status_code == 422 and "method name '<b>x</b>' is not accepted" in refused.text


@pytest.mark.parametrize(
    "path",
    [
        "/envs/rlbench/..%2F..%2Fpyproject.toml",
        "/static/../pyproject.toml",
        "/static/%2e%2e/pyproject.toml",
        "/api/results/..%2F1",
        "/results/-1",
        "/plots/results/1%00.svg",
        "/api/envs/rlbench/CartPole-v1%2F..%2F/ranking",
    ],
)
def test_path_tricks_find_nothing(app_client, path):
    client, *_ = app_client
    done = client.get(path)
    assert done.status_code in (400, 404, 422), (path, done.status_code)  # 400: a NUL
    assert "[build-system]" not in done.text


def test_an_onnx_policy_is_stored_by_hash_and_queued(app_client):
    client, factory, alice, _ = app_client
    model = make_onnx()
    metadata = {
        "env_id": "rlbench/CartPole-v1",
        "method": "tiny-matmul",
        "training_budget_steps": 1000,
    }
    done = client.post(
        "/api/submissions",
        headers=bearer(alice),
        files={"policy": ("../../etc/evil name.onnx", model)},
        data={"metadata": json.dumps(metadata)},
    )
    assert done.status_code == 202, done.text
    import hashlib

    assert done.json()["artifact_sha256"] == hashlib.sha256(model).hexdigest()
    status = client.get(done.json()["url"]).json()
    assert status["job"]["state"] == "queued" and status["method"] == "tiny-matmul"
    with factory() as session:
        artifact = session.get(PolicyArtifact, done.json()["artifact_sha256"])
        assert artifact.content == model and artifact.filename == "evil_name.onnx"
        assert session.scalar(select(func.count()).select_from(VerificationJob)) == 1
    again = client.post(
        "/api/submissions",
        headers=bearer(alice),
        files={"policy": ("p.onnx", model)},
        data={"metadata": json.dumps(metadata)},
    )
    # the same policy again for the same env and method: its queued job, not a second one
    assert again.status_code == 200 and count(factory, PolicyArtifact) == 1
    assert (again.json()["job"], again.json()["created"]) == (done.json()["job"], False)
    assert count(factory, VerificationJob) == 1


@pytest.mark.parametrize(
    ("model", "metadata", "message"),
    [
        (make_onnx("com.evil"), None, "custom ONNX operators are not accepted: com.evil::Boom"),
        (b"\x00garbage", None, "policy is not a valid ONNX model"),
        (
            make_onnx(),
            {"env_id": "rlbench/Nope-v0", "method": "m"},
            "environment 'rlbench/Nope-v0' is not on this leaderboard",
        ),
        (
            make_onnx(),
            {"env_id": "rlbench/CartPole-v1"},
            "invalid metadata: method: Field required",
        ),
        (
            make_onnx(),
            {"env_id": "rlbench/CartPole-v1", "method": "m", "verification": "verified"},
            "invalid metadata: verification: Extra inputs are not permitted",
        ),
        (  # one line saying what is accepted, not pydantic's error per member of the union
            make_onnx(),
            {"env_id": "rlbench/CartPole-v1", "method": "m", "wrappers": [
                {"name": "rlbench/KitchenOwnContribution-v0", "kwargs": {"bonus": {"pot": 2}}}]},
            "invalid metadata: wrappers.0.kwargs.bonus: must be a number, true/false, a string "
            "or null (a wrapper's kwargs are flat), not an object",
        ),
    ],
)
def test_bad_policy_submissions_are_refused(app_client, model, metadata, message):
    client, factory, alice, _ = app_client
    metadata = metadata or {"env_id": "rlbench/CartPole-v1", "method": "m"}
    done = client.post(
        "/api/submissions",
        headers=bearer(alice),
        files={"policy": ("p.onnx", model)},
        data={"metadata": json.dumps(metadata)},
    )
    assert done.status_code == 422 and message in done.json()["detail"]
    assert ".int:" not in done.json()["detail"]
    assert count(factory, VerificationJob) == 0 and count(factory, PolicyArtifact) == 0


def test_a_result_body_of_another_media_type_is_refused_naming_the_accepted_one(app_client):
    """415 names application/json; JSON declared with a charset, or declared as nothing (what
    ``curl --data-binary`` and older clients send), is read."""
    client, factory, alice, _ = app_client
    body = ZOO_RESULTS[0].read_bytes()
    for declared in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data"):
        headers = {**bearer(alice), "Content-Type": declared}
        done = client.post("/api/results", content=body, headers=headers)
        assert done.status_code == 415, done.text
        assert done.json()["detail"] == (
            f"unsupported media type: Content-Type '{declared}'; send application/json: a "
            "Result JSON (rlbench eval's output)"
        )
    with factory() as session:
        before = session.scalar(select(func.count()).select_from(Result))
    headers = {**bearer(alice), "Content-Type": "application/json; charset=utf-8"}
    assert client.post("/api/results", content=body, headers=headers).status_code == 200
    assert client.post("/api/results", content=body, headers=bearer(alice)).status_code == 200
    with factory() as session:
        assert session.scalar(select(func.count()).select_from(Result)) == before


def test_policy_bodies_over_the_limit_and_wrong_forms_are_refused(app_client):
    client, _, alice, _ = app_client
    done = client.post(
        "/api/submissions",
        headers=bearer(alice),
        files={"policy": ("p.onnx", b"0" * (70 * 1024))},
        data={"metadata": "{}"},
    )
    assert done.status_code == 413 and "the limit of /api/submissions is 65536 bytes" in done.text
    done = client.post("/api/submissions", headers=bearer(alice), json={"policy": "x"})
    assert done.status_code == 415


def test_read_endpoints(app_client):
    client, *_ = app_client
    envs = {e["id"]: e for e in client.get("/api/envs").json()}
    assert "classic-control" in envs["rlbench/CartPole-v1"]["suites"]
    ranking = client.get("/api/envs/rlbench/CartPole-v1/ranking").json()
    assert ranking["protocol_hash"] == envs["rlbench/CartPole-v1"]["protocol_hash"]
    assert ranking["rows"][0]["method"] == "zoo-ppo" and ranking["rows"][0]["runs"] == 5
    assert client.get("/api/envs/rlbench/Nope-v0/ranking").status_code == 404
    bad = client.get("/api/envs/rlbench/CartPole-v1/ranking", params={"budget": "10k"})
    assert bad.status_code == 422 and "accepted: 100k, 1M, unlimited" in bad.json()["detail"]
    listed = client.get("/api/results", params={"env": "rlbench/Pendulum-v1"}).json()
    assert {r["method"] for r in listed} == {"zoo-sac"} and len(listed) == 5
    assert client.get("/api/results", params={"limit": 0}).status_code == 422
    # paging: the total and the next and previous pages in headers, the body a list as before
    first = client.get("/api/results", params={"env": "rlbench/Pendulum-v1", "limit": 2})
    assert [r["id"] for r in first.json()] == [r["id"] for r in listed[:2]]
    assert first.headers["x-total-count"] == "5" and 'rel="next"' in first.headers["link"]
    assert "offset=2" in first.headers["link"] and 'rel="prev"' not in first.headers["link"]
    last = client.get("/api/results", params={"env": "rlbench/Pendulum-v1", "limit": 2,
                                              "offset": 4})  # fmt: skip
    assert len(last.json()) == 1 and 'rel="next"' not in last.headers["link"]
    assert "offset=2" in last.headers["link"] and 'rel="prev"' in last.headers["link"]
    # budget classes (this one and the smaller ones) and the protocol hash filter results
    budgets = {r["id"]: r["training_budget_steps"] for r in list_all_results(client)}
    assert len(budgets) == len(ZOO_RESULTS)
    small = list_all_results(client, budget="100k")
    assert {r["id"] for r in small} == {i for i, b in budgets.items() if b and b <= 105_000}
    assert 0 < len(small) < len(budgets)
    assert len(list_all_results(client, budget="unlimited")) == len(budgets)
    bad = client.get("/api/results", params={"budget": "10k"})
    assert bad.status_code == 422 and "accepted: 100k, 1M, unlimited" in bad.text
    pendulum = envs["rlbench/Pendulum-v1"]["protocol_hash"]
    same = client.get("/api/results", params={"protocol_hash": pendulum}).json()
    assert {r["env_id"] for r in same} == {"rlbench/Pendulum-v1"} and len(same) == 5
    assert client.get("/api/results", params={"protocol_hash": "0" * 64}).json() == []
    # a parameter the route does not take is refused, naming those it takes
    typo = client.get("/api/results", params={"env_id": "rlbench/Pendulum-v1"})
    assert typo.status_code == 422
    assert "unknown query parameter 'env_id'" in typo.json()["detail"]
    assert "takes: budget, env, limit, method, offset, protocol_hash" in typo.json()["detail"]
    assert client.get("/api/methods", params={"x": 1}).status_code == 422
    methods = {m["name"] for m in client.get("/api/methods").json()}
    algos = {json.loads(p.read_text())["policy"]["name"].split("/")[1] for p in ZOO_RESULTS}
    assert methods == {f"zoo-{algo}" for algo in algos} >= {"zoo-ppo", "zoo-sac"}
    suite = client.get("/api/suites/classic-control/ranking").json()
    assert {r["method"] for r in suite["incomplete"]} >= {"zoo-ppo", "zoo-sac"}
    assert client.get("/api/openapi.json").json()["paths"]["/api/results"]["post"]
    moved = client.get("/openapi.json", follow_redirects=False)
    assert moved.status_code == 308 and moved.headers["location"] == "/api/openapi.json"


def test_policy_metadata_takes_a_batched_runs_seeds():
    """A batched run lists one reset seed per env (the zoo's QuadHover: 2,048); the limit
    names itself when passed."""
    from pydantic import ValidationError

    from rlbench_suite.leaderboard.artifacts import PolicyMetadata

    meta = PolicyMetadata(env_id="rlbench/QuadHover-v0", method="m", train_seeds=list(range(2048)))
    assert len(meta.train_seeds) == 2048
    with pytest.raises(ValidationError, match="at most 10000 items"):
        PolicyMetadata(env_id="rlbench/QuadHover-v0", method="m", train_seeds=[0] * 10_001)


@pytest.mark.parametrize(
    ("name", "value", "accepted"),
    [
        ("verification", "verifed", "unknown verification level 'verifed'; accepted: "),
        ("budget", "zzz", "unknown budget class 'zzz'; accepted: 100k, 1M, unlimited"),
        ("family", "bogus", "unknown algorithm family 'bogus'; accepted: "),
    ],
)
def test_every_route_refuses_an_unknown_filter_value_naming_the_accepted(
    app_client, name, value, accepted
):
    client, factory, *_ = app_client
    with factory() as session:
        families = views.families(session)
    assert "policy-gradient" in families
    paths = [
        "/api/envs/rlbench/CartPole-v1/ranking",
        "/api/suites/classic-control/ranking",
        "/envs/rlbench/CartPole-v1",
        "/suites/classic-control",
    ]
    if name == "verification":
        paths.append("/api/results")
    for path in paths:
        answer = client.get(path, params={name: value})
        assert answer.status_code == 422, path
        text = answer.json()["detail"] if path.startswith("/api/") else html.unescape(answer.text)
        assert accepted in text, path
        if name == "family":
            assert f"accepted: {', '.join(families)}" in text, path
        good = {"verification": "verified", "budget": "1M", "family": families[0]}[name]
        assert client.get(path, params={name: good}).status_code == 200, path


def test_refusals_cut_long_echoed_values(app_client):
    client, _, alice, _ = app_client
    document = json.loads(ZOO_RESULTS[0].read_text())
    document["env_id"] = "A" * 100_000
    done = client.post("/api/results", json=document, headers=bearer(alice))
    assert done.status_code == 422 and len(done.content) < 2000
    assert f"env_id '{'A' * 200}…' (100000 characters)" in done.json()["detail"]
    family = "f" * 50_000
    for path in ("/api/envs/rlbench/CartPole-v1/ranking", "/envs/rlbench/CartPole-v1"):
        answer = client.get(path, params={"family": family})
        assert answer.status_code == 422 and len(answer.content) < 20_000, path
        text = answer.text if path.startswith("/api/") else html.unescape(answer.text)
        assert f"unknown algorithm family '{'f' * 200}…' (50000 characters); accepted: " in text


def test_hostile_numbers_repeated_runs_and_others_methods_are_refused(app_client, random_results):
    """Found by a review: an infinite return was stored and broke CartPole's ranking (500);
    NaN and a 10**30 budget gave 500 and left empty methods; 200 copies of one evaluation
    (only wall_time_s changed) ranked as 200 runs; any token added runs to anyone's method."""
    from rlbench_suite.leaderboard.tokens import create_token

    client, factory, alice, _ = app_client
    with factory.begin() as session:
        bob = create_token(session, "bob")[1]
    good = json.loads(random_results[0].read_text())
    for change, message in (
        ({"returns": [float("inf"), *good["returns"][1:]]}, "returns.0: Input should be a finite"),
        ({"returns": ["NaN", *good["returns"][1:]]}, "returns.0: Input should be a finite"),
        ({"training_budget_steps": 10**30}, "training_budget_steps: Input should be less than"),
        ({"training_budget_steps": -5}, "training_budget_steps: Input should be greater than"),
        ({"wall_time_s": -1.0}, "wall_time_s: Input should be greater than or equal to 0"),
        ({"policy": {**good["policy"], "artifact_sha256": "../../etc/passwd"}},
         "artifact_sha256 must be 64 lowercase hex digits"),
    ):  # fmt: skip
        body = json.dumps({**good, **change})  # json.dumps writes inf as Infinity
        done = client.post("/api/results", params={"method": "evil"}, content=body,
                           headers=bearer(alice))  # fmt: skip
        assert done.status_code == 422 and message in done.json()["detail"], done.text
    assert "evil" not in {m["name"] for m in client.get("/api/methods").json()}
    assert client.get("/envs/rlbench/CartPole-v1").status_code == 200
    first = client.post("/api/results", params={"method": "alice-rand"}, json=good,
                        headers=bearer(alice))  # fmt: skip
    assert first.status_code == 201, first.text
    copy = {**good, "wall_time_s": good["wall_time_s"] + 1.0}
    again = client.post("/api/results", params={"method": "alice-rand"}, json=copy,
                        headers=bearer(alice))  # fmt: skip
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
    other = json.loads(random_results[1].read_text())
    for method, creator in (("alice-rand", "another token"), ("zoo-ppo", "an import")):
        done = client.post("/api/results", params={"method": method}, json=other,
                           headers=bearer(bob))  # fmt: skip
        assert done.status_code == 422, done.text
        assert f"method {method!r} was created by {creator}" in done.json()["detail"]
    mine = client.post("/api/results", params={"method": "bob-rand"}, json=other,
                       headers=bearer(bob))  # fmt: skip
    assert mine.status_code == 201
