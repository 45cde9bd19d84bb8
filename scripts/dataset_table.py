"""Write the datasets table of ``docs/datasets.md`` from the dataset cards.

    .venv/bin/python scripts/dataset_table.py          # rewrite the table in place
    .venv/bin/python scripts/dataset_table.py --check  # exit 1 when the page is stale
"""

from __future__ import annotations

import sys
from pathlib import Path

from rlbench_suite.core.dataset_cards import dataset_cards
from rlbench_suite.datasets.table import TABLE_END, TABLE_START, replace_between, table_markdown

PAGE = Path(__file__).resolve().parents[1] / "docs" / "datasets.md"


def main(argv: list[str]) -> int:
    old = PAGE.read_text(encoding="utf-8")
    new = replace_between(old, TABLE_START, TABLE_END, table_markdown(dataset_cards().values()))
    if "--check" in argv:
        if new != old:
            print(f"{PAGE} is stale: run python scripts/dataset_table.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(new, encoding="utf-8")
    print(f"wrote the table of {len(dataset_cards())} datasets in {PAGE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
