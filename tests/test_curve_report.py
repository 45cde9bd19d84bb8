"""Learning curves and score tables of training runs (``rlbench results curves``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from typer.testing import CliRunner

from rlbench_suite.baselines.curve_report import (
    build_report,
    curve_band,
    find_runs,
    load_run,
    score_table,
    table_markdown,
)
from rlbench_suite.baselines.curves import append_row
from rlbench_suite.cli import app
from rlbench_suite.core.catalog import get_card
from rlbench_suite.core.metrics import interval_estimates
from rlbench_suite.core.summary import BOOTSTRAP_REPS, BOOTSTRAP_SEED

SCORED = "rlbench/DuelVsBot-v0"  # a card with references: normalized scores
UNSCORED = "rlbench/MPE-SimpleSpread-v3"  # no expert reference (mpe2 original): mean returns


def _run(
    root: Path,
    env_id: str,
    algo: str,
    seed: int,
    points: list[tuple[int, float]],
    final: float,
    wall: float = 10.0,
) -> Path:
    """A run folder in the zoo's committed layout, with a curve and a final result."""
    folder = root / get_card(env_id).name / algo / f"seed-{seed}"
    folder.mkdir(parents=True)
    run = {
        "env_id": env_id,
        "algo": algo,
        "seed": seed,
        "budget": points[-1][0],
        "steps": points[-1][0],
        "wall_time_s": wall,
    }
    (folder / "run.json").write_text(json.dumps(run))
    for step, value in points:
        append_row(
            folder / "curve.csv",
            {
                "step": step,
                "wall_time_s": 0.0,
                "episodes": 5,
                "mean_return": value * 2,
                "std_return": 0.0,
                "mean_length": 10.0,
                "success_rate": 0.5,
                "normalized_score": value,
            },
        )
    result = {
        "aggregates": {"return_mean": {"point": final * 2}},
        "normalized_score": {"point": final},
    }
    (folder / "result.json").write_text(json.dumps(result))
    return folder


def _iqm(values) -> tuple[float, float, float]:
    e = interval_estimates(
        np.array(values)[:, None], ["iqm"], reps=BOOTSTRAP_REPS, random_state=BOOTSTRAP_SEED
    )["iqm"]
    return e.point, e.low, e.high


def test_curve_band_is_the_iqm_across_seeds_on_shared_steps(tmp_path):
    _run(tmp_path, SCORED, "ppo", 0, [(0, 0.0), (100, 10.0), (200, 20.0)], 20.0)
    _run(tmp_path, SCORED, "ppo", 1, [(0, 0.0), (100, 30.0), (200, 60.0), (300, 70.0)], 70.0)
    _run(tmp_path, SCORED, "ppo", 2, [(0, 4.0), (150, 40.0), (200, 50.0)], 50.0)
    runs = [load_run(p) for p in find_runs([tmp_path])]
    band = curve_band(runs)
    assert band["normalized"] and band["seeds"] == 3
    assert list(band["steps"]) == [0, 100, 150, 200]  # up to the shortest run
    at_100 = [10.0, 30.0, 4.0 + (40.0 - 4.0) * 100 / 150]  # seed 2 interpolated
    assert (band["iqm"][1], band["low"][1], band["high"][1]) == pytest.approx(_iqm(at_100))
    (row,) = score_table(runs)
    assert (row["iqm"], row["low"], row["high"]) == pytest.approx(_iqm([20.0, 70.0, 50.0]))
    assert row["seeds"] == 3 and row["budget"] == 300 and row["normalized"]


def test_an_env_without_references_is_scored_by_mean_return(tmp_path):
    _run(tmp_path, UNSCORED, "dqn", 0, [(0, 1.0), (50, 2.0)], 3.0)
    (run,) = [load_run(p) for p in find_runs([tmp_path / "MPE-SimpleSpread-v3" / "dqn" / "seed-0"])]
    assert not run.normalized and run.final == 6.0
    assert list(curve_band([run])["iqm"]) == [2.0, 4.0]
    line = table_markdown(score_table([run])).splitlines()[2]
    assert line == "| rlbench/MPE-SimpleSpread-v3 | dqn | 50 | 1 | 6 [6, 6] (return) | 10 s |"


