"""Sphinx extension: the environment pages, generated from the cards at every build.

When the builder starts it brings ``previews/`` (next to ``conf.py``) up to date, making the
previews that are missing or stale with ``rlbench_suite.previews`` (the code behind
``rlbench info ID --render``), then writes ``environments/``: an index, a page per family and
per suite, and a page per card of the suite's own catalog. A file is written only when its
text changes (so Sphinx re-reads only those), and pages of cards that no longer exist are
removed. ``python scripts/build_docs.py pages`` does the same without Sphinx.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

from env_page_text import (
    Group,
    env_page,
    family_page,
    family_text,
    group_text,
    index_text,
    page_name,
    suite_page,
    suite_text,
)

from rlbench_suite.core.cards import SUITE_NAMESPACE, EnvCard, Family
from rlbench_suite.core.catalog import (
    card_paths,
    cards,
    family_key,
    family_label,
    generated_families,
)
from rlbench_suite.previews import load_manifest, refresh_previews
from rlbench_suite.resources import content_dir

PREVIEWS = "previews"
PAGES = "environments"


def suite_cards() -> list[EnvCard]:
    """The suite's own cards (``rlbench/`` ids), by family then name."""
    order = {family: i for i, family in enumerate(get_args(Family))}
    own = [c for c in cards().values() if c.namespace == SUITE_NAMESPACE]
    return sorted(own, key=lambda c: (order[c.family], c.name.lower()))


def card_file(card: EnvCard) -> str:
    """The card's file relative to the repository root (``envs/classic/CartPole-v1.toml``)."""
    path = card_paths()[card.id]
    try:
        return "envs/" + path.relative_to(content_dir("envs")).as_posix()
    except ValueError:
        return path.name


def generate(
    srcdir: str | Path, *, render: bool = True, log: Callable[[str], Any] = print
) -> dict[str, int]:
    """Refresh the previews (if ``render``) and write the pages under ``srcdir``; counts of
    pages written, left as they were and removed, and of previews made."""
    srcdir = Path(srcdir)
    selected = suite_cards()
    made = []
    if render:
        made = refresh_previews(
            srcdir / PREVIEWS, selected, on_card=lambda c: log(f"rendering the preview of {c.id}")
        )
    manifest = load_manifest(srcdir / PREVIEWS)
    for entry in manifest.values():
        if entry["kind"] == "transcript":
            path = srcdir / PREVIEWS / entry["file"]
            entry["text"] = path.read_text(encoding="utf-8") if path.is_file() else ""
    pages = _pages(selected, manifest)
    counts = write_pages(srcdir / PAGES, pages)
    return counts | {"previews made": len(made)}


def _groups(members: list[EnvCard]) -> list[EnvCard | Group]:
    """The cards in order, each generated family (as ``rlbench list`` gathers them) replaced by
    one :class:`Group`."""
    entries: list[EnvCard | Group] = []
    for group in generated_families(members):
        if len(group) == 1:
            entries.append(group[0])
            continue
        slug = re.sub(r"[^A-Za-z0-9-]+", "-", family_key(group[0].name).replace("#", "N"))
        entries.append(Group(family_label([c.name for c in group]), f"group-{slug}",
                             tuple(group)))  # fmt: skip
    return entries


def _pages(selected: list[EnvCard], manifest: dict[str, dict[str, Any]]) -> dict[str, str]:
    by_family: dict[str, list[EnvCard]] = {}
    by_suite: dict[str, list[EnvCard]] = {}
    for card in selected:
        by_family.setdefault(card.family, []).append(card)
        for suite in card.suites:
            by_suite.setdefault(suite, []).append(card)
    by_suite = dict(sorted(by_suite.items()))
    everything = {c.id: c for c in selected}
    pages = {"index": index_text(by_family, by_suite)}
    group_of: dict[str, Group] = {}
    for family, members in by_family.items():
        entries = _groups(members)
        pages[family_page(family)] = family_text(family, entries)
        for group in (e for e in entries if isinstance(e, Group)):
            pages[group.page] = group_text(group)
            group_of.update({c.id: group for c in group.members})
    for suite, members in by_suite.items():
        pages[suite_page(suite)] = suite_text(suite, _groups(members))
    for card in selected:
        pages[page_name(card)] = env_page(card, manifest.get(card.id), everything,
                                          card_file(card), group_of.get(card.id))  # fmt: skip
    return pages


def write_pages(out: Path, pages: dict[str, str]) -> dict[str, int]:
    """Write ``out/<name>.md`` for each page whose text changed; remove the other ``.md``."""
    out.mkdir(parents=True, exist_ok=True)
    counts = {"pages written": 0, "pages unchanged": 0, "pages removed": 0}
    for name, text in pages.items():
        path = out / f"{name}.md"
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            counts["pages unchanged"] += 1
            continue
        path.write_text(text, encoding="utf-8")
        counts["pages written"] += 1
    for path in out.glob("*.md"):
        if path.stem not in pages:
            path.unlink()
            counts["pages removed"] += 1
    return counts


def _on_builder_inited(app: Any) -> None:
    from sphinx.util import logging

    logger = logging.getLogger(__name__)
    counts = generate(app.srcdir, render=app.config.rlbench_render_previews, log=logger.info)
    logger.info("environment pages: " + json.dumps(counts))


def setup(app: Any) -> dict[str, Any]:
    app.add_config_value("rlbench_render_previews", True, "env")
    app.connect("builder-inited", _on_builder_inited)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
