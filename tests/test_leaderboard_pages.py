"""The leaderboard's pages through FastAPI's TestClient, on SQLite and PostgreSQL: what a
reader sees (rankings in order with intervals, filters, plots, provenance, P(improvement)),
server-rendered, escaped, without scripts or outside resources."""

from __future__ import annotations

import html
import json
import re
from urllib.parse import unquote

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from rlbench_suite.core.catalog import get_card, select_cards
from rlbench_suite.core.summary import with_figures
from rlbench_suite.core.wording import fixed
from rlbench_suite.leaderboard import plots
from rlbench_suite.leaderboard.app import create_app
from rlbench_suite.leaderboard.models import Environment, Method, Result, Suite
from rlbench_suite.paths import plot_cache_dir
from tests.leaderboard_support import ZOO_RESULTS, leaderboard_cards

CARD_IDS = {c.id for c in select_cards()}
ROW = re.compile(
    r'<tr><td class="rank">([^<]+)</td>\s*<td><a href="/methods/[^"]+">([^<]+)</a>'
    r'.*?<span class="num">([^<]+)</span> <span class="ci">\[([^,]+), ([^\]]+)\]'
)


@pytest.fixture
def site(seeded):
    with TestClient(create_app(seeded)) as client:
        yield client, seeded


SMALL_ENVS = ("rlbench/Acrobot-v1", "rlbench/CartPole-v1")


@pytest.fixture
def small_site(db_url, random_results):
    """A site of two envs and their results (the zoo's and the random ones): what an export's
    mechanics need, exported in seconds (the whole zoo's site takes minutes)."""
    from rlbench_suite.leaderboard.importer import import_files
    from rlbench_suite.leaderboard.startup import prepare_database

    factory = prepare_database(db_url, *leaderboard_cards(SMALL_ENVS))
    files = [p for p in ZOO_RESULTS if json.loads(p.read_text())["env_id"] in SMALL_ENVS]
    assert import_files(factory, [*files, *random_results]).refused == []
    with TestClient(create_app(factory)) as client:
        yield client, factory
    factory.kw["bind"].dispose()


def ranking_rows(page: str) -> list[tuple[str, str, float, float, float]]:
    table = page.split('<table class="ranking">', 1)[1].split("</table>", 1)[0]
    return [
        (rank, html.unescape(method), float(p), float(lo), float(hi))
        for rank, method, p, lo, hi in ROW.findall(table.replace("\n", " "))
    ]


def test_the_home_page_lists_suites_and_counts(site):
    client, factory = site
    page = client.get("/")
    assert page.status_code == 200
    assert '<a href="/suites/classic-control">classic-control</a>' in page.text
    with factory() as session:
        results = session.scalar(select(func.count()).select_from(Result))
    assert f"{results} results (0 verified)" in page.text
    assert "No verified results yet." in page.text
    with factory() as session:  # the offline dataset ids are said apart from the cards
        envs = session.scalar(select(func.count()).select_from(Environment))
        offline = session.scalar(select(func.count()).select_from(Environment)
                                 .where(Environment.family == "offline"))  # fmt: skip
    assert offline and f"{envs} environments ({offline} of them offline dataset ids)" in page.text
    for n, noun in re.findall(r"\b(\d+) (environments?|suites?|methods?|results?)\b", page.text):
        assert noun.endswith("s") == (n != "1"), f"{n} {noun}"
    # the newest results are told apart: id, policy (its seed) and mean return on each line
    newest = page.text.split("<h2>Newest results</h2>", 1)[1].split("</ul>", 1)[0]
    lines = re.findall(r"<li>(.*?)</li>", newest)
    assert len(lines) == min(10, results) and len(set(lines)) == len(lines)
    assert all("mean return" in line and re.search(r">#\d+ ", line) for line in lines)


def test_counts_are_said_with_the_right_plural():
    from rlbench_suite.core.wording import counted, fixed

    assert [fixed(-0.04), fixed(-0.06), fixed(0.0004, 3), fixed(-0.0004, 3)] == [
        "0.0", "-0.1", "0.000", "0.000"]  # fmt: skip
    assert [counted(n, "environment") for n in (0, 1, 2)] == [
        "0 environments",
        "1 environment",
        "2 environments",
    ]
    assert (
        counted(1, "policy", "policies") == "1 policy"
        and counted(3, "policy", "policies") == "3 policies"
    )


