"""A data dir holding small suite datasets, built once per test session (shared fixture)."""

from __future__ import annotations

from pathlib import Path

import pytest

CONTINUOUS = "rlbench/Pendulum-random-v0"  # random actions: the quickest continuous build
DISCRETE = "rlbench/CartPole-random-v0"


@pytest.fixture(scope="session")
def offline_data(tmp_path_factory) -> Path:
    """``RLBENCH_DATA_DIR`` with :data:`CONTINUOUS` and :data:`DISCRETE` built into its cache
    (the builds match the cards' hashes, as a download would)."""
    pytest.importorskip("h5py")
    from rlbench_suite.core.dataset_cards import get_dataset_card
    from rlbench_suite.datasets.builder import build
    from rlbench_suite.datasets.cache import dataset_folder

    root = tmp_path_factory.mktemp("offline-data")
    for dataset_id in (CONTINUOUS, DISCRETE):
        card = get_dataset_card(dataset_id)
        build(card, dataset_folder(card, root / "datasets"), expect_content=card.content_sha256)
    return root


@pytest.fixture
def data_dir(offline_data, monkeypatch) -> Path:
    monkeypatch.setenv("RLBENCH_DATA_DIR", str(offline_data))
    return offline_data
