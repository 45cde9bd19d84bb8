"""Editing a method's metadata, on SQLite and PostgreSQL: only the token that created the
method may (the operator through the CLI); hostile strings are stored as sent and shown
escaped; overlong fields, bad URLs, control characters and renames are refused with what is
accepted, and leave the method as it was."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from markupsafe import escape

from rlbench_suite.leaderboard.app import create_app
from rlbench_suite.leaderboard.limits import Limits
from rlbench_suite.leaderboard.tokens import create_token, revoke_token
from tests.conftest import run_cli
from tests.leaderboard_support import ZOO_RESULTS, zoo_factory

HOSTILE = {
    "authors": '<script>alert("authors")</script> & "><img src=x onerror=alert(1)>',
    "description": "x'); DROP TABLE methods;--\n<b>bold?</b> </p><script>alert(2)</script>",
    "paper_url": "https://arxiv.org/abs/1707.06347?a=1&b=<2>",
    "code_url": "http://example.org/ppo",
}


@pytest.fixture
def site(db_url, zoo_databases):
    """(client, db url, {token name: value}) with alice's method ``alice-ppo`` (created by her
    result) beside the imported zoo methods."""
    factory = zoo_factory(db_url, zoo_databases)
    tokens = {}
    with factory.begin() as session:
        for name in ("alice", "bob", "mallory"):
            tokens[name] = create_token(session, name)[1]
        revoke_token(session, "mallory")
    with TestClient(create_app(factory, Limits(submissions_per_minute=10_000))) as client:
        result = json.loads(ZOO_RESULTS[0].read_text())
        result["provenance"]["command"] = ["rlbench", "eval", "--by", "alice"]
        del result["policy"]["artifact_sha256"]  # her own policy: the zoo's file is the zoo's
        posted = client.post("/api/results?method=alice-ppo", json=result,
                             headers=auth(tokens["alice"]))  # fmt: skip
        assert posted.status_code == 201, posted.text
        yield client, db_url, tokens
    factory.kw["bind"].dispose()


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def method(client, name: str) -> dict:
    return next(m for m in client.get("/api/methods").json() if m["name"] == name)


def test_the_creator_edits_and_every_field_is_shown_escaped(site):
    client, _, tokens = site
    answer = client.patch("/api/methods/alice-ppo", json=HOSTILE, headers=auth(tokens["alice"]))
    assert answer.status_code == 200, answer.text
    assert {k: answer.json()[k] for k in HOSTILE} == HOSTILE
    assert {k: method(client, "alice-ppo")[k] for k in HOSTILE} == HOSTILE
    page = client.get("/methods/alice-ppo").text
    for value in HOSTILE.values():
        assert escape(value) in page
    assert "<script>" not in page and "<img src=x" not in page and "<b>bold" not in page
    assert f'href="{escape(HOSTILE["paper_url"])}"' in page
    assert len(client.get("/api/methods").json()) >= 2  # the table is still there
    # a partial edit changes only what it names; null (or "") clears a field
    answer = client.patch("/api/methods/alice-ppo", json={"code_url": None, "authors": " "},
                          headers=auth(tokens["alice"]))  # fmt: skip
    assert answer.status_code == 200, answer.text
    now = method(client, "alice-ppo")
    assert now["code_url"] is None and now["authors"] is None
    assert now["description"] == HOSTILE["description"]
    # the algorithm family is hers to set, from the accepted ones: the family filter finds it
    answer = client.patch("/api/methods/alice-ppo", json={"family": "policy-gradient"},
                          headers=auth(tokens["alice"]))  # fmt: skip
    assert answer.status_code == 200 and method(client, "alice-ppo")["family"] == "policy-gradient"
    env = json.loads(ZOO_RESULTS[0].read_text())["env_id"]
    ranked = client.get(f"/api/envs/{env}/ranking", params={"family": "policy-gradient"}).json()
    assert "alice-ppo" in {row["method"] for row in ranked["rows"]}


REFUSED = [
    ({"paper_url": "javascript:alert(1)"}, 422, "an http:// or https:// URL with a host"),
    ({"code_url": "https://"}, 422, "an http:// or https:// URL with a host"),
    ({"code_url": "ftp://example.org/x"}, 422, "an http:// or https:// URL with a host"),
    ({"paper_url": "https://example.org/a b"}, 422, "without spaces"),
    ({"authors": "a" * 501}, 422, "501 characters; at most 500 are accepted"),
    ({"description": "d" * 5001}, 422, "at most 5000 are accepted"),
    ({"authors": "a\x00b"}, 400, "the edit contains a NUL character"),  # as every body
    ({"authors": "a\nb"}, 422, "control characters are not accepted"),
    ({"authors": 5}, 422, "authors: Input should be a valid string"),
    ({"name": "renamed"}, 422, "a method's name is its key and cannot change"),
    ({"family": "x"}, 422, "family: 'x' is not accepted; accepted: policy-gradient, "),
    ({"colour": "x"}, 422, "colour: Extra inputs are not permitted"),
    ([1, 2], 422, "expected a JSON object; accepted: a JSON object with any of authors, "),
]


@pytest.mark.parametrize(("body", "status", "message"), REFUSED)
def test_bad_edits_are_refused_with_what_is_accepted(site, body, status, message):
    client, _, tokens = site
    before = method(client, "alice-ppo")
    answer = client.patch("/api/methods/alice-ppo", json=body, headers=auth(tokens["alice"]))
    assert answer.status_code == status, answer.text
    assert message in answer.json()["detail"]
    assert "accepted" in answer.json()["detail"]
    assert method(client, "alice-ppo") == before


def test_malformed_and_oversized_bodies_are_refused(site):
    client, _, tokens = site
    headers = {**auth(tokens["alice"]), "Content-Type": "application/json"}
    bad = client.patch("/api/methods/alice-ppo", content=b"{not json", headers=headers)
    assert bad.status_code == 400 and "malformed JSON" in bad.json()["detail"]
    big = json.dumps({"description": "d" * 70_000}).encode()
    over = client.patch("/api/methods/alice-ppo", content=big, headers=headers)
    assert over.status_code == 413, over.text


def test_only_the_creating_token_may_edit(site):
    client, _, tokens = site
    edit = {"authors": "someone else"}
    assert client.patch("/api/methods/alice-ppo", json=edit).status_code == 401
    revoked = client.patch("/api/methods/alice-ppo", json=edit, headers=auth(tokens["mallory"]))
    assert revoked.status_code == 401
    other = client.patch("/api/methods/alice-ppo", json=edit, headers=auth(tokens["bob"]))
    assert other.status_code == 403
    assert "only the token that created method 'alice-ppo' may edit it" in other.json()["detail"]
    imported = client.patch("/api/methods/zoo-ppo", json=edit, headers=auth(tokens["alice"]))
    assert imported.status_code == 403 and "rlbench leaderboard method edit" in imported.text
    missing = client.patch("/api/methods/nobody", json=edit, headers=auth(tokens["alice"]))
    assert missing.status_code == 404 and "no method 'nobody'" in missing.json()["detail"]
    assert method(client, "alice-ppo")["authors"] is None
    for value in tokens.values():
        assert value not in other.text + imported.text + missing.text


def test_the_operator_edits_any_method_from_the_command_line(site):
    client, db_url, _ = site
    edit = ("leaderboard", "method", "edit", "zoo-ppo", "--db", db_url)
    done = run_cli(*edit, "--authors", "The zoo <team>", "--code-url", "https://example.org/zoo")
    assert done.returncode == 0, done.stderr
    assert "zoo-ppo: authors = 'The zoo <team>'" in done.stdout
    assert method(client, "zoo-ppo")["code_url"] == "https://example.org/zoo"
    assert "The zoo &lt;team&gt;" in client.get("/methods/zoo-ppo").text
    bad = run_cli(*edit, "--paper-url", "javascript:alert(1)")
    assert bad.returncode == 2 and "an http:// or https:// URL with a host" in bad.stderr
    assert method(client, "zoo-ppo")["paper_url"] is None
    # said in the command's terms: its options, not the API's JSON fields
    assert "--paper-url: 'javascript:alert(1)' is not accepted" in bad.stderr
    assert "JSON" not in bad.stderr and "paper_url" not in bad.stderr
    family = run_cli(*edit, "--family", "magic")
    assert family.returncode == 2
    assert "--family: 'magic' is not accepted; accepted: " in family.stderr
    unknown = run_cli("leaderboard", "method", "edit", "zoo-pp", "--db", db_url, "--authors", "x")
    assert unknown.returncode == 2
    assert "no method 'zoo-pp' on this leaderboard; did you mean: zoo-ppo" in unknown.stderr
    nothing = run_cli(*edit)
    options = "--authors, --paper-url, --code-url, --description, --family"
    assert f"pass any of {options}" in nothing.stderr


def test_the_zoo_families_are_accepted_families():
    from rlbench_suite.leaderboard.importer import ZOO_FAMILIES
    from rlbench_suite.leaderboard.methods import ALGORITHM_FAMILIES

    assert set(ZOO_FAMILIES.values()) <= set(ALGORITHM_FAMILIES)


def test_one_rule_says_who_adds_to_and_edits_a_method(site):
    from rlbench_suite.leaderboard.store import method_named

    client, _, tokens = site
    with client.app.state.factory.begin() as session:  # a method with no submission: a
        method_named(session, "orphan")  # creation whose own result lost a race
    edit = {"authors": "bob"}
    assert (
        client.patch("/api/methods/orphan", json=edit, headers=auth(tokens["bob"])).status_code
        == 200
    )

    def altered(index: int, nth: int) -> dict:
        """A new run with the same figures: episode 0 swapped with the nth that differs."""
        result = json.loads(ZOO_RESULTS[index].read_text())
        del result["policy"]["artifact_sha256"]
        other = [i for i, r in enumerate(result["returns"]) if r != result["returns"][0]][nth]
        for key in ("returns", "lengths", "successes"):
            values = result[key]
            values[0], values[other] = values[other], values[0]
        return result

    bobs = client.post(
        "/api/results?method=orphan", json=altered(0, 0), headers=auth(tokens["bob"])
    )
    assert bobs.status_code == 201, bobs.text  # bob's first submission: the method is his now
    alices = client.post("/api/results?method=orphan", json=altered(0, 1),
                         headers=auth(tokens["alice"]))  # fmt: skip
    assert alices.status_code == 422
    assert "method 'orphan' was created by another token" in alices.json()["detail"]
    refused = client.patch("/api/methods/orphan", json={"authors": "alice"},
                           headers=auth(tokens["alice"]))  # fmt: skip
    assert refused.status_code == 403 and method(client, "orphan")["authors"] == "bob"
