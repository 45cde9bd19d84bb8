"""Build the docs site, or bring its environment previews up to date.

    python scripts/build_docs.py html [--out DIR]     # the site (warnings are errors)
    python scripts/build_docs.py previews [IDS...]    # make missing or stale previews
    python scripts/build_docs.py previews --force     # make them all again (about 2 min)
    python scripts/build_docs.py check                # list stale previews; exit 1 if any
    python scripts/build_docs.py pages                # write the generated pages only

The previews (``docs/previews/``: a GIF per environment that renders rgb_array frames, a
transcript for the others, and ``manifest.json`` saying how each was made) are committed:
they are small (about 2.3 MB for 211 cards) and take minutes to make, while the site builds
in about a minute from them. A build makes any missing or stale one itself (see
``docs/_ext/env_pages.py``); ``check`` is what the tests run to keep the committed set
current. The pictures are made by ``rlbench_suite.previews``, the code behind
``rlbench info ID --render``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS / "_ext"))

import api_pages  # noqa: E402
import env_pages  # noqa: E402

from rlbench_suite.core.catalog import get_card  # noqa: E402
from rlbench_suite.previews import refresh_previews, stale_previews  # noqa: E402


def html(out: Path, builder: str = "html") -> int:
    """``sphinx-build -W --keep-going`` of ``docs/`` into ``out``; its exit status."""
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", builder,
               str(DOCS), str(out)]  # fmt: skip
    started = time.perf_counter()
    status = subprocess.call(command)
    print(f"sphinx-build {'succeeded' if status == 0 else 'FAILED'} in "
          f"{time.perf_counter() - started:.0f} s: {out / 'index.html'}")  # fmt: skip
    return status


def previews(ids: list[str], force: bool) -> int:
    selected = [get_card(i) for i in ids] if ids else env_pages.suite_cards()
    started = time.perf_counter()
    made = refresh_previews(DOCS / env_pages.PREVIEWS, selected, force=force,
                            on_card=lambda c: print(f"rendering {c.id}", flush=True))  # fmt: skip
    for preview in made:
        print(preview.summary())
    total = sum(p.stat().st_size for p in (DOCS / env_pages.PREVIEWS).iterdir())
    print(f"{len(made)} previews made in {time.perf_counter() - started:.0f} s; the folder "
          f"holds {total / 1e6:.2f} MB")  # fmt: skip
    return 0


def check() -> int:
    stale = stale_previews(DOCS / env_pages.PREVIEWS, env_pages.suite_cards())
    for env_id, why in stale.items():
        print(f"{env_id}: {why}")
    if stale:
        print(f"{len(stale)} stale previews: run python scripts/build_docs.py previews")
        return 1
    print("every preview is current")
    return 0


def pages() -> int:
    counts = env_pages.generate(DOCS, render=False)
    counts["api pages written"] = api_pages.write(DOCS / "api")["pages written"]
    print(counts)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("html", help="build the site")
    build.add_argument("--out", type=Path, default=DOCS / "_build" / "html")
    made = commands.add_parser("previews", help="make missing or stale previews")
    made.add_argument("ids", nargs="*", help="only these ids")
    made.add_argument("--force", action="store_true", help="make them even if current")
    commands.add_parser("check", help="list stale previews; exit 1 if any")
    commands.add_parser("pages", help="write the generated pages without Sphinx")
    args = parser.parse_args(argv)
    if args.command == "html":
        return html(args.out)
    if args.command == "previews":
        return previews(args.ids, args.force)
    return check() if args.command == "check" else pages()


if __name__ == "__main__":
    sys.exit(main())