def test_a_nul_in_a_page_url_gets_the_html_error_page(site):
    client, _ = site
    for path in ("/envs/rlbench%2FCart%00", "/compare?a=%00&b=zoo-ppo"):
        page = client.get(path)
        assert page.status_code == 400 and page.headers["content-type"].startswith("text/html")
        assert '<p class="problem" role="alert">the URL contains a NUL character' in page.text
    api = client.get("/api/envs/rlbench/Cart%00Pole-v1/ranking")
    assert api.status_code == 400 and "NUL" in api.json()["detail"]


def test_an_environment_page_ranks_with_intervals_and_filters(site):
    client, _ = site
    page = client.get("/envs/rlbench/CartPole-v1")
    assert page.status_code == 200
    api = client.get("/api/envs/rlbench/CartPole-v1/ranking").json()
    rows = ranking_rows(page.text)
    assert [(r[0], r[1]) for r in rows] == [(a["rank"], a["method"]) for a in api["rows"]]
    assert [r[1] for r in rows] == ["zoo-ppo", "random"]
    for (_, _, point, low, high), expected in zip(rows, api["rows"], strict=True):
        assert point == round(expected["iqm"]["point"], 1)
        assert (low, high) == (round(expected["iqm"]["low"], 1), round(expected["iqm"]["high"], 1))
    assert "(1 run: over episodes)" in page.text  # random's single run
    # the expert reference is the zoo's own seed: the page says 100 is not an outside ceiling
    expert = "one of this suite's own trained baselines (baseline:CartPole-v1/ppo/seed-0)"
    assert expert in page.text
    assert '<img src="/plots/envs/rlbench/CartPole-v1.svg"' in page.text
    # filters are a plain GET form; they change the table
    assert '<form class="filters" method="get" action="/envs/rlbench/CartPole-v1">' in page.text
    budget = client.get("/envs/rlbench/CartPole-v1", params={"budget": "100k"})
    assert [r[1] for r in ranking_rows(budget.text)] == ["zoo-ppo"]
    assert '<option value="100k" selected>' in budget.text
    assert '<option value="unlimited">any (unlimited)</option>' in budget.text
    family = client.get("/envs/rlbench/CartPole-v1", params={"family": "policy-gradient"})
    assert [r[1] for r in ranking_rows(family.text)] == ["zoo-ppo"]
    verified = client.get("/envs/rlbench/CartPole-v1", params={"verification": "verified"})
    assert ranking_rows(verified.text) == [] and "No results match." in verified.text
    bad = client.get("/envs/rlbench/CartPole-v1", params={"budget": "10k"})
    assert bad.status_code == 422 and "unknown budget class &#39;10k&#39;" in bad.text
    plot = client.get("/plots/envs/rlbench/CartPole-v1.svg", params={"budget": "100k"})
    assert plot.headers["content-type"] == "image/svg+xml" and plot.text.startswith("<svg")
    missing = client.get("/envs/rlbench/Nope-v0")
    assert missing.status_code == 404 and "no environment &#39;rlbench/Nope-v0&#39;" in missing.text


def test_a_result_page_shows_its_plot_and_provenance(site):
    client, factory = site
    with factory() as session:
        row = session.scalar(select(Result).where(Result.env_id == "rlbench/Pendulum-v1"))
        doc = row.document
    page = client.get(f"/results/{row.id}")
    assert page.status_code == 200
    assert f'<img src="/plots/results/{row.id}.svg"' in page.text
    assert doc["provenance"]["git_commit"] in page.text
    assert doc["provenance"]["cpu"] in page.text and doc["protocol_hash"] in page.text
    assert f"Return of each of the {len(doc['returns'])} episodes." in page.text
    before = plots.episode_returns.cache_info().hits
    first = client.get(f"/plots/results/{row.id}.svg")
    second = client.get(f"/plots/results/{row.id}.svg")
    assert first.headers["content-type"] == "image/svg+xml" and first.text.startswith("<svg")
    assert second.text == first.text and plots.episode_returns.cache_info().hits > before
    assert client.get("/results/999999").status_code == 404


