"""The README and the docs say what exists: every command, every link, no missing document."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
import typer.main

from rlbench_suite.cli import app
from rlbench_suite.core.catalog import cards, select_cards
from rlbench_suite.core.dataset_cards import dataset_cards

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = sorted((ROOT / "docs").glob("*.md"))
GENERATED = ("environments/", "api/", "docs/environments/", "docs/api/")
"""Folders of pages the docs build writes (docs/_ext), absent from a fresh checkout."""


def commands(group: click.Group, prefix: str = "rlbench") -> list[str]:
    """Every command line of the app, groups expanded (``rlbench results show``)."""
    found = []
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            found += commands(command, f"{prefix} {name}")
        else:
            found.append(f"{prefix} {name}")
    return found


def test_the_readme_lists_every_command():
    every = commands(typer.main.get_command(app))
    assert "rlbench benchmark" in every and "rlbench train" in every
    missing = [c for c in every if f"`{c}" not in README]
    assert missing == [], f"README's command table lacks {missing}"


@pytest.mark.parametrize("page", [ROOT / "README.md", *DOCS], ids=lambda p: p.name)
def test_every_relative_link_resolves(page):
    text = page.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if "://" in target or target.startswith(GENERATED):
            continue  # generated pages: the docs build checks those links (tests/test_docs_site.py)
        assert (page.parent / target).exists(), f"{page.name} links to missing {target}"


def test_the_readme_claims_only_what_exists():
    assert "DESIGN.md" not in README  # not in the repository; docs/architecture.md is
    here, _, _ = README.partition("Not here yet")
    if not select_cards(family="offline") and not dataset_cards():
        assert "offline" not in here.lower()  # offline data and baselines come with datasets
    assert f"{len(cards())} environment cards" in here  # the count the README gives is true