def test_an_env_ranked_by_win_rate_without_references_is_scored_by_its_win_rate():
    """ConnectFour has no normalized score and is ranked by win rate: the zoo's table showed
    its mean return, marked "(return)", at one decimal (1.0 [0.9, 1.0])."""
    root = Path(__file__).resolve().parents[1] / "baselines" / "results" / "ConnectFour-v3"
    runs = [load_run(p) for p in find_runs([root])]
    assert runs and all(not r.normalized and r.metric == "win_rate" for r in runs)
    for run in runs:
        result = json.loads((run.dir / "result.json").read_text())
        assert run.final == result["aggregates"]["success_rate"]["point"]
    (row,) = score_table(runs)
    line = table_markdown([row]).splitlines()[2]
    cell = (f"{row['iqm']:.3g} [{row['low']:.3g}, {row['high']:.3g}] (win_rate)")
    assert f"| {cell} |" in line and "(return)" not in line


def test_build_report_regenerates_the_same_figures_and_table(tmp_path):
    root = tmp_path / "baselines" / "results"
    for seed, final in enumerate([20.0, 40.0, 60.0, 80.0]):
        _run(root, SCORED, "ppo", seed, [(0, 0.0), (100, final)], final, wall=30.0 + seed)
    _run(root, UNSCORED, "a2c", 0, [(0, 1.0), (50, 2.0)], 3.0)
    first = build_report(root, tmp_path / "docs")
    expected = ["curves-DuelVsBot-v0.svg", "curves-MPE-SimpleSpread-v3.svg", "table.md"]
    assert sorted(first) == expected
    table = first["table.md"].read_text()
    assert "| rlbench/DuelVsBot-v0 | ppo | 100 | 4 | 50.0 [" in table and "| 32 s |" in table
    before = {name: path.read_bytes() for name, path in first.items()}
    second = build_report(root, tmp_path / "docs")
    assert {name: path.read_bytes() for name, path in second.items()} == before


def test_results_curves_command_writes_png_and_markdown(tmp_path):
    run = _run(tmp_path, SCORED, "sac", 3, [(0, 0.0), (10, 5.0)], 5.0)
    out, table = tmp_path / "fig.png", tmp_path / "t.md"
    runner = CliRunner()
    result = runner.invoke(
        app, ["results", "curves", str(run / "run.json"), "--out", str(out), "--table", str(table)]
    )
    assert result.exit_code == 0, result.output
    assert out.read_bytes()[:4] == b"\x89PNG" and "| sac |" in table.read_text()
    result = runner.invoke(app, ["results", "curves", str(run), "--out", str(tmp_path / "f.pdf")])
    assert result.exit_code == 2 and ".png or .svg" in result.output
    result = runner.invoke(app, ["results", "curves", str(tmp_path / "none"), "--out", str(out)])
    assert result.exit_code == 2 and "neither a run folder" in result.output


def test_a_run_scored_before_its_card_had_references_is_normalized_with_the_cards_references(
    tmp_path,
):
    """The zoo trains a card, then measures its expert from the best seed: the committed
    curve and result carry no normalized score, yet the report normalizes them."""
    folder = _run(tmp_path, SCORED, "ppo", 0, [(0, 0.0), (100, 10.0)], 0.0)
    (folder / "result.json").write_text(json.dumps(
        {"aggregates": {"return_mean": {"point": 1.0}, "success_rate": {"point": 0.75}},
         "normalized_score": None}))  # fmt: skip
    rows = (
        (folder / "curve.csv").read_text().replace(",0.0\n", ",nan\n").replace(",10.0\n", ",nan\n")
    )
    (folder / "curve.csv").write_text(rows)
    card = get_card(SCORED)
    random, expert = card.reference_values()
    run = load_run(folder)
    assert run.normalized
    metric = 0.75 if card.primary_metric != "return" else 1.0
    assert run.final == pytest.approx(100 * (metric - random) / (expert - random))
    curve_metric = 0.5 if card.primary_metric != "return" else 20.0
    assert run.curve[-1]["normalized_score"] == pytest.approx(
        100 * (curve_metric - random) / (expert - random)
    )
