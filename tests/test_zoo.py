"""The reference zoo: its manifest is trainable, and what is committed is sound.

These tests read the committed results; they never train.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlbench_suite.baselines.algorithms import get_algorithm
from rlbench_suite.baselines.hyperparams import load_hyperparams
from rlbench_suite.baselines.zoo import (
    REFERENCE_SUITE,
    baseline_name,
    beats_random,
    committed_runs,
    policy_card,
    summarize,
    zoo_entries,
)
from rlbench_suite.core.catalog import get_card, select_cards
from rlbench_suite.core.seeds import TRAINING_SEEDS
from rlbench_suite.leaderboard.ranking import budget_class
from rlbench_suite.policies import file_sha256, resolve_baseline

ENTRIES = zoo_entries()


def test_the_manifest_names_cards_algorithms_hyperparameters_and_training_seeds():
    assert len({e.env for e in ENTRIES}) >= 20
    for entry in ENTRIES:
        card = policy_card(entry)  # a scored-only entry's policies are its training card's
        load_hyperparams(get_algorithm(entry.algo), card.id)  # raises if missing
        if entry.trained_on:
            trainer = [e for e in ENTRIES if e.env == entry.trained_on and e.algo == entry.algo]
            assert trainer and (trainer[0].seeds, trainer[0].budget) == (entry.seeds, entry.budget)
            played, scored = card, get_card(entry.env)  # the same game, the same agent
            assert (played.entry_point, played.agent) == (scored.entry_point, scored.agent)
        assert len(set(entry.seeds)) == len(entry.seeds)
        if entry.expert_only:
            assert not card.is_multiagent, "expert references are for single-agent cards"
        else:
            assert len(entry.seeds) >= 3
        assert all(seed in TRAINING_SEEDS for seed in entry.seeds)
        assert entry.budget > 0


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: f"{e.env}-{e.algo}")
def test_every_committed_seed_is_a_harness_result_of_its_committed_policy(entry):
    card = get_card(entry.env)
    for run in committed_runs(card, entry.algo, entry.seeds):
        name = baseline_name(policy_card(entry), entry.algo, run.seed)
        result = run.result
        assert result.env_id == card.id and result.policy["spec"] == f"baseline:{name}"
        assert result.protocol.seeds == card.evaluation.seeds  # the card's own protocol
        policy = resolve_baseline(name)
        assert result.policy["artifact_sha256"] == file_sha256(policy)
        assert policy.stat().st_size < 5 * 1024 * 1024
        assert run.run["budget"] == entry.budget and run.run["status"] == "finished"
        assert run.run["seed"] == run.seed and result.training_budget_steps == run.run["steps"]
        # never past the budget's class (runs before budget_steps trained whole rollouts past it)
        assert budget_class(result.training_budget_steps) == budget_class(entry.budget)
        assert set(result.policy["train_seeds"]) <= set(TRAINING_SEEDS)


def test_the_reference_suite_is_exactly_the_cards_whose_committed_baselines_beat_random():
    complete: dict[str, bool] = {}
    for e in ENTRIES:
        if e.expert_only:
            continue
        card = get_card(e.env)
        runs = committed_runs(card, e.algo, e.seeds)
        if len(runs) == len(e.seeds):
            beaten = beats_random(card, summarize(card, e, runs))
            complete[card.id] = complete.get(card.id, True) and beaten
    members = {c.id for c in select_cards(suite=REFERENCE_SUITE)}
    assert members == {card_id for card_id, beaten in complete.items() if beaten}


@pytest.mark.parametrize("card", select_cards(suite=REFERENCE_SUITE), ids=lambda c: c.id)
def test_every_reference_card_has_a_trained_baseline_that_beats_random(card):
    assert card.trained, card.id
    for baseline in card.trained:
        assert len(baseline.seeds) >= 3
        assert baseline.value.low <= baseline.value.point <= baseline.value.high
        assert baseline.value.point > card.reference.random.value, (card.id, baseline.name)
        folder = resolve_baseline(f"{baseline.name.removeprefix('baseline:')}/seed-"
                                 f"{baseline.seeds[0]}").parent  # fmt: skip
        meta = json.loads((folder / "policy.onnx.meta.json").read_text())
        assert meta["training_budget_steps"] >= baseline.budget_steps


def test_rewriting_a_cards_trained_baselines_leaves_the_file_unchanged(tmp_path):
    """--summarize runs again and again; the card must not grow on each run."""
    from shutil import copyfile

    from rlbench_suite.core.catalog import card_paths
    from rlbench_suite.refscores import write_trained

    card = select_cards(suite=REFERENCE_SUITE)[0]
    path = tmp_path / "card.toml"
    copyfile(card_paths()[card.id], path)
    before = path.read_text()
    write_trained(path, card.trained, suite=REFERENCE_SUITE)
    assert path.read_text() == before
    # a baseline that no longer beats random takes the card out of the suite, and back in after
    write_trained(path, card.trained, suite=REFERENCE_SUITE, member=False)
    from rlbench_suite.core.cards import load_card

    assert REFERENCE_SUITE not in load_card(path).suites and load_card(path).trained
    write_trained(path, card.trained, suite=REFERENCE_SUITE)
    assert REFERENCE_SUITE in load_card(path).suites


def test_beating_random_means_the_interval_over_seeds_lies_above_it():
    from rlbench_suite.baselines.zoo import beats_random
    from rlbench_suite.core.catalog import get_card

    card = get_card("rlbench/Wordle-v0")  # random text commands never win: random is 0
    baseline = card.trained[0]
    lucky = baseline.model_copy(update={"value": baseline.value.model_copy(
        update={"point": 0.007, "low": 0.0, "high": 0.02})})
    assert not beats_random(card, lucky)  # one lucky seed's point estimate is not enough
    clear = lucky.model_copy(update={"value": lucky.value.model_copy(update={"low": 0.001})})
    assert beats_random(card, clear)


def test_the_docs_results_table_and_curves_are_the_committed_results():
    """docs/baselines.md's zoo section is what ``train_zoo.py --report`` makes of the commit."""
    from rlbench_suite.baselines.zoo import REPORT_END, REPORT_START, report_markdown, reported_runs

    docs = Path(__file__).resolve().parents[1] / "docs"
    text = (docs / "baselines.md").read_text(encoding="utf-8")
    section = text[text.index(REPORT_START) : text.index(REPORT_END) + len(REPORT_END)]
    runs = reported_runs()
    assert section == report_markdown(runs, "images/zoo"), (
        "run: python scripts/train_zoo.py --report"
    )
    figures = {p.name for p in (docs / "images" / "zoo").glob("*.svg")}
    assert figures == {f"curves-{get_card(r.env_id).name}.svg" for r in runs}