def test_a_plot_drawn_once_is_read_back_from_disk_until_the_drawing_changes(
    tmp_path, monkeypatch
):
    """A plot is kept in the disk cache (serve and export: the data dir's): a new process
    (memory empty) reads it back instead of drawing it again; another matplotlib or plots
    module draws it anew. Without a disk cache nothing is written."""
    monkeypatch.setenv("RLBENCH_DATA_DIR", str(tmp_path))
    returns, title = (1.0, 2.5, -3.0), f"disk cache {tmp_path.name}"
    monkeypatch.setattr(plots, "_disk_cache", None)
    plots.episode_returns(returns, title + " (memory)")
    assert not (tmp_path / "leaderboard").exists()
    monkeypatch.setattr(plots, "_disk_cache", plot_cache_dir())
    first = plots.episode_returns(returns, title)
    kept = list((tmp_path / "leaderboard" / "plot-cache").rglob("*.svg"))
    assert [f.read_text() for f in kept] == [first] and first.startswith("<svg")

    def not_again(figure):
        raise AssertionError("drawn again")

    plots.episode_returns.cache_clear()  # as in a new process
    monkeypatch.setattr(plots, "_svg", not_again)
    assert plots.episode_returns(returns, title) == first
    plots.episode_returns.cache_clear()
    monkeypatch.setattr(plots, "_drawing_version", lambda: "matplotlib 99, plots changed")
    with pytest.raises(AssertionError, match="drawn again"):
        plots.episode_returns(returns, title)


def test_a_result_page_shows_its_normalized_score_and_its_scale(site):
    """The normalized score a Result carries, with its interval and the scale it is on: the
    card's references, or an offline id's dataset references (its ``normalization``)."""
    client, factory = site
    with factory() as session:
        rows = {r.env_id: (r.id, r.document) for r in session.scalars(select(Result))}
    docs = list(rows.values())
    cards = next(v for v in docs if v[1].get("normalized_score") and not v[1].get("normalization"))
    offline = next(v for v in docs if v[1].get("normalization"))
    for result_id, doc in (cards, offline):
        point, low, high = (fixed(doc["normalized_score"][k]) for k in ("point", "low", "high"))
        page = client.get(f"/results/{result_id}").text
        assert f"<p>Normalized score: <strong>{point}</strong> [{low}, {high}]" in page
        if doc.get("normalization"):
            scale, source = doc["normalization"]["scale"], doc["normalization"]["references_from"]
            assert f"{scale}, references from {source})" in html.unescape(page)
        else:
            assert "0 = random, 100 = expert, on the card's reference scores" in page
    bare_ids = {i for i, doc in docs if not doc.get("normalized_score")}
    envs = {env_id: i for env_id, (i, _) in rows.items() if i in bare_ids}
    computed = 0
    for env_id, result_id in envs.items():  # scored before its card had both references
        card = get_card(env_id) if env_id in CARD_IDS else None
        page = client.get(f"/results/{result_id}").text
        if card is None or card.normalization_problem() is not None:
            assert "Normalized score:" not in page
            continue
        doc = dict(rows[env_id][1])
        want = with_figures(card, doc)["normalized_score"]
        point, low, high = (fixed(want[k]) for k in ("point", "low", "high"))
        assert f"<p>Normalized score: <strong>{point}</strong> [{low}, {high}]" in page
        assert "computed by the server from these episodes" in page
        computed += 1
    assert bare_ids and computed, "the seeded site has a result scored before its references"


