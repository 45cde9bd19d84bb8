"""The docs site: it builds with warnings as errors, every environment has its page with its
picture or transcript, and the committed previews are current."""

from __future__ import annotations

import html
import os
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


def test_every_committed_gif_shows_something_happen():
    """Each GIF has at least MIN_DISTINCT_FRAMES differing frames (the review found GoToDoor
    with 2, QuadSwarm with 3), is at least 128 pixels wide (Kitchen's was 112) and its
    manifest entry counts its frames; Gymnasium's locomotion models are filmed by their
    tracking camera (the ant and the cheetah left the fixed one's picture)."""
    from PIL import Image, ImageSequence

    from rlbench_suite.previews import MIN_DISTINCT_FRAMES, preview_key

    manifest = load_manifest(PREVIEWS)
    gifs = {env_id: e for env_id, e in manifest.items() if e["kind"] == "gif"}
    assert len(gifs) >= 40
    for env_id, entry in gifs.items():
        with Image.open(PREVIEWS / entry["file"]) as gif:
            frames = [f.convert("RGB").tobytes() for f in ImageSequence.Iterator(gif)]
            assert gif.width >= 128, (env_id, gif.size)
        assert len(frames) == entry["frames"], env_id
        assert len(set(frames)) >= MIN_DISTINCT_FRAMES, (env_id, len(set(frames)))
    for name in ("Ant-v5", "HalfCheetah-v5", "Hopper-v5", "Walker2d-v5", "Humanoid-v5",
                 "Swimmer-v5"):  # fmt: skip
        entry = manifest[f"rlbench/{name}"]
        assert entry["camera"] == "track" == preview_key(get_card(f"rlbench/{name}"))["camera"]
        assert "rendered by the model's tracking camera 'track'" in entry["notes"]
    for fixed in ("rlbench/Reacher-v5", "rlbench/InvertedPendulum-v5", "rlbench/ArmReach-v0"):
        assert "camera" not in manifest[fixed] and "camera" not in preview_key(get_card(fixed))


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
    assert "# agent 'player_0' against a random opponent" in page
    assert ("`gym.make` plays agent `player_0`; the other agents play uniformly random actions, "
            "legal moves only (the card names no `opponents`)") in page  # fmt: skip
    coop = get_card("rlbench/CoopNav-v0")
    page = env_page_text.env_page(coop, None, everything, env_pages.card_file(coop))
    assert "# agent 'agent_0' beside the card's scripted partners" in page
    assert f"the other agents play `{coop.opponents}` (the card's `opponents`)" in page
    snippet = page.split("## Usage")[1].split("```python")[1].split("```")[0]
    assert "opponent" not in snippet  # partners (the card's field is named `opponents`)
    assert "wall time per run" in page or "No trained baseline yet." in page


def test_an_env_page_gives_the_wall_time_per_run_as_the_zoos_table_does():
    """The page said the wall time summed over seeds; docs/baselines.md says it per run."""
    from rlbench_suite.baselines.curve_report import run_duration

    card = get_card("rlbench/ConnectFour-v3")
    page = env_page_text.env_page(card, None, {card.id: card}, env_pages.card_file(card))
    trained = card.trained[0]
    per_run = run_duration(trained.wall_time_s / len(trained.seeds))
    row = next(line for line in page.splitlines() if line.startswith(f"| `{trained.name}`"))
    assert f"| {per_run} |" in row and "wall time per run" in page
    assert row.count(" | ") == 4  # five columns: nine overflowed Furo's page at 1280 px
    assert f"- `{trained.name}` ({trained.algo}): `baselines/{trained.results}`" in page
    table = (DOCS / "baselines.md").read_text()
    zoo_row = next(line for line in table.splitlines()
                   if line.startswith(f"| {card.id} | {trained.algo} |"))  # fmt: skip
    assert zoo_row.rstrip().endswith(f"| {per_run} |"), (zoo_row, per_run)


def _usage_code(card_id: str) -> str:
    card = get_card(card_id)
    page = env_page_text.env_page(card, None, {card.id: card}, env_pages.card_file(card))
    return page.split("## Usage", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]


