"""The table of the suite's datasets in ``docs/datasets.md``, written from the cards
(``python scripts/dataset_table.py``; a test checks that the page holds the cards' table)."""

from __future__ import annotations

from collections.abc import Iterable

from rlbench_suite.core.dataset_cards import DATASET_KINDS, DatasetCard
from rlbench_suite.core.wording import score

TABLE_START = "<!-- datasets:start (scripts/dataset_table.py) -->"
TABLE_END = "<!-- datasets:end -->"


def _env_name(card: DatasetCard) -> str:
    return card.name.removesuffix(f"-{card.kind}-v{card.name.rsplit('-v', 1)[1]}")


def data_score(card: DatasetCard) -> str:
    """The normalized score of a card's data as the suite shows it (one decimal, the scale
    of D4RL's tables), ``-`` where the card records no build."""
    return "-" if card.mean_return is None else score(card.normalized_score(card.mean_return))


def table_markdown(cards: Iterable[DatasetCard]) -> str:
    """One row per card (by env name, then D4RL's kind order): id, kind, episodes, steps,
    size of its files, the data's normalized score and the first 12 digits of its content
    hash; ``-`` where the card records no build."""
    order = {kind: i for i, kind in enumerate(DATASET_KINDS)}
    rows = sorted(cards, key=lambda c: (_env_name(c), order[c.kind], c.id))
    lines = ["| id | kind | episodes | steps | size | normalized | content SHA-256 |",
             "| --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for c in rows:
        size = f"{sum(f.size for f in c.files) / 1e6:.2f} MB" if c.files else "-"
        digest = f"`{c.content_sha256[:12]}`" if c.content_sha256 else "-"
        lines.append(f"| `{c.id}` | {c.kind} | {c.episodes or '-'} | {c.steps or '-'} | {size} "
                     f"| {data_score(c)} | {digest} |")  # fmt: skip
    return "\n".join(lines)


def replace_between(text: str, start: str, end: str, body: str) -> str:
    """``text`` with what lies between the marker lines ``start`` and ``end`` replaced by
    ``body`` (a blank line either side); a ``ValueError`` naming a missing marker."""
    for marker in (start, end):
        if marker not in text:
            raise ValueError(f"the page has no marker {marker!r}")
    head, tail = text.index(start) + len(start), text.index(end)
    return text[:head] + "\n\n" + body + "\n\n" + text[tail:]
