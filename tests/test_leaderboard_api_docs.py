"""The API's own description, on SQLite and PostgreSQL: every status a submitting route sends
is in its OpenAPI document (each provoked here for real), ``/api/docs`` renders the
docstrings' code as code and names the suite's version, and an unknown env or method in a
listing is a 404 naming the closest ones, as on every other route."""

from __future__ import annotations

import html
import json

import pytest

import rlbench_suite
from rlbench_suite.core.provenance import package_versions
from rlbench_suite.leaderboard.store import method_named
from rlbench_suite.leaderboard.tokens import create_token
from tests.leaderboard_support import make_onnx

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def token(factory, name: str) -> dict[str, str]:
    with factory.begin() as session:
        _, value = create_token(session, name)
    return {"Authorization": f"Bearer {value}"}


def until_rate_limited(send) -> int:
    """Send until the token's rate limit answers (the test limit is 8 a minute)."""
    for _ in range(20):
        status = send().status_code
        if status == 429:
            return status
    raise AssertionError("no 429 after 20 submissions")


def documented(spec: dict, method: str, path: str) -> set[int]:
    return {int(status) for status in spec["paths"][path][method]["responses"]}


def test_every_status_a_submitting_route_sends_is_documented(app_client, random_results):
    client, factory, _, _ = app_client
    spec = client.get("/api/openapi.json").json()
    result = random_results[0].read_bytes()

    # POST /api/results
    who = token(factory, "results")
    post = lambda body, headers=who: client.post("/api/results", content=body, headers=headers)  # noqa: E731
    seen = {
        post(result, {}).status_code,  # 401
        post(result).status_code,  # 201
        post(result).status_code,  # 200: already stored
        post(b"{not json").status_code,  # 400
        post(b"[" + b" " * 300_000 + b"]").status_code,  # 413 (the test limit is 256 KiB)
        post(result, {**who, "Content-Type": "text/plain"}).status_code,  # 415
        post(json.dumps({"env_id": "rlbench/CartPole-v1"}).encode()).status_code,  # 422
        until_rate_limited(lambda: post(result)),  # 429
    }
    assert seen == documented(spec, "post", "/api/results") == {
        200, 201, 400, 401, 413, 415, 422, 429}  # fmt: skip

    # POST /api/submissions
    who = token(factory, "policies")
    meta = {"metadata": json.dumps({"env_id": "rlbench/CartPole-v1", "method": "docs"})}

    model = make_onnx()

    def submit(policy=model, data=meta, headers=who):
        files = {"policy": ("p.onnx", policy)}
        return client.post("/api/submissions", headers=headers, files=files, data=data)

    seen = {
        submit(headers={}).status_code,  # 401
        submit().status_code,  # 202
        submit().status_code,  # 200: the same policy again answers its job
        submit(data={"metadata": "{oops"}).status_code,  # 400
        submit(policy=b"0" * 70_000).status_code,  # 413 (the test limit is 64 KiB)
        client.post("/api/submissions", headers=who, json={"policy": "x"}).status_code,  # 415
        submit(data={"metadata": "{}"}).status_code,  # 422
        until_rate_limited(submit),  # 429
    }
    assert seen == documented(spec, "post", "/api/submissions") == {
        200, 202, 400, 401, 413, 415, 422, 429}  # fmt: skip

    # PATCH /api/methods/{name}
    who = token(factory, "editor")
    with factory.begin() as session:
        method_named(session, "nobodys")  # no submission yet: the first token to edit may

    def edit(name="nobodys", body=b'{"authors": "me"}', headers=who):
        return client.patch(f"/api/methods/{name}", content=body, headers=headers)

    seen = {
        edit(headers={}).status_code,  # 401
        edit().status_code,  # 200
        edit(body=b"{oops").status_code,  # 400
        edit(name="zoo-ppo").status_code,  # 403: imported, the operator's
        edit(name="nope").status_code,  # 404
        edit(body=b" " * 70_000).status_code,  # 413
        edit(headers={**who, "Content-Type": "application/x-www-form-urlencoded"}).status_code,
        edit(body=b'{"name": "x"}').status_code,  # 422
        until_rate_limited(edit),  # 429
    }
    assert seen == documented(spec, "patch", "/api/methods/{name}") == {
        200, 400, 401, 403, 404, 413, 415, 422, 429}  # fmt: skip
    # every error is described with its JSON body, the success bodies too
    for path, item in spec["paths"].items():
        for method, op in item.items():
            for status, response in op["responses"].items():
                assert response["description"] != "Validation Error", (method, path)
                assert "application/json" in response.get("content", {}), (method, path, status)


def test_the_docs_page_renders_code_and_names_the_suites_version(app_client):
    client, *_ = app_client
    spec = client.get("/api/openapi.json").json()
    assert spec["info"]["version"] == rlbench_suite.__version__
    assert spec["info"]["version"] == package_versions()["rlbench-suite"]
    page = client.get("/api/docs").text
    assert f"(OpenAPI {spec['openapi']}); this API's version is {rlbench_suite.__version__}" in page
    assert spec["openapi"].startswith("3.") and f"OpenAPI {spec['info']['version']})" not in page
    assert "``" not in html.unescape(page) and "`" not in html.unescape(page)
    described = spec["paths"]["/api/results"]["get"]["description"]
    assert "``budget``" in described  # the docstring's RST, shown as code
    section = page.split("<h2><code>GET /api/results</code></h2>", 1)[1].split("</section>")[0]
    assert "<code>budget</code> keeps a budget class" in section
    assert "<code>X-Total-Count</code>" in section
    posted = page.split("<h2><code>POST /api/results</code></h2>", 1)[1].split("</section>")[0]
    assert "<td>200</td><td>already stored" in posted and "<td>429</td>" in posted
    assert "<code>Retry-After</code>" in posted


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"env": "nope"}, "no environment 'nope' on this leaderboard"),
        ({"env": "rlbench/CartPol-v1"}, "did you mean: rlbench/CartPole-v1"),
        ({"method": "zoo-pp"}, "no method 'zoo-pp' on this leaderboard; did you mean: zoo-ppo"),
    ],
)
def test_a_listing_of_an_unknown_env_or_method_is_a_404(app_client, params, message):
    client, *_ = app_client
    answer = client.get("/api/results", params=params)
    assert answer.status_code == 404 and message in answer.json()["detail"]
    ranking = client.get("/api/envs/rlbench/CartPol-v1/ranking")
    assert ranking.status_code == 404 and "did you mean: rlbench/CartPole-v1" in ranking.text
    assert client.get("/api/results", params={"env": "rlbench/CartPole-v1"}).json()