@pytest.mark.parametrize("env_id", ["rlbench/Chess-v6", "rlbench/ConnectFour-v3",
                                    "rlbench/TicTacToe-v3", "rlbench/CoopNav-v0",
                                    "rlbench/CartPole-v1"])  # fmt: skip
def test_usage_snippets_play_past_the_first_move(env_id):
    """Chess's snippet sampled from the whole action space: an illegal move ended the game on
    step 1. Masked games sample legal moves (info["action_mask"], obs["action_mask"])."""
    code = _usage_code(env_id)
    gym_part, *games = code.split("\ngame = ")
    namespace: dict = {}
    exec(compile(gym_part, f"{env_id} usage", "exec"), namespace)
    assert namespace["step"] > 1, env_id
    if "action-mask" in get_card(env_id).tags:
        assert 'sample(mask=info["action_mask"])' in gym_part
    for game in games:
        namespace = {}
        exec(compile(gym_part + "\ngame = " + game, f"{env_id} usage", "exec"), namespace)
        assert namespace["step"] > 1, (env_id, game)


def test_tables_name_the_scale_of_a_score_that_is_not_normalized():
    """ConnectFour (no normalized score) showed a raw win rate 0.987 under "trained (normalized
    IQM)", unmarked; DuelVsBotHard's 476 went unexplained (its expert wins 0.21)."""
    connect, duel = get_card("rlbench/ConnectFour-v3"), get_card("rlbench/DuelVsBotHard-v0")
    table = "\n".join(env_page_text.cards_table([connect, duel]))
    assert "trained: IQM, normalized unless a metric is named" in table
    won = env_page_text.interval_text(connect.trained[0].value)
    assert f"| {won} win\\_rate, maskable_ppo |" in table
    assert f"| {env_page_text.interval_text(duel.trained[0].normalized)} ppo |" in table
    page = env_page_text.env_page(duel, None, {duel.id: duel}, env_pages.card_file(duel))
    assert ("The expert reference (`module:rlbench_suite.envs.multiagent.duel.bots:HardBot`, "
            "win\\_rate 0.21) is far below what the trained baseline") in page
    assert "100 is the expert reference's level, not a ceiling" in page
    plain = get_card("rlbench/CartPole-v1")
    assert env_page_text.beyond_expert(plain) == []


def test_reward_and_episode_end_sentences_are_about_the_reward_or_the_end():
    """KukaReach's "end effector" sentences were taken for episode ends, and text games'
    measured figures for their reward."""
    kuka = env_page_text.reward_and_end(get_card("rlbench/KukaReach-v0").description)
    assert len(kuka) == 1 and kuka[0].startswith("Reward: minus the end-effector-to-target")
    maze = env_page_text.reward_and_end(get_card("rlbench/TextMaze-v0").description)
    assert any(s.startswith("Rewards: +1") for s in maze)
    assert not any("Figures over seeds" in s for s in maze)
    pendulum = env_page_text.reward_and_end(get_card("rlbench/Pendulum-v1").description)
    assert pendulum == ["Reward is minus the angle, velocity and torque costs; episodes are cut "
                        "at 200 steps."]  # fmt: skip
    ant = env_page_text.reward_and_end(get_card("rlbench/Ant-v5").description)
    assert len(ant) == 2 and ant[1].startswith("The episode ends when the torso")
    chess = env_page_text.reward_and_end(get_card("rlbench/TextChess-v0").description)
    assert chess[0].startswith("An illegal, ambiguous or unreadable command")  # not the
    # opponent's search ("scored at the leaves") or its horizon, or its measured strength
    for card in env_pages.suite_cards():  # no card's reference or figures sentences
        for said in env_page_text.reward_and_end(card.description):
            assert not said.startswith(("References", "Figures")), (card.id, said)
            assert "on average" not in said and "%" not in said, (card.id, said)


