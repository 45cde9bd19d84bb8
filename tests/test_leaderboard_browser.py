"""The leaderboard in a real browser (Playwright driving Debian's Chromium): the pages a
reader uses, their order, filters, plots and P(improvement), at a phone's width too.
Screenshots go to ``$RLBENCH_TEST_ARTIFACTS/browser`` (else the test's temporary folder)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.leaderboard_support import ZOO_RESULTS, cached_dataset, serve_cli

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip(
        "playwright.sync_api",
        reason="playwright is not installed (scripts/setup.sh installs it with the dev extra)",
    )
    if not Path(CHROMIUM).is_file():
        pytest.skip(
            "Chromium is not installed (scripts/setup.sh installs Debian's as root: "
            "apt-get install chromium)"
        )
    with sync_api.sync_playwright() as playwright:
        args = ["--no-sandbox"] if os.geteuid() == 0 else []
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=args)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory, random_results):
    """``rlbench leaderboard serve`` on a fresh data dir with the zoo's and random results."""
    data = tmp_path_factory.mktemp("browser-data")
    env = {**os.environ, "RLBENCH_DATA_DIR": str(data)}
    imported = subprocess.run(
        [
            sys.executable,
            "-m",
            "rlbench_suite.cli",
            "leaderboard",
            "import",
            *map(str, random_results),
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    assert imported.returncode == 0, imported.stderr
    with serve_cli(data) as (base, _):
        yield base


@pytest.fixture
def page(browser, request, tmp_path):
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    folder = Path(os.environ.get("RLBENCH_TEST_ARTIFACTS", tmp_path)) / "browser"
    folder.mkdir(parents=True, exist_ok=True)
    page.shoot = lambda name: page.screenshot(path=folder / f"{name}.png", full_page=True)
    yield page
    context.close()


def ranking(page) -> list[tuple[str, str, str]]:
    rows = page.locator("table.ranking tbody tr")
    return [
        (
            rows.nth(i).locator("td").nth(0).inner_text(),
            rows.nth(i).locator("td").nth(1).locator("a").inner_text(),
            rows.nth(i).locator("td").nth(2).inner_text(),
        )
        for i in range(rows.count())
    ]


def test_the_home_page_lists_the_suites(server, page):
    page.goto(server + "/")
    suites = page.locator("ul.suites a").all_inner_texts()
    assert "classic-control" in suites and "mujoco-v5" in suites
    assert f"{len(ZOO_RESULTS) + 2} results" in page.locator("p.counts").inner_text()
    page.shoot("home")


def test_an_environment_page_ranks_and_filters(server, page):
    page.goto(server + "/envs/rlbench/CartPole-v1")
    rows = ranking(page)
    assert [(rank, method) for rank, method, _ in rows] == [("1", "zoo-ppo"), ("2", "random")]
    assert all("[" in cell and "]" in cell for _, _, cell in rows)
    figure = page.locator("figure img")
    figure.scroll_into_view_if_needed()
    page.wait_for_function("document.querySelector('figure img').naturalWidth > 0")
    page.shoot("environment")
    page.select_option("select[name=budget]", "100k")
    page.click("form.filters button")
    page.wait_for_url("**budget=100k**")
    assert [method for _, method, _ in ranking(page)] == ["zoo-ppo"]
    page.select_option("select[name=verification]", "verified")
    page.click("form.filters button")
    page.wait_for_url("**verification=verified**")
    assert "No results match." in page.locator("table.ranking").inner_text()
    page.shoot("environment-filtered")


def test_a_result_page_shows_its_plot_and_provenance(server, page):
    page.goto(server + "/envs/rlbench/Pendulum-v1")
    page.click("table.ranking a")  # the method
    page.locator("a[href^='/results/']").first.click()  # its first result
    page.wait_for_url("**/results/*")
    page.wait_for_function("document.querySelector('figure img').naturalWidth > 0")
    provenance = page.locator("dl.provenance").inner_text()
    assert "git commit" in provenance and "command" in provenance and "packages" in provenance
    page.shoot("result")


def test_the_compare_page_shows_the_probability_of_improvement(server, page):
    page.goto(server + "/compare")
    page.select_option("select[name=a]", "zoo-ppo")
    page.select_option("select[name=b]", "random")
    page.click("form.filters button")
    overall = page.locator("p.overall").inner_text()
    assert overall.startswith("Overall: ") and float(overall.split()[1]) > 0.9
    assert page.locator("table.compare tbody tr").count() == 2
    page.shoot("compare")


PHONE = 375  # CSS pixels: the narrowest common phone


def test_pages_fit_a_phone(server, browser, tmp_path):
    context = browser.new_context(viewport={"width": PHONE, "height": 812}, is_mobile=True)
    page = context.new_page()
    folder = Path(os.environ.get("RLBENCH_TEST_ARTIFACTS", tmp_path)) / "browser"
    folder.mkdir(parents=True, exist_ok=True)
    for name, path in [
        ("phone-environment", "/envs/rlbench/CartPole-v1"),
        ("phone-environment-raw", "/envs/rlbench/ConnectFour-v3"),
        ("phone-environment-elo", "/envs/rlbench/DuelVsBot-v0"),
        ("phone-suite", "/suites/classic-control"),
        ("phone-result", "/results/1"),
        ("phone-methods", "/methods"),
        ("phone-envs", "/envs"),
        ("phone-method", "/methods/zoo-ppo"),
        ("phone-compare", "/compare?a=zoo-ppo&b=random"),
    ]:
        page.goto(server + path)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE, (path, width)
        page.screenshot(path=folder / f"{name}.png", full_page=True)
    # the wide tables scroll inside their own box instead of widening the page
    page.goto(server + "/envs/rlbench/CartPole-v1")
    boxes = page.locator("div.scroll")
    assert boxes.count() >= 2
    assert all(
        boxes.nth(i).evaluate("e => getComputedStyle(e).overflowX") == "auto"
        for i in range(boxes.count())
    )
    context.close()


def test_the_index_pages_are_linked_and_answer_head(server, page):
    import httpx

    page.goto(server + "/")
    page.click("header nav a[href='/methods']")
    page.wait_for_url("**/methods")
    names = page.locator("table.methods tbody td:first-child a").all_inner_texts()
    assert "zoo-ppo" in names and "random" in names
    page.click("header nav a[href='/envs']")
    page.wait_for_url("**/envs")
    page.click("table.envs a[href='/envs/rlbench/CartPole-v1']")
    page.wait_for_url("**/envs/rlbench/CartPole-v1")
    assert [m for _, m, _ in ranking(page)] == ["zoo-ppo", "random"]
    for path in ("/", "/envs", "/methods", "/envs/rlbench/CartPole-v1"):
        head = httpx.head(server + path)  # uvicorn: the headers of the GET, no body
        assert head.status_code == 200 and head.content == b"", path
        assert head.headers["content-type"].startswith("text/html")


@pytest.fixture(scope="module")
def dataset_server(tmp_path_factory):
    """``rlbench leaderboard serve`` with one small dataset in its cache: (base URL, card)."""
    root = tmp_path_factory.mktemp("browser-datasets")
    card = cached_dataset(root / "content", root / "data")
    env = {"RLBENCH_CONTENT_ROOT": str(root / "content")}
    with serve_cli(root / "data", "--no-seed", env=env) as (base, _):
        yield base, card


def test_a_dataset_link_downloads_the_file_its_card_describes(dataset_server, browser, tmp_path):
    base, card = dataset_server
    context = browser.new_context(viewport={"width": 1200, "height": 900}, accept_downloads=True)
    page = context.new_page()
    page.goto(base + "/")
    page.click("header nav a[href='/datasets']")
    page.wait_for_url("**/datasets")
    row = page.locator(f"tr[id='{card.id}']")
    expected = {f.path: f.sha256 for f in card.files}
    assert row.locator("code.sha256").all_inner_texts() == list(expected.values())
    link = row.locator("a.download").first
    with page.expect_download() as info:
        link.click()
    download = info.value
    body = Path(download.path()).read_bytes()
    assert hashlib.sha256(body).hexdigest() == expected[link.inner_text()]
    assert "not on this server" in page.locator("tr[id='rlbench/Acrobot-expert-v0']").inner_text()
    folder = Path(os.environ.get("RLBENCH_TEST_ARTIFACTS", tmp_path)) / "browser"
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=folder / "datasets.png", full_page=True)
    context.close()


@pytest.fixture(scope="module")
def static_site(tmp_path_factory):
    """``rlbench leaderboard export`` of two zoo results, served by a plain static file server
    (Python's ``http.server``, no leaderboard code) on 127.0.0.1: its base URL."""
    from tests.conftest import run_cli
    from tests.leaderboard_support import _free_port, wait_until_serving

    root = tmp_path_factory.mktemp("static-site")
    db = ("--db", f"sqlite:///{root / 'lb.sqlite'}")
    picked = [str(p) for p in ZOO_RESULTS if "/CartPole-v1/ppo/" in p.as_posix()][:2]
    assert run_cli("leaderboard", "import", *picked, *db).returncode == 0
    done = run_cli("leaderboard", "export", str(root / "site"), *db)
    assert done.returncode == 0, done.stderr
    port = _free_port()
    with tempfile.TemporaryFile("w+") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
             "--directory", str(root / "site")],
            stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            base = f"http://127.0.0.1:{port}"
            wait_until_serving(base, process, log)  # any answer: the files are served
            yield base
        finally:
            process.kill()
            process.wait(timeout=30)


