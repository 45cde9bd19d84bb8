"""Train the reference zoo (``baselines/zoo.yaml``) and commit its small artifacts.

    python scripts/train_zoo.py                  # every entry, in order; resumable
    python scripts/train_zoo.py --only CartPole  # entries whose id contains CartPole
    python scripts/train_zoo.py --part expert    # only the expert_only entries
    python scripts/train_zoo.py --list           # what is done and what is left
    python scripts/train_zoo.py --summarize      # write the committed baselines onto the cards
    python scripts/train_zoo.py --report         # docs/baselines.md's results, stale previews

Each (entry, seed) trains with ``rlbench train`` into the data dir's ``runs/zoo/`` folder
(resuming an interrupted run from its checkpoint), then is collected into the repository:
``baselines/policies/<env-name>/<algo>/seed-<S>/policy.onnx`` (+ its sidecar), and
``baselines/results/<env-name>/<algo>/seed-<S>/`` holding ``run.json``, ``curve.csv`` and
``result.json``: the harness's evaluation of the committed policy under the card's protocol,
named ``baseline:<env-name>/<algo>/seed-<S>`` so anyone can re-run it. A collected seed is
skipped, so the script can be stopped and started again at any time; run it under ``nice``.
``--summarize`` writes each entry whose seeds are all committed onto its card as a
``[[trained]]`` baseline (IQM over seeds with a 95% interval) and adds the card to the
``rlbench-reference`` suite.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

import numpy as np

from rlbench_suite.baselines.curve_report import plot_curves
from rlbench_suite.baselines.train import TrainConfig, train
from rlbench_suite.baselines.zoo import (
    REFERENCE_SUITE,
    REPORT_END,
    REPORT_START,
    ZooEntry,
    baseline_name,
    beats_random,
    committed_runs,
    copy_run_artifacts,
    policy_card,
    report_markdown,
    reported_runs,
    results_dir,
    seeds_below_random,
    summarize,
    zoo_entries,
)
from rlbench_suite.core.cards import load_card
from rlbench_suite.core.catalog import card_paths, get_card
from rlbench_suite.core.scoring import primary_values, references_separated
from rlbench_suite.evaluation import evaluate
from rlbench_suite.interrupts import run_script
from rlbench_suite.paths import runs_dir
from rlbench_suite.previews import refresh_previews
from rlbench_suite.refscores import measure, write_reference, write_trained
from rlbench_suite.resources import content_dir

DOCS = Path(__file__).resolve().parents[1] / "docs"


def collected(entry: ZooEntry, seed: int) -> bool:
    return (results_dir(get_card(entry.env), entry.algo, seed) / "result.json").is_file()


def train_one(entry: ZooEntry, seed: int) -> Path:
    """Train (or resume, or find finished) one seed; return its run folder."""
    import json

    card = policy_card(entry)
    out = runs_dir() / "zoo"
    run = out / card.name / entry.algo / f"seed-{seed}"
    record = run / "run.json"
    status = json.loads(record.read_text())["status"] if record.is_file() else None
    if status != "finished":
        train(TrainConfig(env_id=card.id, algo=entry.algo, seed=seed, budget=entry.budget,
                          out=out, resume=status is not None))  # fmt: skip
    return run


def collect(entry: ZooEntry, seed: int, run: Path) -> None:
    """Copy the policy and the run's records into the repository; evaluate the copy. A
    ``trained_on`` entry copies only the training record and scores the committed policy of
    the card it was trained on."""
    card = get_card(entry.env)
    name = baseline_name(policy_card(entry), entry.algo, seed)
    result_dir = results_dir(card, entry.algo, seed)
    if entry.trained_on:
        result_dir.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(run / "run.json", result_dir / "run.json")
    else:
        copy_run_artifacts(run, content_dir("baselines") / "policies" / name, result_dir)
    partial = result_dir / "result.json.partial"
    evaluate(card, f"baseline:{name}", workers=1, out=partial)
    partial.with_name(partial.name + ".episodes.jsonl").unlink()
    partial.replace(result_dir / "result.json")


def write_summaries(entries: list[ZooEntry]) -> int:
    """Write every complete entry onto its card; return how many cards carry a baseline.

    A single-agent card without an expert reference gets one first: its best trained seed
    (over every complete entry of the card, ``expert_only`` ones included), measured by
    ``rlbench refscores --policy baseline:...`` (100 reference episodes), kept only if it
    beats the random reference by the normalization's margin. A card joins the
    ``rlbench-reference`` suite only when each of its trained baselines beats its random
    reference: the lower end of the 95% interval over seeds lies above it (``zoo.beats_random``);
    seeds that do not are printed (and show in the interval).
    """
    complete: dict[str, list[tuple[ZooEntry, list]]] = {}
    for entry in entries:
        card = get_card(entry.env)
        runs = committed_runs(card, entry.algo, entry.seeds)
        if len(runs) == len(entry.seeds):
            complete.setdefault(card.id, []).append((entry, runs))
    carried = 0
    for card_id, done in complete.items():
        card = get_card(card_id)
        if card.reference.expert is None and not card.is_multiagent:
            card = add_expert(card, done)
        done = [(entry, runs) for entry, runs in done if not entry.expert_only]
        if not done:
            continue
        trained = sorted((unchanged(card, summarize(card, entry, runs)) for entry, runs in done),
                         key=lambda t: -(t.normalized or t.value).point)  # fmt: skip
        below = {e.algo: seeds for e, runs in done if (seeds := seeds_below_random(card, runs))}
        if below:
            print(f"{card_id}: seeds at or below the random reference: {below}")
        beaten = all(beats_random(card, baseline) for baseline in trained)
        if not beaten:
            print(f"{card_id}: stays out of {REFERENCE_SUITE}: a baseline does not beat random")
        write_trained(card_paths()[card_id], trained, suite=REFERENCE_SUITE, member=beaten)
        carried += 1
    return carried


def unchanged(card, baseline):
    """The card's recorded baseline where only its date would change, else ``baseline``."""
    for old in card.trained:
        if (
            old.name == baseline.name
            and old.model_copy(update={"measured": baseline.measured}) == baseline
        ):
            return old
    return baseline