def test_the_api_reference_puts_re_exports_under_their_public_paths():
    import api_pages

    public = api_pages.public_paths()
    assert public["rlbench_suite.registry.make_multiagent"] == "rlbench_suite.make_multiagent"
    assert public["rlbench_suite.datasets.offline.load"] == "rlbench_suite.datasets.load"
    policies = "rlbench_suite.policies"
    assert public[f"{policies}.specs.make_policy"] == f"{policies}.make_policy"
    assert "rlbench_suite.core.result.Result" not in public  # evaluation's re-export: core's
    pages = api_pages.pages()
    assert ".. autofunction:: rlbench_suite.make_multiagent" in pages["toplevel"]
    assert ".. autofunction:: rlbench_suite.datasets.load" in pages["datasets"]
    offline = pages["datasets"].split("## `rlbench_suite.datasets.offline`")[1].split("## ")[0]
    assert ":exclude-members:" in offline and ",load," in offline + ","
    assert "{py:obj}`rlbench_suite.datasets.load`" in offline


def test_markdown_text_is_escaped():
    assert env_page_text.md("a*b*_c_ [x](y) <b> |") == r"a\*b\*\_c\_ \[x\](y) \<b\> \|"
    assert env_page_text.code("a `b` c") == "``a `b` c``"


def _build(src: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", str(src),
         str(out)], capture_output=True, text=True, timeout=1500)  # fmt: skip


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """The site built from a copy of docs/ with a guide added: its folder and the build."""
    tmp_path = tmp_path_factory.mktemp("site")
    src = tmp_path / "docs"
    shutil.copytree(DOCS, src, ignore=shutil.ignore_patterns("_build", "environments", "api"))
    (src / "zz-new-guide.md").write_text("# A guide added later\n\nPicked up by itself.\n")
    return tmp_path / "html", _build(src, tmp_path / "html")


@pytest.mark.slow
def test_the_site_builds_with_no_warning_and_has_every_page(built):
    out, done = built
    assert done.returncode == 0, (done.stdout + done.stderr)[-5000:]
    assert " INFO " not in done.stdout + done.stderr  # alembic's 7 lines, at every build
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
    # re-exports are documented under their public paths, once
    assert 'id="rlbench_suite.datasets.load"' in datasets
    assert 'id="rlbench_suite.datasets.offline.load"' not in datasets
    top = (out / "api" / "toplevel.html").read_text()
    assert 'id="rlbench_suite.make_multiagent"' in top and 'id="rlbench_suite.EnvCard"' in top
    assert 'id="rlbench_suite.registry.make_multiagent"' not in top
    assert 'href="toplevel.html#rlbench_suite.EnvCard"' in api  # core.cards links to it
    assert "rank_env" in leaderboard and "run_pending" in leaderboard


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
WIDER = """() => { const width = document.querySelector('article').clientWidth;
  return [...document.querySelectorAll('article table')].map(t => t.scrollWidth)
    .filter(w => w > width + 2).map(w => `${w} px in ${width} px`); }"""


@pytest.mark.slow
def test_every_table_of_the_guides_and_environment_pages_fits_at_1280_px(built):
    """At 1280 px Furo's content is about 740 px wide: the env pages' nine-column Trained
    baselines table, their reference tables (long policy specs) and the seven-column family
    and suite tables ran past it."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    if not Path(CHROMIUM).is_file():
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    out, done = built
    assert done.returncode == 0
    pages = sorted(out.glob("*.html")) + sorted((out / "tutorials").glob("*.html"))
    pages += sorted((out / "environments").glob("*.html"))
    pages = [p for p in pages if p.name not in ("genindex.html", "search.html")]  # Sphinx's
    wide = {}
    with sync_api.sync_playwright() as playwright:
        args = ["--no-sandbox"] if os.geteuid() == 0 else []
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=args)
        view = browser.new_page(viewport={"width": 1280, "height": 900})
        for page in pages:
            view.goto(page.as_uri())
            if found := view.evaluate(WIDER):
                wide[page.relative_to(out).as_posix()] = found
        browser.close()
    assert len(pages) > 200 and wide == {}
