"""Suites, comparisons, figures and tournaments built on evaluation results."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rlbench_suite.core.cards import RefScore
from rlbench_suite.core.catalog import get_card, select_cards
from rlbench_suite.core.metrics import interval_estimates
from rlbench_suite.core.result import load_result
from rlbench_suite.evaluation import suite as suite_module
from rlbench_suite.evaluation.protocols import default_protocol
from rlbench_suite.evaluation.runner import evaluate
from rlbench_suite.evaluation.tournament import round_robin
from tests.conftest import REPO, run_cli

FIRST_LEGAL = "module:tests.toy_policies:first_legal"


@pytest.fixture(scope="module")
def two_results(tmp_path_factory):
    directory = tmp_path_factory.mktemp("results")
    protocol = default_protocol("rlbench/CartPole-v1", episodes=6)
    paths = []
    for spec in ("random", "module:tests.toy_policies:first_legal"):
        path = directory / f"{spec.split(':')[-1]}.json"
        evaluate("rlbench/CartPole-v1", spec, protocol, workers=1, out=path)
        paths.append(path)
    return paths


def test_compare_two_results(two_results):
    proc = run_cli("results", "compare", *map(str, two_results))
    assert proc.returncode == 0, proc.stderr
    assert "P(return of A > return of B) =" in proc.stdout and "return_iqm" in proc.stdout


def test_compare_shows_the_normalized_score_first_with_the_difference():
    """A review: two offline results compared showed returns and successes only; their
    normalized score (D4RL's, the headline number) is a row of its own, with A - B."""
    folder = REPO / "baselines/results/Hopper-medium-v0"
    iql, bc = folder / "iql/seed-0/result.json", folder / "bc/seed-0/result.json"
    proc = run_cli("results", "compare", str(iql), str(bc))
    assert proc.returncode == 0, proc.stderr
    header = next(line for line in proc.stdout.splitlines() if "metric" in line)
    assert [cell.strip() for cell in header.split("┃")[1:-1]] == ["metric", "A", "B", "A - B"]
    rows = [line for line in proc.stdout.splitlines() if "│" in line]
    a, b = (load_result(path).normalized_score for path in (iql, bc))
    cells = [cell.strip() for cell in rows[0].split("│")[1:-1]]  # the headline row first
    assert cells == ["normalized_score", f"{a.point:.4g} [{a.low:.4g}, {a.high:.4g}]",
                     f"{b.point:.4g} [{b.low:.4g}, {b.high:.4g}]",
                     f"{a.point - b.point:+.4g}"]  # fmt: skip
    assert "\x1b" not in proc.stdout
    # results without a normalized score keep their table as it was
    cartpole = [REPO / f"baselines/results/CartPole-v1/ppo/seed-{s}/result.json" for s in (0, 1)]
    assert all(load_result(path).normalized_score is None for path in cartpole)
    plain = run_cli("results", "compare", *map(str, cartpole))
    assert plain.returncode == 0, plain.stderr
    assert "normalized_score" not in plain.stdout and "A - B" not in plain.stdout


def test_compare_refuses_different_protocols(two_results, tmp_path):
    other = tmp_path / "other.json"
    evaluate("rlbench/CartPole-v1", "random", default_protocol("rlbench/CartPole-v1", episodes=3),
             workers=1, out=other)  # fmt: skip
    proc = run_cli("results", "compare", str(two_results[0]), str(other))
    assert proc.returncode == 2 and "different protocols" in proc.stderr


def test_plot_writes_png_and_svg(two_results, tmp_path):
    for name in ("fig.png", "fig.svg"):
        proc = run_cli("results", "plot", *map(str, two_results), "--out", str(tmp_path / name))
        assert proc.returncode == 0, proc.stderr
        assert (tmp_path / name).stat().st_size > 5000
    assert (tmp_path / "fig.png").read_bytes()[:4] == b"\x89PNG"
    proc = run_cli("results", "plot", str(two_results[0]), "--out", str(tmp_path / "fig.jpg"))
    assert proc.returncode == 2 and "must end in .png or .svg" in proc.stderr


def test_suite_benchmark_and_resume(tmp_path):
    args = ["benchmark", "classic-control", "--policy", "random", "--episodes", "2",
            "--workers", "1", "--out-dir", str(tmp_path)]  # fmt: skip
    proc = run_cli(*args)
    assert proc.returncode == 0, proc.stderr
    directory = tmp_path / "classic-control" / "random"
    summary = json.loads((directory / "summary.json").read_text())
    # the cards with both references (the zoo gives them experts) are aggregated, the rest not
    scored = {c.id for c in select_cards(suite="classic-control") if c.reference_values()}
    assert len(summary["results"]) == 5 and len(summary["unscored"]) == 5 - len(scored)
    assert set(summary["unscored"]).isdisjoint(scored)
    assert (summary["aggregates"] == {}) == (not scored)
    stamps = {p.name: p.stat().st_mtime_ns for p in directory.glob("*-v*.json")}
    assert len(stamps) == 5
    again = run_cli(*args, "--resume")
    assert again.returncode == 0, again.stderr
    assert {p.name: p.stat().st_mtime_ns for p in directory.glob("*-v*.json")} == stamps
    unknown = run_cli("benchmark", "classic-controll", "--policy", "random")
    assert unknown.returncode == 2 and "accepted: box2d, classic-control" in unknown.stderr


def test_suite_aggregate_over_normalized_scores(monkeypatch, two_results):
    from rlbench_suite.core.result import load_result

    card = get_card("rlbench/CartPole-v1")
    expert = RefScore(**{**card.reference.random.model_dump(), "value": 500.0, "policy": "x"})
    scored = card.model_copy(
        update={"reference": card.reference.model_copy(update={"expert": expert})}
    )
    monkeypatch.setattr(suite_module, "get_card", lambda env_id: scored)
    results = [load_result(p) for p in two_results]
    summary = suite_module.summarize_suite("s", "p", results, {})
    random = card.reference.random.value
    columns = [100 * (np.array(r.returns) - random) / (500.0 - random) for r in results]
    matrix = np.stack(columns, axis=1)
    expected = interval_estimates(matrix, reps=2000, random_state=0)
    assert summary.scored == ["rlbench/CartPole-v1"] * 2
    assert summary.aggregates["iqm"].point == pytest.approx(expected["iqm"].point)
    assert summary.aggregates["mean"].low == pytest.approx(expected["mean"].low)


def test_tournament_is_reproducible_and_consistent():
    first = round_robin("rlbench/TicTacToe-v3", ["random", FIRST_LEGAL], games=8)
    second = round_robin("rlbench/TicTacToe-v3", ["random", FIRST_LEGAL], games=8)
    assert [(s.spec, s.wins, s.draws, s.losses) for s in first] == [
        (s.spec, s.wins, s.draws, s.losses) for s in second
    ]
    assert all(s.wins + s.draws + s.losses == 8 for s in first)
    assert sum(s.wins for s in first) == sum(s.losses for s in first)
    assert sum(s.rating.point for s in first) == pytest.approx(2000.0)
    better, worse = first
    assert better.rating.point >= worse.rating.point
    assert (better.wins - better.losses) >= (worse.wins - worse.losses)


def test_tournament_refuses_bad_setups():
    with pytest.raises(ValueError, match="single-agent"):
        round_robin("rlbench/CartPole-v1", ["random", FIRST_LEGAL])
    with pytest.raises(ValueError, match="at least two players"):
        round_robin("rlbench/TicTacToe-v3", ["random"])
    with pytest.raises(ValueError, match=r"'random' is given 2 times.*A=SPEC, B=SPEC"):
        round_robin("rlbench/TicTacToe-v3", ["random", FIRST_LEGAL, " random"])
    with pytest.raises(ValueError, match=r"'random' is given 2 times"):  # the same player named
        round_robin("rlbench/TicTacToe-v3", ["random", "random=random", FIRST_LEGAL])
    proc = run_cli("tournament", "rlbench/TicTacToe-v3", "--policy", "random", "--policy",
                   FIRST_LEGAL, "--games", "4")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Elo" in proc.stdout and "95% interval" in proc.stdout


DUEL_BOT = "module:rlbench_suite.baselines.scripted.duel:{}"


def test_tournament_table_names_policies_shortly_and_bounds_a_perfect_record_from_below():
    proc = run_cli("tournament", "rlbench/Duel-v0", "--policy", "random",
                   "--policy", DUEL_BOT.format("EasyBot"),
                   "--policy", "Hard=" + DUEL_BOT.format("HardBot"),
                   "--games", "10", env={"COLUMNS": "80"})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = {line.split()[1]: line for line in proc.stdout.splitlines() if line.startswith("│")}
    assert set(rows) == {"random", "EasyBot", "Hard"} and "…" not in proc.stdout
    assert all(len(line) <= 80 for line in rows.values())
    hard = rows["Hard"].split("│")
    assert hard[3].strip().endswith(", ∞)") and hard[4:7] == [" 20 ", " 0 ", "  0 "]
    text = " ".join(proc.stdout.split())  # the notes below the table wrap at 80 columns
    assert "Hard won every game: its games bound its rating only from below" in text
    assert "one virtual draw per pairing (a Jeffreys prior" in text
    assert "Hard = " + DUEL_BOT.format("HardBot") in proc.stdout
    assert "EasyBot = " + DUEL_BOT.format("EasyBot") in proc.stdout


def test_tournament_refuses_a_label_given_twice():
    with pytest.raises(ValueError, match="label 'A' is given to more than one policy"):
        round_robin("rlbench/TicTacToe-v3", ["A=random", "A=" + FIRST_LEGAL], games=2)


def test_a_duel_double_knock_out_is_a_tournament_draw(monkeypatch):
    """On a card with an [outcome] rule a game whose two returns are within its draw_within
    of 0 is drawn, whichever return is higher (Duel's double knock-out: chip damage only);
    elsewhere, and past the rule, the higher return wins."""
    from rlbench_suite.core.catalog import get_card
    from rlbench_suite.evaluation import tournament

    rule = get_card("rlbench/Duel-v0").outcome
    assert rule is not None
    assert tournament.game_score(0.02, -0.02, rule.draw_within) == 0.5
    assert tournament.game_score(0.02, -0.02) == 1.0  # no rule: the higher return wins
    assert tournament.game_score(1.1, -1.1, rule.draw_within) == 1.0
    assert tournament.game_score(-1.05, 1.05, rule.draw_within) == 0.0
    def double_knock_out(env_id, players, seed):
        return dict(zip(players, (0.03, -0.03), strict=True))

    monkeypatch.setattr(tournament, "play_game", double_knock_out)
    standings = round_robin("rlbench/Duel-v0", ["random", f"Easy={DUEL_BOT.format('EasyBot')}"],
                            games=4, reps=50)  # fmt: skip
    assert [(s.wins, s.draws, s.losses) for s in standings] == [(0, 4, 0), (0, 4, 0)]