def test_the_static_export_works_without_the_server(static_site, page):
    """The review: the exported nav linked /compare (not exported), its filter forms did
    nothing, and results' JSON had no .json name. Every page a reader reaches by the nav answers
    from the static host, the JSON link opens JSON."""
    failed = []
    page.on("response", lambda r: failed.append(r.url) if r.status >= 400 else None)
    page.goto(static_site + "/")
    nav = page.locator("header nav a")
    links = [nav.nth(i).get_attribute("href") for i in range(nav.count())]
    assert "/compare" not in links and {"/envs", "/methods", "/datasets", "/api/docs"} <= set(links)
    for link in links:
        page.goto(static_site + "/")
        page.click(f"header nav a[href='{link}']")
        page.wait_for_load_state()
        assert page.locator("main h1").count() == 1, link
    page.goto(static_site + "/envs/rlbench/CartPole-v1")
    assert [method for _, method, _ in ranking(page)] == ["zoo-ppo"]
    assert page.locator("form").count() == 0
    assert "needs the leaderboard's server" in page.locator("p.static").first.inner_text()
    page.click("table.ranking a")  # the method, then its first result
    page.locator("a[href^='/results/']").first.click()
    page.wait_for_url("**/results/**")  # a static host may add the folder's slash
    page.wait_for_function("document.querySelector('figure img').naturalWidth > 0")
    page.shoot("static-result")
    json_link = page.locator("a", has_text="JSON")
    assert json_link.get_attribute("href").endswith(".json")
    with page.expect_response(lambda r: r.url.endswith(".json")) as answered:
        json_link.click()
    assert answered.value.headers["content-type"] == "application/json"
    assert answered.value.json()["env_id"] == "rlbench/CartPole-v1"
    assert failed == []
