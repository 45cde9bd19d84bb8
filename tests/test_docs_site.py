"""The docs site: it builds with warnings as errors, every environment has its page with its
picture or transcript, and the committed previews are current."""

from __future__ import annotations

import html
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rlbench_suite.core.catalog import get_card
from rlbench_suite.previews import PreviewOptions, load_manifest, stale_previews, write_preview

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS / "_ext"))

import env_page_text  # noqa: E402
import env_pages  # noqa: E402

pytest.importorskip("sphinx")
pytest.importorskip("myst_parser")
PREVIEWS = DOCS / env_pages.PREVIEWS
MB = 1024 * 1024


def test_the_committed_previews_are_current_and_small():
    stale = stale_previews(PREVIEWS, env_pages.suite_cards())
    assert stale == {}, f"stale previews {stale}: run python scripts/build_docs.py previews"
    manifest = load_manifest(PREVIEWS)
    files = {p.name for p in PREVIEWS.iterdir()} - {"manifest.json"}
    assert files == {entry["file"] for entry in manifest.values()}, "files no card names"
    sizes = [(PREVIEWS / name).stat().st_size for name in files]
    assert max(sizes) < 1 * MB and sum(sizes) < 5 * MB
    for env_id, entry in manifest.items():
        assert (PREVIEWS / entry["file"]).stat().st_size == entry["bytes"], env_id


@pytest.mark.parametrize("env_id", ["rlbench/CartPole-v1", "rlbench/Kitchen-v0",
                                    "rlbench/Duel-v0", "rlbench/TextMaze-v0",
                                    "rlbench/PrisonersDilemma-v0"])  # fmt: skip
def test_a_committed_preview_is_what_rlbench_info_render_writes(env_id, tmp_path):
    entry = load_manifest(PREVIEWS)[env_id]
    options = PreviewOptions(seed=entry["seed"], policy=entry["policy"])
    made = write_preview(get_card(env_id), tmp_path / entry["file"], options)
    assert made.path.read_bytes() == (PREVIEWS / entry["file"]).read_bytes()


def test_an_env_page_says_what_its_card_says():
    card = get_card("rlbench/CartPole-v1")
    entry = load_manifest(PREVIEWS)[card.id]
    everything = {c.id: c for c in env_pages.suite_cards()}
    page = env_page_text.env_page(card, entry, everything, env_pages.card_file(card))
    trained = card.trained[0]
    assert f"# {card.name}" in page and f"../previews/{entry['file']}" in page
    assert env_page_text.md(" ".join(card.description.split())) in page
    assert card.reference.random.command in page and card.reference.expert.command in page
    assert env_page_text.interval_text(trained.normalized) in page
    assert f"{trained.budget_steps:,}" in page and entry["observation_space"] in page
    assert f'gym.make("{card.id}")' in page and "envs/classic/CartPole-v1.toml" in page
    ma = get_card("rlbench/ConnectFour-v3")
    page = env_page_text.env_page(ma, None, everything, env_pages.card_file(ma))
    assert 'rlbench_suite.make_multiagent("rlbench/ConnectFour-v3", api="aec")' in page


def test_markdown_text_is_escaped():
    assert env_page_text.md("a*b*_c_ [x](y) <b> |") == r"a\*b\*\_c\_ \[x\](y) \<b\> \|"
    assert env_page_text.code("a `b` c") == "``a `b` c``"


def _build(src: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", str(src),
         str(out)], capture_output=True, text=True, timeout=1500)  # fmt: skip


@pytest.mark.slow
def test_the_site_builds_with_no_warning_and_has_every_page(tmp_path):
    src = tmp_path / "docs"
    shutil.copytree(DOCS, src, ignore=shutil.ignore_patterns("_build", "environments", "api"))
    (src / "zz-new-guide.md").write_text("# A guide added later\n\nPicked up by itself.\n")
    done = _build(src, tmp_path / "html")
    assert done.returncode == 0, (done.stdout + done.stderr)[-5000:]
    out = tmp_path / "html"
    for page in [*DOCS.glob("*.md"), *(DOCS / "tutorials").glob("*.md")]:
        assert (out / page.relative_to(DOCS).with_suffix(".html")).is_file(), page
    index = (out / "index.html").read_text()
    assert 'href="zz-new-guide.html"' in index and 'href="environments/index.html"' in index
    manifest = load_manifest(PREVIEWS)
    for card in env_pages.suite_cards():
        page = out / "environments" / f"{env_page_text.page_name(card)}.html"
        assert page.is_file(), card.id
        text, entry = page.read_text(), manifest[card.id]
        if entry["kind"] == "transcript":
            first = (PREVIEWS / entry["file"]).read_text().splitlines()[0]
            assert html.escape(first, quote=False) in text, card.id
        else:
            assert f'src="../_images/{entry["file"]}"' in text, card.id
            assert (out / "_images" / entry["file"]).is_file()
    for family in {c.family for c in env_pages.suite_cards()}:
        assert (out / "environments" / f"{env_page_text.family_page(family)}.html").is_file()
    api = (out / "api" / "core.html").read_text()
    assert "EnvCard" in api and "normalized_score" in api
    datasets = (out / "api" / "datasets.html").read_text()
    assert "rlbench_suite.datasets.remotes.download" in datasets and "DatasetServer" in datasets
    leaderboard = (out / "api" / "leaderboard.html").read_text()
    assert "rlbench_suite.leaderboard.store.accept_result" in leaderboard
    assert "rank_env" in leaderboard and "run_pending" in leaderboard