def add_expert(card, done: list[tuple[ZooEntry, list]]):
    """Measure the best committed seed as the card's expert reference; return the card."""
    entry, best = max(((e, r) for e, runs in done for r in runs),
                      key=lambda pair: float(np.mean(primary_values(card.primary_metric,
                          pair[1].result.returns, pair[1].result.successes))))  # fmt: skip
    spec = f"baseline:{baseline_name(card, entry.algo, best.seed)}"
    expert = measure(card, policy=spec)
    random = card.reference.random
    why = random and references_separated(random.value, random.standard_error,
                                          expert.value, expert.standard_error)  # fmt: skip
    if why:
        print(f"{card.id}: no expert reference from {spec}: {why}")
        return card
    write_reference(card_paths()[card.id], "expert", expert)
    print(f"{card.id}: expert reference {expert.value:.4g} from {spec}")
    return reload_card(card.id)


def write_report() -> None:
    """Regenerate ``docs/images/zoo/`` and the zoo section of ``docs/baselines.md``."""
    runs = reported_runs()
    images = DOCS / "images" / "zoo"
    shutil.rmtree(images, ignore_errors=True)
    images.mkdir(parents=True)
    for env_id in sorted({r.env_id for r in runs}):
        figure = images / f"curves-{get_card(env_id).name}.svg"
        plot_curves([r for r in runs if r.env_id == env_id], figure)
    page = DOCS / "baselines.md"
    text = page.read_text(encoding="utf-8")
    start, end = text.index(REPORT_START), text.index(REPORT_END) + len(REPORT_END)
    section = report_markdown(runs, images.relative_to(DOCS).as_posix())
    page.write_text(text[:start] + section + text[end:], encoding="utf-8")
    print(f"wrote {page} and {len(list(images.iterdir()))} figures in {images}")
    # a card's new expert reference changes the policy its docs preview plays
    zoo_cards = [reload_card(card_id) for card_id in {get_card(e.env).id for e in zoo_entries()}]
    for preview in refresh_previews(DOCS / "previews", sorted(zoo_cards, key=lambda c: c.id)):
        print(preview.summary())


def reload_card(card_id: str):
    """The card as its file says now (the catalog loaded it before it was rewritten)."""
    return load_card(card_paths()[card_id])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="entries whose env id contains this text")
    parser.add_argument("--part", choices=["all", "reference", "expert"], default="all",
                        help="only the reference entries, or only the expert_only ones (two "
                             "processes can train the two parts side by side)")  # fmt: skip
    parser.add_argument("--list", action="store_true", help="show what is done and what is left")
    parser.add_argument("--summarize", action="store_true", help="write baselines onto cards")
    parser.add_argument(
        "--report",
        action="store_true",
        help="regenerate the results table and curves of docs/baselines.md",
    )
    args = parser.parse_args(argv)
    entries = [e for e in zoo_entries(args.only)
               if args.part == "all" or e.expert_only == (args.part == "expert")]  # fmt: skip
    if args.report:
        write_report()
        return 0
    if args.summarize:
        print(f"{write_summaries(entries)} cards carry their trained baselines")
        return 0
    todo = [(e, s) for e in entries for s in e.seeds]
    if args.list:
        for entry, seed in todo:
            mark = "done" if collected(entry, seed) else "todo"
            print(f"{mark}  {entry.env} {entry.algo} seed {seed} ({entry.budget} steps)")
        return 0
    from filelock import FileLock, Timeout

    locks = runs_dir() / "zoo" / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    for number, (entry, seed) in enumerate(todo, start=1):
        if collected(entry, seed):
            continue
        name = baseline_name(get_card(entry.env), entry.algo, seed)
        try:  # processes side by side (--part, --only) never train one seed twice at once
            lock = FileLock(locks / f"{name.replace('/', '__')}.lock", timeout=0)
            lock.acquire()
        except Timeout:
            print(f"[{number}/{len(todo)}] {name}: another process has it; skipped", flush=True)
            continue
        try:
            if collected(entry, seed):
                continue
            started = time.perf_counter()
            print(f"[{number}/{len(todo)}] {entry.env} {entry.algo} seed {seed}", flush=True)
            collect(entry, seed, train_one(entry, seed))
            print(f"[{number}/{len(todo)}] collected {name} in "
                  f"{time.perf_counter() - started:.0f} s", flush=True)  # fmt: skip
        finally:
            lock.release()
    return 0


if __name__ == "__main__":
    run_script(lambda: main(sys.argv[1:]), "run the same command again: collected seeds are "
               "kept, and the seed in training resumes from its last checkpoint")  # fmt: skip
