"""The leaderboard's index pages, HEAD, the query-string rule and how scores are written,
through FastAPI's TestClient on SQLite and PostgreSQL: ``/methods`` and ``/envs`` list what
the database holds, pages refuse what they do not take with the error page, and a raw
metric (a win rate) keeps its significant digits where a normalized score keeps one decimal."""

from __future__ import annotations

import html
import re

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from rlbench_suite.core.wording import score, significant
from rlbench_suite.leaderboard.app import create_app
from rlbench_suite.leaderboard.models import Method, Result

CELLS = re.compile(r'<span class="num">([^<]+)</span> <span class="ci">\[([^,]+), ([^\]]+)\]')


@pytest.fixture
def site(seeded):
    with TestClient(create_app(seeded)) as client:
        yield client, seeded


def test_scores_are_written_by_their_scale():
    assert [significant(0.987), significant(1.0), significant(0.96041), significant(12345.6)] == [
        "0.987", "1", "0.96", "12346"]  # fmt: skip
    assert [significant(-0.00004, 1), significant(-0.0004, 3)] == ["-4e-05", "-0.0004"]
    assert [score(98.76), score(-0.04), score(0.9876, normalized=False)] == ["98.8", "0.0", "0.988"]


def test_a_raw_metric_keeps_three_significant_digits(site):
    client, factory = site
    env = "rlbench/ConnectFour-v3"  # a win rate with no expert reference: no normalized score
    api = client.get(f"/api/envs/{env}/ranking").json()
    assert api["normalized"] is False and api["rows"]
    page = client.get(f"/envs/{env}")
    assert page.status_code == 200 and "scale: win_rate (no normalized score" in page.text
    table = page.text.split('<table class="ranking">', 1)[1].split("</table>", 1)[0]
    shown = CELLS.findall(table)
    assert len(shown) == len(api["rows"])
    for cells, row in zip(shown, api["rows"], strict=True):
        iqm = row["iqm"]
        assert cells == tuple(f"{iqm[k]:.3g}" for k in ("point", "low", "high"))
        assert cells[0] != f"{iqm['point']:.1f}"  # not rounded to 0.1 as "1.0 [1.0, 1.0]"
    # the method page writes each run's score on its env's scale too
    method = api["rows"][0]["method"]
    with factory() as session:
        runs = session.execute(
            select(Result.id, Result.score)
            .join(Method, Result.method_id == Method.id)
            .where(Method.name == method, Result.env_id == env)
        ).all()
    listing = client.get(f"/methods/{method}").text
    for result_id, value in runs:
        cell = re.search(rf'href="/results/{result_id}">[^<]*</a></td>\s*<td>([^<]+)</td>', listing)
        assert cell and cell.group(1) == f"{value:.3g}", (result_id, value)
    # a normalized env keeps one decimal
    cartpole = client.get("/api/envs/rlbench/CartPole-v1/ranking").json()
    assert cartpole["normalized"] is True
    first = CELLS.search(client.get("/envs/rlbench/CartPole-v1").text)
    assert first.group(1) == f"{cartpole['rows'][0]['iqm']['point']:.1f}"


def test_the_index_pages_list_every_method_and_env_with_results(site):
    client, factory = site
    with factory() as session:
        per_method = dict(
            session.execute(
                select(Method.name, func.count(Result.id))
                .join(Result, Result.method_id == Method.id)
                .group_by(Method.name)
            ).all()
        )
        per_env = dict(
            session.execute(select(Result.env_id, func.count()).group_by(Result.env_id)).all()
        )
        verified = session.scalar(
            select(func.count()).select_from(Result).where(Result.verification == "verified")
        )
    home = client.get("/").text
    assert '<a href="/methods">' in home and '<a href="/envs">environments</a>' in home
    methods = client.get("/methods")
    assert methods.status_code == 200
    rows = re.findall(
        r'<tr><td><a href="(/methods/[^"]+)">([^<]+)</a></td><td>([^<]*)</td>'
        r"<td>(\d+)</td><td>(\d+)</td><td>(\d+)</td></tr>",
        methods.text,
    )
    assert {html.unescape(name): int(n) for _, name, _, n, _, _ in rows} == per_method
    assert sum(int(v) for *_, v, _ in rows) == verified
    assert ("zoo-ppo", "policy-gradient") in {(html.unescape(n), f) for _, n, f, *_ in rows}
    for link, name, *_ in rows[:3]:
        assert client.get(link).text.count(f"<h1>{name}</h1>") == 1
    for path in ("/envs", "/envs/"):
        envs = client.get(path)
        assert envs.status_code == 200 and envs.url.path == "/envs"
    rows = re.findall(
        r'<tr><td><a href="(/envs/[^"]+)">([^<]+)</a></td><td>[^<]*</td><td>[^<]*</td>'
        r"<td>(\d+)</td><td>(\d+)</td></tr>",
        envs.text,
    )
    assert {env: int(n) for _, env, n, _ in rows} == per_env
    assert all(link == f"/envs/{env}" for link, env, *_ in rows)
    assert client.get(rows[0][0]).status_code == 200


