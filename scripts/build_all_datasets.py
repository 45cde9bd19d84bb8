"""Build every dataset card from source, one after another, and time each build.

    OMP_NUM_THREADS=2 nohup python scripts/build_all_datasets.py &   # resumable
    python scripts/build_all_datasets.py --only Ant                  # ids containing it
    python scripts/build_all_datasets.py --report                    # the table, from the JSON

What the issue's budget ("the whole set builds in under an hour on 2 cores") and a maintainer's
release check need: each card is built as ``rlbench datasets build ID`` builds it (a staging
folder, the content hash compared with the card's) into a scratch cache (default
``$RLBENCH_DATA_DIR/build-all/``, never the real cache), and its wall time, episodes, steps and
whether the hash was the card's are written to ``benchmarks/results/dataset_builds.json`` after
each card, with the machine's CPU and package versions. A card already recorded for this CPU and
these versions is skipped, so the script can be stopped and started again; ``--fresh`` starts
over. A mismatch is recorded with its cause (data built on another CPU kind, a training run's:
``builder.mismatch_cause``), not raised: the other cards still build.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from rlbench_suite.cli.datasets_common import episode_progress
from rlbench_suite.core.dataset_cards import dataset_cards
from rlbench_suite.core.provenance import cpu_platform
from rlbench_suite.datasets.builder import BuildMismatchError, build, build_versions
from rlbench_suite.datasets.cache import dataset_folder
from rlbench_suite.paths import data_dir

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "dataset_builds.json"
console = Console()


def _machine() -> dict:
    return {"cpu": cpu_platform(), "cores": os.cpu_count(), "versions": build_versions(),
            "omp_num_threads": os.environ.get("OMP_NUM_THREADS")}  # fmt: skip


def _save(record: dict) -> None:
    tmp = RESULTS.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    tmp.replace(RESULTS)


def _load(fresh: bool) -> dict:
    machine = _machine()
    if not fresh and RESULTS.is_file():
        record = json.loads(RESULTS.read_text(encoding="utf-8"))
        same = ("cpu", "versions")
        if all(record["machine"].get(k) == machine[k] for k in same):
            return record
        console.print(
            f"{RESULTS} records builds on another CPU or other package versions; "
            "starting a new record (it is replaced at the first build)",
            highlight=False,
        )
    return {"machine": machine, "builds": {}}


def build_one(card, cache: Path) -> dict:
    """Build ``card`` into ``cache``; its row (seconds, episodes, steps, hash matched)."""
    started = time.perf_counter()
    row = {"kind": card.kind, "env_id": card.env_id, "card_cpu": card.build.cpu}
    try:
        with episode_progress(card) as progress:
            out = build(card, dataset_folder(card, cache), progress,  # type: ignore[arg-type]
                        expect_content=card.content_sha256)  # fmt: skip
        row.update(matched=True, episodes=out.episodes, steps=out.steps,
                   bytes=sum(f.size for f in out.files))  # fmt: skip
    except BuildMismatchError as exc:
        row.update(matched=False, error=str(exc))
    row["seconds"] = round(time.perf_counter() - started, 2)
    row["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return row


def report(record: dict) -> Table:
    builds = record["builds"]
    table = Table(title=f"dataset builds on {record['machine']['cpu']}")
    for column in ("dataset", "seconds", "steps", "hash"):
        table.add_column(column, justify="left" if column == "dataset" else "right")
    for dataset_id, row in builds.items():
        table.add_row(dataset_id, f"{row['seconds']:.1f}", str(row.get("steps", "-")),
                      "card's" if row["matched"] else "differs")  # fmt: skip
    total = sum(r["seconds"] for r in builds.values())
    matched = sum(r["matched"] for r in builds.values())
    table.caption = (
        f"the record's {len(builds)} builds took {total / 60:.1f} minutes in all; {matched} "
        f"gave the card's content hash, {len(builds) - matched} did not"
    )
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="cards whose id contains this")
    parser.add_argument("--cache", type=Path, help="scratch cache (default: data dir/build-all)")
    parser.add_argument("--fresh", action="store_true", help="forget earlier builds' times")
    parser.add_argument("--report", action="store_true", help="print the table and stop")
    args = parser.parse_args()
    record = _load(args.fresh)
    if args.report:
        console.print(report(record))
        return
    cache = args.cache or data_dir() / "build-all"
    cards = [c for i, c in sorted(dataset_cards().items()) if not args.only or args.only in i]
    if not cards:
        raise SystemExit(f"no dataset card's id contains {args.only!r}")
    recorded = [c.id for c in cards if c.id in record["builds"]]
    if recorded:
        console.print(f"{len(recorded)} of the {len(cards)} cards are recorded already "
                      f"(skipped; --fresh builds them again)", highlight=False)  # fmt: skip
    for card in cards:
        if card.id in record["builds"] or not card.built:
            continue
        row = build_one(card, cache)
        record["builds"][card.id] = row
        _save(record)
        state = "the card's hash" if row["matched"] else "a different hash"
        console.print(f"{card.id}: {row['seconds']:.1f} s, {state}", highlight=False)
    console.print(report(record))


if __name__ == "__main__":
    main()
