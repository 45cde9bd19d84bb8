"""Tournament Elo on the Duel family's pages, on SQLite and PostgreSQL: rated from the
stored results' games and the cards' measured references, with intervals; a fresh database
says that no method has played yet; non-competitive envs show none."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from rlbench_suite.leaderboard.app import create_app
from rlbench_suite.leaderboard.importer import import_files
from rlbench_suite.leaderboard.startup import prepare_database
from tests.leaderboard_support import ZOO_ENVS, ZOO_RESULTS, leaderboard_cards

DUEL = ("rlbench/Duel-v0", "rlbench/DuelVsBot-v0", "rlbench/DuelVsBotEasy-v0",
        "rlbench/DuelVsBotHard-v0")  # fmt: skip
EASY = "rlbench/DuelVsBotEasy-v0"


@pytest.fixture(scope="module")
def random_on_easy(tmp_path_factory):
    """A real Result of the random policy against the easy bot (the harness, the protocol)."""
    from rlbench_suite.evaluation import evaluate

    path = tmp_path_factory.mktemp("duel") / "random-easy.json"
    evaluate(EASY, "random", workers=1, out=path)
    return path


def site(db_url: str, results=()):
    cards, spec_hash = leaderboard_cards((*DUEL, *ZOO_ENVS))
    factory = prepare_database(db_url, cards, spec_hash)
    if results:
        assert import_files(factory, results[0], method=results[1]).refused == []
    return factory


def players(table) -> dict[tuple[str, str], dict]:
    return {(p["kind"], p["name"]): p for p in table["players"]}


def test_a_fresh_database_rates_the_references_and_says_no_method_played(db_url):
    factory = site(db_url)
    with TestClient(create_app(factory)) as client:
        page = client.get("/envs/rlbench/DuelVsBot-v0").text
        table = client.get("/api/envs/rlbench/DuelVsBot-v0/elo").json()
    factory.kw["bind"].dispose()
    assert "<h2>Tournament Elo</h2>" in page
    assert "No method has results on these environments yet" in page
    assert table["method_games"] == 0 and table["envs"] == sorted(DUEL)
    rated = players(table)
    assert {kind for kind, _ in rated} == {"reference", "opponent"}
    assert rated[("reference", "random")]["elo"] == {"point": 1000.0, "low": 1000.0, "high": 1000.0}
    # the ladder is ordered: hard above medium above easy
    levels = [rated[("opponent", f"built-in (level={v})")]["elo"]["point"]
              for v in ("easy", "medium", "hard")]  # fmt: skip
    assert levels == sorted(levels)
    assert 'class="opponent"' in page and "[1000, 1000]" in page


def test_a_draw_counts_as_half_a_win(db_url):
    """Random against random on Duel-v0 (the random reference, anchored at 1000, against the
    card's random opponent: one policy on both sides) draws 28 of its 100 rounds on time.
    Scored half a win each, the two rate alike; counted as losses they were some 150 Elo
    apart."""
    from rlbench_suite.core.catalog import get_card

    factory = site(db_url)
    with TestClient(create_app(factory)) as client:
        table = client.get("/api/envs/rlbench/Duel-v0/elo").json()
        page = client.get("/envs/rlbench/Duel-v0").text
    factory.kw["bind"].dispose()
    rated = players(table)
    mine, theirs = rated[("reference", "random")], rated[("opponent", "random")]
    randoms = [get_card(e).reference.random for e in DUEL]
    assert (mine["wins"], mine["draws"], mine["games"]) == (
        sum(round(r.value * r.episodes) for r in randoms), sum(r.draws for r in randoms), 400
    )
    # the opponent played the random reference (30 won, 28 drawn, 42 lost) and HardBot (lost all)
    assert (theirs["wins"], theirs["draws"], theirs["games"]) == (42, 28, 200)
    assert mine["elo"]["point"] == 1000.0
    assert theirs["elo"]["low"] < 1000.0 < theirs["elo"]["high"]
    assert abs(theirs["elo"]["point"] - 1000.0) < 60
    assert "a draw counts as half a win" in page and "<th>won / drawn / lost</th>" in page
    assert "<td>42 / 28 / 130</td>" in page


def test_stored_results_rate_their_methods_from_their_games(db_url, random_on_easy):
    factory = site(db_url, (ZOO_RESULTS, None))
    assert import_files(factory, [random_on_easy], method="HardBot").refused == []
    with TestClient(create_app(factory)) as client:
        table = client.get("/api/envs/rlbench/Duel-v0/elo").json()
        page = client.get("/envs/rlbench/Duel-v0").text
    factory.kw["bind"].dispose()
    zoo = [json.loads(p.read_text()) for p in ZOO_RESULTS]
    zoo_games = [s for d in zoo if d["env_id"] in table["envs"] for s in d["successes"]]
    document = json.loads(random_on_easy.read_text())
    mine = document["successes"]
    drawn = [not s and abs(r) <= 0.5 for r, s in zip(document["returns"], mine, strict=True)]
    rated = players(table)
    ppo, impostor = rated[("method", "zoo-ppo")], rated[("method", "HardBot")]
    assert (ppo["wins"], ppo["games"]) == (sum(zoo_games), len(zoo_games))
    assert (impostor["wins"], impostor["draws"], impostor["games"]) == (
        sum(mine), sum(drawn), len(mine)
    )
    assert table["method_games"] == len(zoo_games) + len(mine)
    # a method named like a reference is its own player: the reference's games are its own
    expert = rated[("reference", "HardBot")]
    assert expert["games"] == 4 * 100 and expert["elo"]["point"] > impostor["elo"]["point"]
    assert ppo["elo"]["point"] > impostor["elo"]["point"]
    if all(zoo_games):  # won every game: bounded only from below
        assert ppo["elo"]["high"] is None and ppo["elo"]["low"] is not None
        assert "&infin;]" in page
    low, high = impostor["elo"]["low"], impostor["elo"]["high"]
    assert low < impostor["elo"]["point"] < high
    assert "No method has results" not in page
    assert '<a href="/methods/zoo-ppo">zoo-ppo</a>' in page


def test_the_tournament_rates_the_games_the_rankings_filter_keeps(db_url, random_on_easy):
    """The review: Elo took self-reported games while the ranking beside it showed only
    verified runs. With ``verification=verified`` no self-reported game is rated."""
    factory = site(db_url)
    assert import_files(factory, [random_on_easy], method="random-easy").refused == []
    with TestClient(create_app(factory)) as client:
        every = client.get("/api/envs/rlbench/Duel-v0/elo").json()
        mine = client.get("/api/envs/rlbench/Duel-v0/elo?verification=self-reported").json()
        verified = client.get("/api/envs/rlbench/Duel-v0/elo?verification=verified").json()
        page = client.get("/envs/rlbench/Duel-v0?verification=verified").text
        wrong = client.get("/api/envs/rlbench/Duel-v0/elo?verification=maybe")
    factory.kw["bind"].dispose()
    games = len(json.loads(random_on_easy.read_text())["successes"])
    assert every["method_games"] == mine["method_games"] == games
    assert ("method", "random-easy") in players(mine)
    assert verified["method_games"] == 0
    assert {kind for kind, _ in players(verified)} == {"reference", "opponent"}
    assert "No method has results on these environments yet" in page
    assert wrong.status_code == 422 and "unknown verification level 'maybe'" in wrong.text


def test_non_competitive_environments_have_no_tournament(db_url):
    factory = site(db_url)
    with TestClient(create_app(factory)) as client:
        page = client.get("/envs/rlbench/CartPole-v1")
        answer = client.get("/api/envs/rlbench/CartPole-v1/elo")
    factory.kw["bind"].dispose()
    assert page.status_code == 200 and "Tournament Elo" not in page.text
    assert answer.status_code == 404
    assert "not a competitive environment" in answer.json()["detail"]
