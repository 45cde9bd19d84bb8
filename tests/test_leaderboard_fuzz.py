"""Schemathesis over the leaderboard's OpenAPI schema: every operation, valid and invalid
inputs generated from the schema, sent with a live token to the app on SQLite and
PostgreSQL; no answer may be a server error (5xx). Each 5xx it found is pinned below by
the input that caused it."""

from __future__ import annotations

import json

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import not_a_server_error
from schemathesis.generation import GenerationMode

from tests.leaderboard_support import ZOO_ENVS, ZOO_RESULTS, leaderboard_cards, make_onnx

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
EXAMPLES = 10
"""Examples per operation and generation mode (about 30-60 s per database on 2 busy cores)."""


@pytest.fixture
def fuzzed_app(db_url):
    """The app over the zoo's results, a live token and no practical rate limit."""
    from rlbench_suite.leaderboard.app import create_app
    from rlbench_suite.leaderboard.importer import import_files
    from rlbench_suite.leaderboard.limits import Limits
    from rlbench_suite.leaderboard.startup import prepare_database
    from rlbench_suite.leaderboard.tokens import create_token

    cards, spec_hash = leaderboard_cards(ZOO_ENVS)
    factory = prepare_database(db_url, cards, spec_hash)
    assert import_files(factory, ZOO_RESULTS[:6]).refused == []
    with factory.begin() as session:
        _, token = create_token(session, "fuzzer")
    app = create_app(factory, Limits(submissions_per_minute=1_000_000))
    yield app, token
    factory.kw["bind"].dispose()


def test_no_operation_answers_with_a_server_error(fuzzed_app):
    app, token = fuzzed_app
    schema = schemathesis.openapi.from_asgi("/api/openapi.json", app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 10  # every route of the API, the two POSTs among them
    headers = {"Authorization": f"Bearer {token}"}
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(
                max_examples=EXAMPLES,
                deadline=None,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=list(HealthCheck),
                database=None,
            )
            def check(case) -> None:
                response = case.call(headers=headers)
                case.validate_response(response, checks=[not_a_server_error])

            try:
                check()
            except Unsatisfiable:  # nothing invalid to send (an operation with no inputs)
                assert mode is GenerationMode.NEGATIVE, operation.label


# -- the 5xx schemathesis found, each pinned by its input -----------------------------------


def test_ids_and_offsets_past_the_database_integer_are_refused(app_client):
    """Found: GET /api/results?offset=22168113370389141333737472 (and ids as large) raised
    OverflowError on SQLite and a numeric-range error on PostgreSQL: 500."""
    client, _, _, _ = app_client
    huge = "22168113370389141333737472"
    for path in (f"/api/results?offset={huge}", f"/api/results/{huge}",
                 f"/api/submissions/{huge}", f"/api/results/{2**31}"):  # fmt: skip
        response = client.get(path)
        assert response.status_code == 422, path
        assert "less than or equal to 2147483647" in response.json()["detail"], path
    assert client.get(f"/api/results/{2**31 - 1}").status_code == 404
    page = client.get(f"/results/{huge}")
    assert page.status_code == 404 and f"no result {huge}" in page.text
    assert client.get(f"/plots/results/{huge}.svg").status_code == 404


def test_nul_characters_are_refused_before_the_database(app_client):
    """Found: GET /api/compare?a=%C2%83%C2%AB%00%12&b=... raised psycopg's DataError
    ("PostgreSQL text fields cannot contain NUL (0x00) bytes"): 500."""
    client, _, alice, _ = app_client
    auth = {"Authorization": f"Bearer {alice}"}
    for path in (
        "/api/compare?a=%C2%83%C2%AB%00%12&b=zoo-ppo",
        "/api/results?method=a%00b",
        "/api/envs/rlbench/Cart%00Pole-v1/ranking",
    ):
        response = client.get(path)
        assert response.status_code == 400, path
        assert "NUL" in response.json()["detail"], path
    page = client.get("/compare?a=%00&b=zoo-ppo")  # a page: the HTML error page
    assert page.status_code == 400 and "NUL" in page.text
    document = json.loads(ZOO_RESULTS[0].read_text())
    document["env_id"] += "\u0000"
    response = client.post("/api/results", json=document, headers=auth)
    assert response.status_code == 400
    assert response.json()["detail"].startswith("the Result JSON contains a NUL character")
    metadata = json.dumps({"env_id": "rlbench/CartPole-v1\u0000", "method": "m"})
    response = client.post(
        "/api/submissions",
        files={"policy": ("p.onnx", make_onnx()), "metadata": (None, metadata)},
        headers=auth,
    )
    assert response.status_code == 400
    assert response.json()["detail"].startswith("the metadata contains a NUL character")
