"""Small dataset cards and builds shared by the dataset tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlbench_suite.core.catalog import get_card
from rlbench_suite.core.dataset_cards import DatasetCard
from rlbench_suite.core.seeds import DATASET_SEEDS

CARD_REFERENCES = """[reference.random]
value = 18.5
policy = "random"
episodes = 1
seeds = [10000]
suite_version = "0.1.0"
measured = 2026-11-22

[reference.expert]
value = 500.0
policy = "baseline:CartPole-v1/ppo/seed-0"
episodes = 1
seeds = [10000]
suite_version = "0.1.0"
measured = 2026-11-22
"""
"""The ``[reference]`` tables of a CartPole dataset card (TOML), for cards the tests write."""


def small_card(episodes: int = 4, epsilon: float = 0.5, **changes: Any) -> DatasetCard:
    """A small CartPole card (random data with a scripted-free policy: epsilon-random expert)."""
    env = get_card("rlbench/CartPole-v1")
    data: dict[str, Any] = {
        "id": "rlbench/CartPole-medium-v0",
        "env_id": env.id,
        "kind": "medium",
        "description": "A small CartPole dataset made by the tests.",
        "source": {"policies": [{"policy": "baseline:CartPole-v1/ppo/seed-0",
                                 "episodes": episodes, "epsilon": epsilon}]},
        "build": {"command": "test", "seed": DATASET_SEEDS.start},
        "reference": {"random": env.reference.random.model_dump(),  # type: ignore[union-attr]
                      "expert": env.reference.expert.model_dump()},  # type: ignore[union-attr]
    }  # fmt: skip
    data.update(changes)
    return DatasetCard.model_validate(data)


def built_card(card: DatasetCard, root: Path) -> DatasetCard:
    """Build ``card`` into the cache ``root``; the card with the build's hashes recorded."""
    from rlbench_suite.datasets.builder import build
    from rlbench_suite.datasets.cache import dataset_folder

    out = build(card, dataset_folder(card, root))
    return card.model_copy(update={"files": out.files, "content_sha256": out.content_sha256,
                                   "episodes": out.episodes, "steps": out.steps,
                                   "mean_return": out.mean_return})  # fmt: skip


def published_card(root: Path, episodes: int) -> tuple[DatasetCard, Path]:
    """A small CartPole card built into ``root / "cache"`` and published to ``root / "mirror"``:
    (the card with its hashes, the mirror folder)."""
    from rlbench_suite.datasets.remotes import publish

    card = built_card(small_card(episodes=episodes, epsilon=0.3), root / "cache")
    publish(card, str(root / "mirror"), root / "cache")
    return card, root / "mirror"


def assert_card_refused(path: Path, text: str, expected: list[str]) -> None:
    """Write the card ``text`` to ``path``: loading it fails naming the file and each of
    ``expected``."""
    import pytest

    from rlbench_suite.core.cards import CardError
    from rlbench_suite.core.dataset_cards import load_dataset_card

    path.write_text(text)
    with pytest.raises(CardError) as info:
        load_dataset_card(path)
    message = str(info.value)
    assert str(path) in message
    for item in expected:
        assert item in message, message
