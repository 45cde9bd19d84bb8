"""``scripts/build_all_datasets.py``: every card built and timed into a scratch cache, the
hash compared, the record resumable (a small card here; the whole set is a maintainer's run)."""

from __future__ import annotations

import json
import os

import pytest

from rlbench_suite.core.dataset_cards import get_dataset_card
from tests.conftest import load_script

SMALL = "rlbench/CartPole-random-v0"


@pytest.fixture
def script(tmp_path, monkeypatch):
    module = load_script("build_all_datasets")
    monkeypatch.setattr(module, "RESULTS", tmp_path / "dataset_builds.json")
    return module


def test_builds_a_card_into_the_scratch_cache_records_it_and_skips_it_next_time(
    script, tmp_path, monkeypatch
):
    cache = tmp_path / "cache"
    monkeypatch.setattr("sys.argv", ["x", "--only", SMALL, "--cache", str(cache)])
    script.main()
    record = json.loads(script.RESULTS.read_text(encoding="utf-8"))
    row = record["builds"][SMALL]
    card = get_dataset_card(SMALL)
    assert row["matched"] and (row["episodes"], row["steps"]) == (card.source.episodes, card.steps)
    assert row["bytes"] == sum(f.size for f in card.files) and row["seconds"] > 0
    folder = cache / "rlbench" / "CartPole-random-v0"
    assert (folder / "data" / "main_data.hdf5").is_file()
    mask = os.umask(0o022)
    os.umask(mask)
    assert folder.stat().st_mode & 0o777 == 0o777 & ~mask  # readable by a server as others
    assert record["machine"]["versions"]["gymnasium"]

    def no_build(*args, **kwargs):
        raise AssertionError("a recorded card was built again")

    monkeypatch.setattr(script, "build", no_build)
    script.main()  # resumed: nothing left to build
    assert json.loads(script.RESULTS.read_text(encoding="utf-8"))["builds"] == record["builds"]


def test_a_build_whose_hash_differs_is_recorded_not_raised(script, tmp_path):
    card = get_dataset_card(SMALL).model_copy(update={"content_sha256": "0" * 64})
    row = script.build_one(card, tmp_path)
    assert row["matched"] is False and "differs from the card's" in row["error"]
    assert not (tmp_path / "rlbench" / "CartPole-random-v0").exists()
