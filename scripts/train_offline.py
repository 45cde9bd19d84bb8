"""Train the offline baselines (``baselines/offline.yaml``) and commit their small artifacts.

    OMP_NUM_THREADS=1 nohup nice -n 19 python scripts/train_offline.py &   # resumable
    python scripts/train_offline.py --only QuadHover   # entries whose dataset id contains it
    python scripts/train_offline.py --list             # what is done and what is left
    python scripts/train_offline.py --report           # docs/datasets.md's offline table

Each (entry, seed) trains with ``rlbench train <offline id> --algo ALGO`` into the data dir's
``runs/offline/`` folder (resuming an interrupted run from its checkpoint; the datasets must
be in the cache: ``rlbench datasets download ID``, or ``--build``), then is collected into the
repository: ``baselines/policies/<Env>-<kind>-vN/<algo>/seed-<S>/policy.onnx`` (+ sidecar) and
``baselines/results/<Env>-<kind>-vN/<algo>/seed-<S>/`` with ``run.json``, ``curve.csv`` and
``result.json``: the harness's evaluation of the committed policy on the offline id (the
dataset's normalization), named ``baseline:<Env>-<kind>-vN/<algo>/seed-<S>``. A collected
seed is skipped, so the script can be stopped and started again at any time; one committed
for another budget, other data or other hyperparameters than the manifest, the card and the
entry now have is stale and trains again (``--list`` says why). The manifest's consecutive
entries of one env form a block whose seeds go round-robin (every entry of the block trains
its first seed before any trains its second).
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from collections import Counter
from pathlib import Path

from rlbench_suite.baselines.offline_zoo import (
    REPORT_END,
    REPORT_START,
    OfflineEntry,
    baseline_name,
    offline_entries,
    replace_report,
    report_markdown,
    result_folder,
    stale_reason,
)
from rlbench_suite.baselines.train import TrainConfig, train
from rlbench_suite.baselines.zoo import copy_run_artifacts
from rlbench_suite.core.offline_cards import resolve_card
from rlbench_suite.datasets.cache import cache_root, dataset_folder
from rlbench_suite.evaluation import default_protocol, evaluate
from rlbench_suite.interrupts import run_script
from rlbench_suite.paths import runs_dir
from rlbench_suite.resources import content_dir

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _train_one(entry: OfflineEntry, seed: int) -> Path:
    out = runs_dir() / "offline"
    config = TrainConfig(entry.dataset, entry.algo, seed=seed, budget=entry.budget, out=out,
                         eval_every=max(1, entry.budget // 4), eval_episodes=2,
                         final_episodes=1)  # fmt: skip
    run_dir = out / entry.card.name / entry.algo / f"seed-{seed}"
    record = run_dir / "run.json"
    run = json.loads(record.read_text(encoding="utf-8")) if record.is_file() else None
    if run is not None and (why := stale_reason(entry, run)):
        print(f"{run_dir}: starting again ({why})", flush=True)
        shutil.rmtree(run_dir)
        run = None
    if run is None or run.get("status") != "finished":
        config.resume = run is not None
        train(config)
    return run_dir


def _collect(entry: OfflineEntry, seed: int, run_dir: Path) -> None:
    name = baseline_name(entry.dataset, entry.algo, seed)
    policies = content_dir("baselines") / "policies" / name
    results = result_folder(entry.dataset, entry.algo, seed)
    copy_run_artifacts(run_dir, policies, results)
    card = resolve_card(entry.dataset)
    protocol = default_protocol(card)  # the offline id's: core.offline_cards.EVAL_EPISODES
    tmp = results / ".result.json.tmp"
    log = tmp.with_name(tmp.name + ".episodes.jsonl")  # an evaluation stopped midway goes on
    evaluate(card, f"baseline:{name}", protocol, workers=1, out=tmp, resume=log.is_file())
    tmp.replace(results / "result.json")
    for leftover in results.glob(".result.json.tmp*"):
        leftover.unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="entries whose dataset id contains this")
    parser.add_argument("--list", action="store_true", help="what is done and what is left")
    parser.add_argument("--report", action="store_true", help="write docs/datasets.md's table")
    args = parser.parse_args()
    entries = [e for e in offline_entries() if not args.only or args.only in e.dataset]
    if args.report:
        page = DOCS / "datasets.md"
        text = page.read_text(encoding="utf-8")
        if REPORT_START not in text or REPORT_END not in text:
            raise SystemExit(f"{page} has no {REPORT_START} ... {REPORT_END} markers")
        page.write_text(replace_report(text, report_markdown(offline_entries())), encoding="utf-8")
        print(f"wrote the offline baselines' table into {page}")
        return
    if not entries:
        raise SystemExit(f"no entry of the manifest has a dataset id containing {args.only!r}")
    order = [(entry, seed, _state(entry, seed)) for entry, seed in _order(entries)]
    missing = sorted({e.dataset for e, _, state in order if state != "done"
                      and not dataset_folder(e.card).is_dir()})  # fmt: skip
    fetch = (f"{len(missing)} dataset{'s' * (len(missing) != 1)} to train on not in the "
             f"cache ({cache_root()}): "
             f"run\n  rlbench datasets download {' '.join(missing)} --build")  # fmt: skip
    if args.list:
        for entry, seed, state in order:
            print(f"{state.split(' ')[0]:5} {entry.dataset} {entry.algo} seed {seed} "
                  f"({entry.budget} gradient steps){state[5:]}")  # fmt: skip
        counts = Counter(state.split(" ")[0] for _, _, state in order)
        print(", ".join(f"{counts[k]} {k}" for k in ("done", "stale", "todo")) + " seeds")
        if missing:
            print(fetch)
        return
    if missing:
        raise SystemExit(fetch)
    for entry, seed, state in order:
        if state == "done":
            continue
        started = time.perf_counter()
        run_dir = _train_one(entry, seed)
        _collect(entry, seed, run_dir)
        print(f"{entry.dataset} {entry.algo} seed {seed}: "
              f"{time.perf_counter() - started:.0f} s", flush=True)  # fmt: skip


def _state(entry: OfflineEntry, seed: int) -> str:
    """``done``, ``todo``, or ``stale (why)``: committed for a budget, data or hyperparameters
    the manifest, card and entry no longer have (``offline_zoo.stale_reason``), so it trains
    again (and replaces the committed files)."""
    folder = result_folder(entry.dataset, entry.algo, seed)
    if not (folder / "result.json").is_file():
        return "todo"
    why = stale_reason(entry, json.loads((folder / "run.json").read_text(encoding="utf-8")))
    return f"stale ({why})" if why else "done"


def _order(entries: list[OfflineEntry]) -> list[tuple[OfflineEntry, int]]:
    """The (entry, seed) pairs in training order: the manifest's consecutive entries of one
    env form a block, and a block trains its entries' first seeds before their second."""
    blocks: list[list[OfflineEntry]] = []
    for entry in entries:
        if blocks and blocks[-1][0].card.env_id == entry.card.env_id:
            blocks[-1].append(entry)
        else:
            blocks.append([entry])
    order = []
    for block in blocks:
        rounds = max(len(e.seeds) for e in block)
        order += [(e, e.seeds[i]) for i in range(rounds) for e in block if i < len(e.seeds)]
    return order


if __name__ == "__main__":
    run_script(main, "run the same command again: collected seeds are kept, and the seed in "
               "training resumes from its last checkpoint")  # fmt: skip