def test_the_suites_index_lists_every_suite_and_docs_goes_to_the_api_docs(site):
    client, factory = site
    with factory() as session:
        suites = {s.name: sum(e.active for e in s.envs) for s in session.scalars(select(Suite))}
    page = client.get("/suites")
    assert page.status_code == 200 and len(suites) >= 2
    assert f"<p class=\"meta\">{len(suites)} suites;" in page.text
    for name, envs in suites.items():
        assert f'<tr><td><a href="/suites/{name}">{name}</a></td><td>{envs}</td></tr>' in page.text
    assert '<a href="/suites">suites</a>' in client.get("/").text  # the navigation links it
    moved = client.get("/suites/", follow_redirects=False)
    assert moved.status_code == 307 and moved.headers["location"].endswith("/suites")
    assert client.get("/suites/").text == page.text
    docs = client.get("/docs", follow_redirects=False)
    assert docs.status_code == 307 and docs.headers["location"].endswith("/api/docs")
    assert client.get("/docs").text == client.get("/api/docs").text


def test_a_suite_page_and_the_compare_page(site):
    client, _ = site
    page = client.get("/suites/classic-control")
    assert page.status_code == 200
    # zoo-ppo lacks the SAC env (and others, as the zoo grows)
    assert re.search(r"zoo-ppo</a>: no run on [^<]*rlbench/Pendulum-v1", page.text)
    compare = client.get("/compare", params={"a": "zoo-ppo", "b": "random"})
    api = client.get("/api/compare", params={"a": "zoo-ppo", "b": "random"}).json()
    assert {e["env_id"] for e in api["envs"]} == {"rlbench/CartPole-v1", "rlbench/Acrobot-v1"}
    overall = api["overall"]
    assert (
        f'Overall: <span class="num">{overall["point"]:.3f}</span> <span class="ci">'
        f"[{overall['low']:.3f}, {overall['high']:.3f}]"
    ) in compare.text
    assert overall["point"] > 0.9
    unknown = client.get("/compare", params={"a": "zoo-ppo", "b": "nobody"})
    assert unknown.status_code == 404 and "no method &#39;nobody&#39;" in unknown.text
    for same in (client.get("/compare", params={"a": "random", "b": "random"}),
                 client.get("/api/compare", params={"a": "random", "b": "random"})):  # fmt: skip
        assert same.status_code == 422 and "two different methods" in same.text


def test_a_suite_page_counts_the_runs_its_aggregate_used(site):
    """The runs column counts the runs in the aggregate's matrix (a full matrix: as many per
    env as the env with the fewest, one per env where that one has a single run), the runs
    stored beside them; the review saw 17 shown against 11 used."""
    client, factory = site
    with factory() as session:
        suites = list(session.scalars(select(Suite)))
        current = {e.id: e.protocol_hash for e in session.scalars(select(Environment))}
    differ = 0
    for suite in suites:
        api = client.get(f"/api/suites/{suite.name}/ranking").json()
        page = client.get(f"/suites/{suite.name}").text
        envs = api["scored_envs"]
        for row in api["rows"]:
            with factory() as session:
                per_env = [session.scalar(
                    select(func.count(Result.artifact_sha256.distinct()))
                    .join(Method, Result.method_id == Method.id)
                    .where(Method.name == row["method"], Result.env_id == env,
                           Result.protocol_hash == current[env])) for env in envs]  # fmt: skip
                stored = session.scalar(
                    select(func.count()).select_from(Result)
                    .join(Method, Result.method_id == Method.id)
                    .where(Method.name == row["method"], Result.env_id.in_(envs),
                           Result.protocol_hash.in_([current[e] for e in envs])))  # fmt: skip
            one_each = row["interval_over"] == "episodes"
            used = len(envs) * (1 if one_each else min(per_env))
            assert row["runs"] == used == len(row["result_ids"]), (suite.name, row)
            assert row["stored_runs"] == stored
            mine = page.split(f'href="/methods/{row["method"]}">', 1)[1].split("</tr>", 1)[0]
            cell = re.search(r'<td class="runs">(\d+)(?: <small[^>]*>\(of (\d+) stored\))?', mine)
            assert int(cell.group(1)) == used, (suite.name, mine)
            assert (int(cell.group(2)) if cell.group(2) else used) == stored
            assert f"{row['verified_runs']}/{used}</td>" in mine
            said = "(1 run per environment: over episodes)" if one_each and used > 1 else "(1 run:"
            assert (said in mine) == one_each, (suite.name, mine)
            differ += stored != used
    assert differ  # some suite's aggregate leaves stored runs out (box2d: 3 of zoo-ppo's 5)
    assert "<th>runs used</th>" in page