def test_pages_answer_head_and_the_api_stays_get_only(site):
    client, _ = site
    for path in ("/", "/envs", "/methods", "/envs/rlbench/CartPole-v1", "/results/1",
                 "/plots/results/1.svg", "/compare", "/datasets", "/api/docs"):  # fmt: skip
        head, get = client.head(path), client.get(path)
        assert (head.status_code, get.status_code) == (200, 200), path
        assert head.headers["content-type"] == get.headers["content-type"], path
    assert client.head("/no/such/page").status_code == 404
    assert client.head("/api/results").status_code == 405  # as its OpenAPI document says


@pytest.mark.parametrize(
    ("path", "params", "message"),
    [
        ("/envs/rlbench/CartPole-v1", {"budgets": "100k"},
         "unknown query parameter 'budgets'; /envs/{namespace}/{name} takes: budget, family, "
         "protocol, verification"),
        ("/", {"page": "2"}, "unknown query parameter 'page'; / takes: no query parameters"),
        ("/compare", {"a": "zoo-ppo", "c": "random"},
         "unknown query parameter 'c'; /compare takes: a, b, suite"),
        ("/methods/zoo-ppo", {"env": "x"}, "unknown query parameter 'env'"),
        ("/plots/suites/classic-control.svg", {"familly": "x"},
         "unknown query parameter 'familly'"),
        ("/datasets", {"id": "x"}, "unknown query parameter 'id'; /datasets takes: no query"),
    ],
)  # fmt: skip
def test_pages_refuse_query_parameters_they_do_not_take(site, path, params, message):
    client, _ = site
    page = client.get(path, params=params)
    assert page.status_code == 422 and page.headers["content-type"].startswith("text/html")
    assert '<p class="problem" role="alert">' in page.text and message in html.unescape(page.text)


def test_an_unknown_protocol_is_refused_naming_the_known_ones(site):
    client, _ = site
    current = next(
        e["protocol_hash"]
        for e in client.get("/api/envs").json()
        if e["id"] == "rlbench/CartPole-v1"
    )
    for path in ("/envs/rlbench/CartPole-v1", "/plots/envs/rlbench/CartPole-v1.svg",
                 "/api/envs/rlbench/CartPole-v1/ranking"):  # fmt: skip
        for protocol in ("abc", "0" * 64):
            refused = client.get(path, params={"protocol": protocol})
            assert refused.status_code == 422, (path, protocol)
            text = html.unescape(refused.text)
            assert (
                f"unknown protocol '{protocol}' for rlbench/CartPole-v1; accepted: {current} "
                "(the card's current protocol"
            ) in text
        assert client.get(path, params={"protocol": current}).status_code == 200
    named = client.get("/api/envs/rlbench/CartPole-v1/ranking", params={"protocol": current})
    assert (
        named.json()["rows"] == client.get("/api/envs/rlbench/CartPole-v1/ranking").json()["rows"]
    )


INDEXES = ("/envs", "/methods", "/datasets", "/compare", "/api/docs", "/api/envs",
           "/api/methods", "/api/results", "/api/datasets")  # fmt: skip


def test_a_trailing_slash_redirects_on_every_index_and_named_page(site):
    """``/methods/`` was a 404 (the method route took it as a method called ''), and
    ``/api/methods/`` a 405: every index and named page now redirects as Starlette's
    ``redirect_slashes`` does for the rest, the query kept."""
    client, _ = site
    named = ["/methods/zoo-ppo", "/api/methods/zoo-ppo", "/envs/rlbench/CartPole-v1",
             "/results/1", "/suites/classic-control"]  # fmt: skip
    for path in (*INDEXES, *named):
        moved = client.get(path + "/", follow_redirects=False)
        assert moved.status_code == 307, path
        assert moved.headers["location"].endswith(path), (path, moved.headers["location"])
        assert client.get(path + "/").status_code == 200, path
    kept = client.get("/api/results/", params={"limit": 2}, follow_redirects=False)
    assert kept.headers["location"].endswith("/api/results?limit=2")
    assert client.get("/api/methods/zoo-ppo").json()["family"] == "policy-gradient"
    missing = client.get("/api/methods/zoo-pp")
    assert missing.status_code == 404 and "did you mean: zoo-ppo" in missing.json()["detail"]


def test_plot_labels_say_the_method_and_its_budget_in_words(site):
    client, _ = site
    rows = client.get("/api/envs/rlbench/CartPole-v1/ranking").json()["rows"]
    svg = client.get("/plots/envs/rlbench/CartPole-v1.svg").text
    labels = re.findall(r"<!-- ([^>]*?) -->", svg)
    assert not [label for label in labels if "@" in label]  # no internal keys
    words = {"100k": "up to 100k steps", "1M": "up to 1M steps", "unlimited": "unlimited budget"}
    for row in rows:
        assert f"{row['method']}, {words[row['budget_class']]}" in labels, (row, labels)


def test_the_footer_says_which_scale_a_score_is_on(site):
    """Cards without both references are ranked on their primary metric as measured: the
    footer no longer calls every score normalized."""
    client, _ = site
    raw = next(e["id"] for e in client.get("/api/envs").json()
               if not client.get(f"/api/envs/{e['id']}/ranking").json()["normalized"])  # fmt: skip
    for path in ("/", f"/envs/{raw}", "/envs/rlbench/CartPole-v1"):
        footer = client.get(path).text.split("<footer>", 1)[1].split("</footer>", 1)[0]
        assert "scores (0 = random, 100 = expert) where an environment's card has" in footer
        assert "of the card's primary metric as measured" in footer
    assert "no normalized score" in html.unescape(client.get(f"/envs/{raw}").text)
