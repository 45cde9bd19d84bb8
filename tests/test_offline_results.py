"""The committed offline baselines (``baselines/offline.yaml``, ``scripts/train_offline.py``):
their artifacts, the sanity ordering D4RL's benchmarks show, and the docs' table. Read from
the committed files; nothing trains here."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from rlbench_suite.baselines.algorithms import get_algorithm
from rlbench_suite.baselines.hyperparams import load_hyperparams
from rlbench_suite.baselines.offline_zoo import (
    REPORT_END,
    REPORT_START,
    baseline_name,
    offline_entries,
    report_markdown,
    result_folder,
    scores_by_dataset,
    stale_reason,
)
from rlbench_suite.core.dataset_cards import get_dataset_card
from rlbench_suite.core.offline_cards import resolve_card
from rlbench_suite.core.seeds import TRAINING_SEEDS
from rlbench_suite.evaluation import default_protocol
from rlbench_suite.resources import content_dir
from tests.conftest import load_script

ENTRIES = offline_entries()
COMMITTED = scores_by_dataset(ENTRIES)
DOCS = Path(__file__).resolve().parents[1] / "docs" / "datasets.md"


def _env(dataset_id: str) -> str:
    return get_dataset_card(dataset_id).env_id


def _mean(runs, attr: str) -> float:
    return float(np.mean([getattr(r, attr) for r in runs]))


def test_every_manifest_entry_trains_an_offline_algorithm_with_committed_hyperparameters():
    assert ENTRIES
    for entry in ENTRIES:
        algo = get_algorithm(entry.algo)
        assert algo.offline, entry
        params = load_hyperparams(algo, [entry.dataset, _env(entry.dataset)])
        assert params.entry.source.reference
        assert entry.budget > 0 and all(s in TRAINING_SEEDS for s in entry.seeds)
        # `rlbench train ID --algo A` with no --budget trains what the committed seeds trained
        assert params.entry.n_timesteps == entry.budget, (entry, params.path)


def test_the_first_entries_are_committed():
    """The sanity checks below run on what is committed; QuadHover's medium and expert data
    (the first entries) are."""
    for kind in ("medium", "expert"):
        row = COMMITTED.get(f"rlbench/QuadHover-{kind}-v0", {})
        assert {"bc", "iql", "td3bc"} <= set(row), f"QuadHover-{kind}: {sorted(row)}"


def test_each_committed_seed_is_whole_small_and_scored_on_its_dataset():
    for dataset_id, row in COMMITTED.items():
        card = get_dataset_card(dataset_id)
        protocol = default_protocol(resolve_card(dataset_id))
        for algo, runs in row.items():
            for run in runs:
                name = baseline_name(dataset_id, algo, run.seed)
                folder = result_folder(dataset_id, algo, run.seed)
                policy = content_dir("baselines") / "policies" / name / "policy.onnx"
                files = [folder / f for f in ("run.json", "curve.csv", "result.json")]
                for path in [*files, policy, policy.with_name("policy.onnx.meta.json")]:
                    assert path.is_file() and path.stat().st_size < 5 * 1024 * 1024, path
                assert run.run["status"] == "finished" and run.run["steps"] == run.entry.budget
                assert run.stale() is None, f"{name}: {run.stale()}"
                result = run.result
                assert result.env_id == dataset_id and result.policy["name"] == name
                assert result.normalization.references_from == f"dataset {dataset_id}"
                assert not set(result.seeds) & set(run.run["train_seeds"])
                assert result.protocol_hash == protocol.hash  # the leaderboard takes it
                scores = card.normalized_score(np.array(result.returns))
                assert result.normalized_score.point == pytest.approx(float(np.mean(scores)))


def test_a_seed_trained_for_another_budget_or_other_data_is_stale_and_trains_again(
    tmp_path, monkeypatch
):
    """The manifest's budget, the card's data or the entry's hyperparameters changing makes a
    committed seed stale: the script lists it so and trains it again rather than skipping it."""
    entry = ENTRIES[0]
    runs = COMMITTED[entry.dataset][entry.algo]
    run = dict(runs[0].run)
    assert stale_reason(entry, run) is None
    assert "the manifest asks" in stale_reason(dataclasses.replace(entry, budget=1), run)
    changed = {**run, "dataset": {**run["dataset"], "content_sha256": "0" * 64}}
    assert f"the card's is {entry.card.content_sha256}" in stale_reason(entry, changed)
    key, value = next(iter(load_hyperparams(get_algorithm(entry.algo), [entry.dataset,
                                            _env(entry.dataset)]).algo_kwargs.items()))  # fmt: skip
    tuned = {**run, "hyperparams": {**run["hyperparams"], key: f"not {value}"}}
    assert f"trained with {key} 'not {value}'" in stale_reason(entry, tuned)
    raw = {**run, "hyperparams": {**run["hyperparams"], "normalize": False}}
    assert "trained with normalize False" in stale_reason(entry, raw)  # the data's, not SB3's

    script = load_script("train_offline")
    assert script._state(entry, runs[0].seed) == "done"
    assert script._state(dataclasses.replace(entry, budget=1), runs[0].seed).startswith("stale (")
    monkeypatch.setattr(script, "result_folder", lambda *a: tmp_path)
    assert script._state(entry, runs[0].seed) == "todo"

    # work to do on data not in the cache: one message naming the command, before training
    monkeypatch.setenv("RLBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr("sys.argv", ["train_offline.py", "--only", entry.dataset])
    monkeypatch.setattr(script, "train", lambda *a: pytest.fail("trained without its data"))
    with pytest.raises(SystemExit, match=f"download {entry.dataset} --build"):
        script.main()


MEDIUM = [d for d, row in COMMITTED.items() if get_dataset_card(d).kind == "medium"
          and "bc" in row and ({"td3bc", "iql"} & set(row))]  # fmt: skip
EXPERT = [d for d in COMMITTED if get_dataset_card(d).kind == "expert"]


CEILING = 99.5
"""Scores from here up are the expert's: where BC and the best of TD3+BC and IQL are both
there, a tie is no failure of the ordering (nothing is left to beat)."""
KNOWN_VIOLATIONS = {
    "rlbench/Ant-medium-v0": (
        "BC 30.6 against TD3+BC 25.9 and IQL 23.9 (3 seeds; 2000, 5000, 20000 gradient steps; "
        "TD3+BC's alpha 0.1 and IQL's beta 10, chosen on tuning seeds). The data is D4RL's "
        "medium, the zoo run's policy at 1,060,864 of 3M steps played deterministically (24.8 "
        "normalized; the policy scores 31.3 over 20 evaluation episodes, standing still about "
        "23): BC clones it (28.9 to 33.1). With one action per state the data gives TD3+BC and "
        "IQL little to weigh. On tuning seeds (5 episodes a trial, 2 seeds) BC scored 27.5, "
        "TD3+BC -1.5 to 16.8 over alpha 2.5 to 0.1, IQL 23.8 with beta 3 and 32.1 with beta 10; "
        "on the evaluation seeds IQL with beta 3 (CORL's) scored 28.5 and with beta 10 23.9: "
        "within the noise of each other and of BC. Data from that policy with Gaussian noise of "
        "std 0.1 (28.5 normalized) left BC, IQL and TD3+BC within noise too (a pilot, not kept); "
        "so did 200 episodes with std 0.1 or 0.2 (BC 27.1 and 27.9, TD3+BC 29.3 and 26.4, IQL "
        "24.6 with 0.1; tuning seeds, 2 seeds x 20 episodes). A policy further along the run, "
        "whose deterministic data scores a third (34.5), gave BC 36.6, TD3+BC 24.1, IQL 33.4 "
        "(docs/datasets.md). Training longer on the committed data (100,000 gradient steps, "
        "tuning seeds) brought TD3+BC to 28.3 and IQL to 29.1, against BC's 28.6 there; IQL "
        "with beta 30 or 100 or expectile 0.9 stayed within noise of BC (4 seeds: beta 100 30.0, "
        "BC 29.2); so did D4RL's construction, later policies sampling their own actions (data "
        "23.3 and 27.1: BC 42.3 and 37.1, TD3+BC 40.4 and 34.0, IQL 29.7 and 32.4); and CORL's "
        "256-unit networks in place of 64 (4 tuning seeds: BC 34.1, TD3+BC 26.5, IQL 27.0; at 64 "
        "29.2, 22.7 and 29.9)"
    ),
}
"""Where the committed results break the ordering, and why as far as known: reported, not
tuned away (a strict xfail, so a re-trained result that holds the ordering says so)."""


@pytest.mark.parametrize(
    "dataset_id",
    [pytest.param(d, marks=pytest.mark.xfail(reason=KNOWN_VIOLATIONS[d], strict=True))
     if d in KNOWN_VIOLATIONS else d for d in MEDIUM],
)  # fmt: skip
def test_on_medium_data_td3bc_or_iql_beats_bc(dataset_id):
    row = COMMITTED[dataset_id]
    bc = _mean(row["bc"], "score")
    best = max(_mean(row[a], "score") for a in ("td3bc", "iql") if a in row)
    scores = {a: round(_mean(r, "score"), 1) for a, r in row.items()}
    assert best > bc or min(best, bc) >= CEILING, scores


EXPERT_VIOLATIONS: dict[tuple[str, str], str] = {}
"""(dataset, algorithm) pairs whose committed results fall below the random data's return, and
why as far as known. None now: CQL's on Pendulum's expert data went when it got 3000 steps with
a policy rate of 3e-4 (at 1000 steps with CORL's 3e-5 it returned -1395 against the random
data's -1233), and TD3+BC's on Ant's expert data when its alpha went from 2.5 to 0.1 (at 2.5:
-17.0 normalized, its actor driven by early Q estimates to costly actions; at 0.1: 91.1; the
grid in baselines/hyperparams/td3bc.yaml)."""


@pytest.mark.parametrize(
    ("dataset_id", "algo"),
    [pytest.param(d, a, marks=pytest.mark.xfail(reason=EXPERT_VIOLATIONS[d, a], strict=True))
     if (d, a) in EXPERT_VIOLATIONS else (d, a) for d in EXPERT for a in COMMITTED[d]],
)  # fmt: skip
def test_on_expert_data_every_algorithm_beats_the_random_datas_return(dataset_id, algo):
    random_data = get_dataset_card(dataset_id.replace("-expert-", "-random-"))
    assert random_data.mean_return is not None
    assert _mean(COMMITTED[dataset_id][algo], "mean_return") > random_data.mean_return


def test_the_docs_table_is_generated_from_the_committed_results():
    text = DOCS.read_text(encoding="utf-8")
    start, end = text.index(REPORT_START) + len(REPORT_START), text.index(REPORT_END)
    assert text[start:end].strip() == report_markdown(ENTRIES).strip(), (
        "run `python scripts/train_offline.py --report`"
    )
    for dataset_id in COMMITTED:
        assert f"`{dataset_id}`" in text[start:end]