def test_a_method_page_lists_its_results(site):
    client, factory = site
    page = client.get("/methods/zoo-sac")
    assert page.status_code == 200 and "off-policy actor-critic" in page.text
    with factory() as session:
        ids = session.scalars(select(Result.id).where(Result.env_id == "rlbench/Pendulum-v1"))
        for result_id in ids:
            assert f'href="/results/{result_id}"' in page.text


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/envs/rlbench/Acrobot-v1",
        "/suites/classic-control",
        "/methods/zoo-ppo",
        "/results/1",
        "/compare?a=zoo-ppo&b=random",
        "/api/docs",
    ],
)
def test_pages_need_no_script_and_nothing_from_outside(site, path):
    client, _ = site
    page = client.get(path)
    assert page.status_code == 200
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page.text
    assert "<script" not in page.text.lower()
    assert not re.search(r'(src|href)="(https?:)?//', page.text)
    css = client.get("/static/style.css")
    assert css.status_code == 200 and "@import" not in css.text and "url(" not in css.text


def test_the_api_docs_page_describes_every_operation_of_the_schema(site):
    from rlbench_suite.leaderboard.api_docs import code_spans

    def shown(text: str) -> str:  # as the page says it: code spans as code
        return html.unescape(str(code_spans(text)))

    client, _ = site
    page = client.get("/api/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    text = html.unescape(page.text)
    assert 'href="/api/openapi.json"' in page.text
    assert "cdn." not in text and "swagger" not in text.lower()
    spec = client.get("/api/openapi.json").json()
    assert "/api/datasets" in spec["paths"]  # every API route is in the schema
    assert not [p for p in spec["paths"] if not p.startswith("/api/")]  # and no page
    count = 0
    for path, item in spec["paths"].items():
        for method, op in item.items():
            count += 1
            section = text.split(f"<h2><code>{method.upper()} {path}</code></h2>", 1)[1]
            section = section.split("</section>", 1)[0]
            assert shown(op["summary"]) in section and shown(op.get("description", "")) in section
            for param in op.get("parameters", []):
                assert f"<code>{param['name']}</code></td><td>{param['in']}</td>" in section
            for media_type in op.get("requestBody", {}).get("content", {}):
                assert f"request body: <code>{media_type}</code>" in section
            for status, response in op["responses"].items():
                assert f"<td>{status}</td><td>{shown(response['description'])}</td>" in section
    assert count == text.count('<section class="operation"') >= 10
    assert client.get("/redoc").status_code == 404


def test_the_site_exports_as_static_files_whose_links_resolve(site, tmp_path):
    """Every link of every exported page resolves to an exported file: nothing links the
    compare page or a query, the filter forms are replaced by a note, the results' JSON are
    ``.json`` files (the same path the server answers); the live pages keep all of it."""
    from rlbench_suite.leaderboard.export import LINK, export_site

    out = tmp_path / "site"  # tmp_path holds the SQLite database

    client, factory = site
    files = export_site(client.app, out)
    home = (out / "index.html").read_text()
    assert 'href="/api/docs"' in home  # the API docs page and the schema it links to
    live_home = client.get("/").text
    assert home == live_home.replace('<a href="/compare">compare</a>\n    ', "") != live_home
    assert (out / "api/docs/index.html").is_file()
    schema = json.loads((out / "api/openapi.json").read_text())
    assert schema == client.get("/api/openapi.json").json()
    env = (out / "envs/rlbench/CartPole-v1/index.html").read_text()
    assert [r[1] for r in ranking_rows(env)] == ["zoo-ppo", "random"]
    assert (
        "<form" not in env
        and "filtering by budget" in env
        and "needs the leaderboard's server" in env
    )
    live_env = client.get("/envs/rlbench/CartPole-v1").text
    assert '<form class="filters"' in live_env and "needs the leaderboard's server" not in live_env
    assert (out / "plots/envs/rlbench/CartPole-v1.svg").read_text().startswith("<svg")
    with factory() as session:
        ids = list(session.scalars(select(Result.id)))
    for result_id in ids:
        page = (out / f"results/{result_id}/index.html").read_text()
        assert f'href="/api/results/{result_id}.json"' in page
        stored = json.loads((out / f"api/results/{result_id}.json").read_text())
        assert stored == client.get(f"/api/results/{result_id}").json()
        assert stored == client.get(f"/api/results/{result_id}.json").json()
    assert not [f for f in (out / "api/results").iterdir() if f.suffix != ".json"]
    assert not (out / "compare").exists()
    pages = [f for f in files if f.name == "index.html"]
    assert len(pages) > len(ids)
    for page in pages:
        text = page.read_text()
        assert "<form" not in text, page
        for link in LINK.findall(text):
            assert "?" not in link and link != "/compare", (page, link)
            target = out / unquote(html.unescape(link)).lstrip("/")
            assert target.is_file() or (target / "index.html").is_file(), (page, link)


def test_the_export_renders_its_plots_in_worker_processes_to_the_same_bytes(small_site, tmp_path):
    """The plots (most of an export's time) come from forked workers: the tree is the same,
    byte for byte, as when this process renders everything."""
    from rlbench_suite.leaderboard.export import export_site

    client, factory = small_site
    drawings = (plots.episode_returns, plots.score_distribution, plots.performance_profiles)
    for draw in drawings:
        draw.cache_clear()  # nothing drawn is inherited by the workers: they draw every plot
    shared = export_site(create_app(factory), tmp_path / "shared", workers=2)  # no cached pages
    assert [draw.cache_info().currsize for draw in drawings] == [0, 0, 0]  # none drawn here
    alone = export_site(client.app, tmp_path / "alone", workers=0)

    def tree(files, root):
        return {f.relative_to(root).as_posix(): f.read_bytes() for f in files}

    mine, theirs = tree(alone, tmp_path / "alone"), tree(shared, tmp_path / "shared")
    assert sorted(mine) == sorted(theirs) and len(alone) == len(shared)
    assert [name for name in mine if mine[name] != theirs[name]] == []
    assert any(name.startswith("plots/results/") for name in mine)


def test_an_export_replaces_an_earlier_export_and_refuses_a_foreign_folder(small_site, tmp_path):
    """A second export into the same folder leaves no file of the first behind (a result
    deleted since keeps no page on the host); a folder holding other files is refused, and
    nothing in it is touched."""
    from rlbench_suite.leaderboard.export import MARKER, ExportFolderError, export_site

    client, _ = small_site
    out = tmp_path / "site"
    first = export_site(client.app, out, workers=0)
    (out / "results" / "99999").mkdir(parents=True)
    (out / "results" / "99999" / "index.html").write_text("gone")
    (out / "stale.html").write_text("gone")
    second = export_site(client.app, out, workers=0)
    assert sorted(second) == sorted(first) and (out / MARKER).is_file()
    assert not (out / "stale.html").exists() and not (out / "results" / "99999").exists()
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep")
    with pytest.raises(ExportFolderError, match="not empty and holds no earlier export"):
        export_site(client.app, foreign, workers=0)
    assert [p.name for p in foreign.iterdir()] == ["notes.txt"]


@pytest.mark.parametrize(
    ("path", "status", "message"),
    [
        ("/results/999999", 404, "no result 999999"),
        ("/results/abc", 422, "invalid request: path.result_id: Input should be a valid integer"),
        ("/methods/nope", 404, "no method &#39;nope&#39; on this leaderboard"),
        ("/no/such/page", 404, "no page at /no/such/page on this leaderboard"),
        ("/envs/rlbench/Nope-v0", 404, "no environment &#39;rlbench/Nope-v0&#39;"),
    ],
)
def test_page_errors_are_the_html_error_page_and_api_errors_stay_json(site, path, status, message):
    client, _ = site
    page = client.get(path)
    assert page.status_code == status
    assert page.headers["content-type"].startswith("text/html")
    assert f'<p class="problem" role="alert">{message}' in page.text
    assert '<a class="brand" href="/">rlbench leaderboard</a>' in page.text
    api = client.get("/api" + path)
    assert 404 <= api.status_code <= 422 and api.headers["content-type"] == "application/json"
    assert api.json()["detail"]
