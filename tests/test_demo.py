"""``rlbench demo``: the quick run end to end (its summary table, the rows in its database,
the dataset it downloaded), a second run serving the site, and its errors: a failing step,
a taken port, an unknown dataset, Ctrl-C."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np
import pytest
from sqlalchemy import create_engine, text

from rlbench_suite.core.catalog import get_card
from rlbench_suite.core.dataset_cards import get_dataset_card
from rlbench_suite.core.metrics import success_rate
from rlbench_suite.core.result import load_result
from rlbench_suite.core.summary import normalized_values
from rlbench_suite.datasets.cache import verify
from rlbench_suite.demo.defaults import DEFAULT_DATASET
from rlbench_suite.demo.suite import committed_baselines, quick_suite
from rlbench_suite.demo.summary import interval
from rlbench_suite.evaluation import default_protocol
from rlbench_suite.policies.core import file_sha256
from tests.conftest import as_a_foreground_job

ROOT = Path(__file__).resolve().parents[1]
QUAD = "rlbench/QuadHover-v0"


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
    env.pop("COLUMNS", None)  # piped: one wide line per table row
    return env


def _command(*args: str) -> list[str]:
    return [sys.executable, "-m", "rlbench_suite.cli", "demo", *args]


def run_demo(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(_command(*args), capture_output=True, text=True, timeout=timeout,
                          env=_env(), cwd=ROOT)  # fmt: skip


@pytest.fixture(scope="module")
def quick(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    data = tmp_path_factory.mktemp("demo") / "data"
    done = run_demo("--quick", "--no-serve", "--data-dir", str(data))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return data, done


def table_rows(stdout: str) -> dict[str, list[str]]:
    """The summary table's rows by env id (cells split on rich's vertical bars; the table
    leaves out the ids' rlbench/ namespace and the baselines' baseline: scheme)."""
    rows = {}
    for line in stdout.split("The demo's results on the leaderboard", 1)[1].splitlines():
        cells = [c.strip() for c in line.strip().strip("│").split("│")]
        if len(cells) == 5 and cells[0] and not line.lstrip().startswith("┃"):
            assert not cells[0].startswith("rlbench/") and not cells[1].startswith("baseline:")
            rows["rlbench/" + cells[0]] = cells
    return rows


def stored(data: Path) -> list[dict]:
    engine = create_engine(f"sqlite:///{data / 'leaderboard' / 'leaderboard.sqlite'}")
    with engine.connect() as connection:
        rows = connection.execute(
            text(
                "SELECT r.id, r.env_id, r.protocol_hash, r.verification, r.artifact_sha256, "
                "r.episodes, m.name AS method FROM results r JOIN methods m ON m.id = r.method_id"
            )
        )
        return [dict(row._mapping) for row in rows]  # fmt: skip


def method_description(data: Path, name: str) -> str | None:
    engine = create_engine(f"sqlite:///{data / 'leaderboard' / 'leaderboard.sqlite'}")
    with engine.connect() as connection:
        return connection.execute(text("SELECT description FROM methods WHERE name = :n"),
                                  {"n": name}).scalar_one()  # fmt: skip


@pytest.mark.slow
def test_the_summary_table_has_every_picked_baseline_and_the_trained_quadrotor(quick):
    _, done = quick
    rows = table_rows(done.stdout)
    picks = quick_suite(1)
    assert {p.card.family for p in picks} == {p.card.family for p in committed_baselines()}
    assert set(rows) == {p.card.id for p in picks} | {QUAD}
    for pick in picks:
        _, baseline, score, over, verified = rows[pick.card.id]
        assert baseline == pick.label == f"{pick.algo} seed {pick.seed}"  # the env not again
        assert re.fullmatch(r"-?[\d.e+-]+ \[-?[\d.e+-]+, -?[\d.e+-]+\]", score), score
        assert re.fullmatch(r"\d+ runs, \d+ verified", over), over
        assert verified in ("yes", "no")
    assert rows[QUAD][1] == "demo: fast_ppo trained just now" and rows[QUAD][4] == "yes"
    assert "every evaluation ran its card's full protocol" in done.stdout
    assert "\x1b[" not in done.stdout  # piped: no ANSI codes


@pytest.mark.slow
def test_quick_training_is_a_step_budget_and_its_shortfall_is_said_plainly(quick):
    """--quick trains 2 updates, whatever the machine's load, far from the goal: the demo says
    so after training and in the summary, not only "verified: yes"."""
    _, done = quick
    out = done.stdout
    assert re.search(r"trained 65,536 steps with 2048 drones in [\d.]+ s \([\d,]+ steps/s\)", out)
    assert re.search(r"training did not reach success 0\.9 on the batched backend \(best "
                     r"[\d.]+ at [\d,]+ steps\) within its budget of 65,536 steps; rerun "
                     r"with --train-steps 131072", out)  # fmt: skip
    summary = out.split("The demo's results on the leaderboard", 1)[1]
    assert re.search(rf"short of its goal: {QUAD} \(demo: fast_ppo trained just now\): "
                     r"success [\d.]+ on PyBullet, below the goal of 0\.9", summary)  # fmt: skip


def test_a_run_stopped_by_the_wall_time_cap_says_how_to_rerun():
    from rlbench_suite.demo.quad import Screen, stop_reason

    best = Screen(steps=1_200_000, seconds=240.0, success_rate=0.4, mean_return=380.0)
    said = stop_reason(best, 1_200_000, 240.0, 3_276_800, 240.0)
    assert said == ("did not reach success 0.9 on the batched backend (best 0.40 at 1,200,000 "
                    "steps) in 240 s at 5,000 steps/s, 1,200,000 of the 3,276,800-step budget: "
                    "the machine is busy; rerun with --train-seconds 983 (a wall-time cap, not "
                    "a budget)")  # fmt: skip
    reached = Screen(steps=1_966_080, seconds=30.0, success_rate=1.0, mean_return=408.6)
    assert stop_reason(reached, 1_966_080, 30.0, 3_276_800, 600.0) == (
        "reached success 1.00 on the batched backend at 1,966,080 steps")


@pytest.mark.slow
def test_the_database_holds_the_results_verified_as_the_table_says(quick):
    data, done = quick
    rows, results = table_rows(done.stdout), stored(data)
    ids = {int(n) for n in re.findall(r"stored as result #(\d+)", done.stdout)}
    mine = {r["env_id"]: r for r in results if r["id"] in ids}
    assert set(mine) == set(rows)
    for env_id, row in mine.items():
        card = get_card(env_id)
        assert row["protocol_hash"] == default_protocol(card).hash  # the card's protocol
        assert row["episodes"] == card.evaluation.episodes
        assert (row["verification"] == "verified") == (rows[env_id][4] == "yes")
    for pick in quick_suite(1):  # the worker's own verified rows sit beside the demo's
        row = mine[pick.card.id]
        if row["verification"] == "verified":
            assert any(
                r["verification"] == "verified"
                and r["id"] != row["id"]
                and r["artifact_sha256"] == row["artifact_sha256"]
                for r in results
            )
    # every committed zoo result is accepted (a card changed under its result is refused)
    assert re.search(r"\d+ imported, \d+ already there, 0 refused", done.stdout), done.stdout[:800]
    imported = [r for r in results if r["id"] not in ids and r["method"].startswith("zoo-")]
    assert len(imported) >= len(list(ROOT.glob("baselines/results/*/*/seed-*/result.json")))


@pytest.mark.slow
def test_the_trained_quadrotor_is_a_method_of_its_own_apart_from_the_shipped_baseline(quick):
    """The policy trained just now is stored (and verified) under the demo's own method;
    the shipped QuadHover baseline's seeds stay under zoo-fast_ppo, and the table's row is
    the new policy alone."""
    data, done = quick
    from rlbench_suite.demo.quad import DEMO_METHOD

    sha = file_sha256(data / "demo" / "quad" / "policy.onnx")
    method = DEMO_METHOD
    quad = [r for r in stored(data) if r["env_id"] == QUAD]
    mine = [r for r in quad if r["artifact_sha256"] == sha]
    assert {r["method"] for r in mine} == {method}
    assert len(mine) == 2 and {r["verification"] for r in mine} == {"verified"}  # + the worker's
    shipped = [r for r in quad if r["artifact_sha256"] != sha]
    assert shipped and {r["method"] for r in shipped} == {"zoo-fast_ppo"}
    assert len(shipped) == len(list(ROOT.glob("baselines/results/QuadHover-v0/fast_ppo/seed-*/"
                                              "result.json")))  # fmt: skip
    assert "zoo-fast_ppo" in method_description(data, method)
    assert f"stored as result #{mine[0]['id']} (method '{method}')" in done.stdout
    assert table_rows(done.stdout)[QUAD][3] == "50 episodes of 1 run"
    note = re.search(
        rf"{re.escape(QUAD)}: its row is only the policy trained just now "
        rf"\(method '{re.escape(method)}'\); the shipped baseline \(method "
        r"'zoo-fast_ppo'\) stands apart at (.+) over (\d+) runs",
        done.stdout,
    )
    assert note and int(note[2]) == len(shipped), done.stdout[-2000:]


@pytest.mark.slow
def test_the_quadrotor_row_is_its_runs_mean_over_episodes(quick):
    """One run: its score is the mean of its episodes (an IQM over success-rate episodes
    would drop the failures), the interval Wilson's over its episodes' successes (a
    bootstrap over 50 identical episodes would say [100, 100])."""
    data, done = quick
    result = load_result(data / "demo" / "quad" / "result.json")
    card = get_card(QUAD)
    assert result.env_id == QUAD and "success_rate" in result.aggregates
    values = normalized_values(card, result.returns, result.successes)
    failed, succeeded = normalized_values(card, [0.0, 0.0], [False, True])
    rate = success_rate(np.asarray(result.successes, dtype=bool))
    low, high = sorted(failed + (succeeded - failed) * v for v in (rate.low, rate.high))
    row = table_rows(done.stdout)[QUAD]
    assert row[2] == interval({"point": float(values.mean()), "low": low, "high": high})
    assert row[3] == f"{len(result.returns)} episodes of 1 run"
    assert (data / "demo" / "quad" / "policy.onnx.meta.json").is_file()


@pytest.mark.slow
def test_the_dataset_was_downloaded_from_the_local_mirror_with_the_right_hashes(quick):
    data, done = quick
    card = get_dataset_card(DEFAULT_DATASET)
    folder = Path(re.search(r"made: \S+ in a fresh cache: (.+)", done.stdout)[1].strip())
    assert folder == data.resolve() / "demo" / "downloads" / card.id
    printed = re.findall(rf"{re.escape(card.id)} (\S+): (\d+) bytes, sha256 ([0-9a-f]{{64}})",
                         done.stdout)  # fmt: skip
    assert {p for p, _, _ in printed} == {f.path for f in card.files}
    same_bytes = "writes other bytes" not in done.stdout
    for path, size, sha in printed:
        file = folder / path
        assert file.stat().st_size == int(size) and file_sha256(file) == sha
        if same_bytes:
            assert sha == next(f.sha256 for f in card.files if f.path == path)
    assert re.search(r"served at http://127\.0\.0\.1:\d+ ", done.stdout)
    # the verified download is kept in the user's cache (the site serves it from there)
    kept = Path(re.search(r"made: \S+ in your dataset cache .*?: (/.+)", done.stdout)[1].strip())
    assert kept == data.resolve() / "datasets" / card.id
    assert not verify(card, kept.parents[1])


@pytest.mark.slow
def test_a_second_run_reuses_the_evaluations_and_serves_the_site_until_ctrl_c(quick, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(quick[0], data)
    process = subprocess.Popen(_command("--quick", "--port", "0", "--data-dir", str(data)),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=_env(), cwd=ROOT, preexec_fn=as_a_foreground_job)  # fmt: skip
    lines = []
    try:
        for line in process.stdout:
            lines.append(line)
            found = re.search(r"the leaderboard site: (http://127\.0\.0\.1:\d+/)", line)
            if found:
                page = httpx.get(found[1] + f"envs/{QUAD}", timeout=30)
                assert page.status_code == 200 and "demo-trained fast_ppo" in page.text
                process.send_signal(signal.SIGINT)
                break
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    stdout = "".join(lines) + out
    assert process.returncode == 0, stdout[-2000:] + err[-2000:]
    assert "stopped serving" in stdout
    for pick in quick_suite(1):  # each baseline's evaluation is reused
        assert f"  {pick.card.id} {pick.policy}: kept from an earlier demo" in stdout
        assert f"  kept: {pick.card.id} result: " in stdout
        assert f"  made: {pick.card.id} result" not in stdout
    assert "  kept: leaderboard database" in stdout and "made: leaderboard" not in stdout
    assert re.search(r"  kept: \S+ in your dataset cache", stdout)
    assert re.search(r"  made: \S+ in a fresh cache", stdout)  # downloaded again
    assert "  made: quadrotor policy" in stdout  # trained again
    kept_quad = "on PyBullet (kept from an earlier demo)" in stdout
    assert ("  kept: rlbench/QuadHover-v0 result" in stdout) == kept_quad
    assert ("  made: rlbench/QuadHover-v0 result" in stdout) != kept_quad
    # a snapshot that differs replaces the earlier one: the row is still this policy alone,
    # under the one demo method
    assert table_rows(stdout)[QUAD][3] == "50 episodes of 1 run"
    methods = {r["method"] for r in stored(data) if r["method"].startswith("demo")}
    assert methods == {"demo-trained fast_ppo"}


def _demo_run(policy: Path, steps: int):
    from rlbench_suite.demo.quad import QuadRun, Screen

    best = Screen(steps=steps, seconds=10.0, success_rate=0.5, mean_return=300.0)
    return QuadRun(policy, steps, 10.0, 2048, best, [best], "stopped", False)


def test_a_second_demo_policy_replaces_the_first_under_one_demo_method(tmp_path):
    """The quadrotor's leaderboard step run twice on one database, with two different
    policies (as when a busy machine stops training at another snapshot): each run made a
    method of its own ("demo-trained fast_ppo (policy <sha>)"); now the one demo method holds
    the newer policy's result alone, and the older policy's queued verification is failed."""
    from rlbench_suite.demo import board
    from rlbench_suite.demo.quad import DEMO_METHOD, demo_method
    from rlbench_suite.leaderboard.db import sqlite_url
    from rlbench_suite.policies import resolve_baseline

    card = get_card(QUAD)
    factory = board.open_board(sqlite_url(tmp_path))
    kept = []
    for seed in (0, 1):
        name = f"QuadHover-v0/fast_ppo/seed-{seed}"
        policy = resolve_baseline(name)
        result = load_result(ROOT / "baselines" / "results" / name / "result.json")
        stored = board.store(factory, result, demo_method(card, _demo_run(policy, 1000 * seed)))
        job = board.queue_verification(factory, stored, policy)
        kept.append((stored, file_sha256(policy), job))
    engine = create_engine(sqlite_url(tmp_path))
    with engine.connect() as connection:
        methods = connection.execute(text("SELECT name, description FROM methods")).all()
        rows = connection.execute(text(
            "SELECT r.id, r.artifact_sha256 FROM results r JOIN methods m ON m.id = r.method_id "
            "WHERE m.name = :n"), {"n": DEMO_METHOD}).all()  # fmt: skip
        jobs = dict(connection.execute(text("SELECT id, state FROM verification_jobs")).all())
    assert [m for m, _ in methods if m.startswith("demo")] == [DEMO_METHOD]
    assert rows == [(kept[1][0].result_id, kept[1][1])]
    assert {stored.method for stored, _, _ in kept} == {DEMO_METHOD}
    assert "the snapshot at 1,000 steps" in dict(methods)[DEMO_METHOD]  # the newer policy's
    assert jobs[kept[0][2]] == "failed" and jobs[kept[1][2]] == "queued"
    again = board.store(factory, load_result(ROOT / "baselines" / "results" /
                                             "QuadHover-v0/fast_ppo/seed-1/result.json"),
                        demo_method(card, _demo_run(resolve_baseline(
                            "QuadHover-v0/fast_ppo/seed-1"), 1000)))  # fmt: skip
    assert (again.result_id, again.created) == (kept[1][0].result_id, False)  # the same policy


def test_a_failing_step_is_named_on_one_line(tmp_path):
    done = run_demo("--quick", "--no-serve", "--data-dir", str(tmp_path), "--db", "mysql://x/y")
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert lines == [
        "error: step 1/6 (the leaderboard database) failed: unsupported database 'mysql'; "
        "accepted: sqlite:///PATH or postgresql://USER@HOST:PORT/DB (psycopg 3; postgres:// too)"
    ]


def test_a_taken_port_is_refused_before_any_work(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_demo("--quick", "--port", str(port), "--data-dir", str(tmp_path / "d"))
    assert done.returncode == 1
    assert f"cannot serve on 127.0.0.1:{port}" in done.stderr and "--no-serve" in done.stderr
    assert "[1/" not in done.stdout and not (tmp_path / "d").exists()


def test_an_unknown_dataset_is_refused_with_the_closest_ids(tmp_path):
    done = run_demo("--no-serve", "--data-dir", str(tmp_path), "--dataset",
                    "rlbench/CartPole-rando-v0")  # fmt: skip
    assert done.returncode == 2
    assert "rlbench/CartPole-random-v0" in done.stderr and done.stderr.startswith("error:")


@pytest.mark.slow
def test_ctrl_c_names_the_step_it_stopped(tmp_path):
    process = subprocess.Popen(_command("--quick", "--no-serve", "--data-dir", str(tmp_path)),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=_env(), cwd=ROOT, preexec_fn=as_a_foreground_job)  # fmt: skip
    try:
        for line in process.stdout:
            if line.startswith("[2/6]"):
                time.sleep(0.05)  # well inside step 2 (a quick step 2 can end within 0.5 s)
                process.send_signal(signal.SIGINT)
                break
        _, err = process.communicate(timeout=120)
    finally:
        process.kill()
    # 130, or death by SIGINT, which a shell also reports as 130: CPython 3.11 makes `python -m`
    # exit so when the KeyboardInterrupt, though caught, was raised inside exec() of a string
    # (a dataclass's methods being made by an import the Ctrl-C cut short)
    assert process.returncode in (130, -signal.SIGINT), err
    assert "Traceback" not in err  # no second KeyboardInterrupt escaped after the message
    assert "interrupted during step 2/6 (the shipped baselines on a quick suite)" in err
    assert str(tmp_path) in err


def test_a_ctrl_c_that_was_swallowed_still_stops_the_step_once(monkeypatch):
    """Python drops an exception raised inside a finalizer or weakref callback ("Exception
    ignored in ..."): a Ctrl-C whose handler ran there (a fresh-clone run caught one in
    SQLAlchemy's weakref callback, and the demo ran on to the end and exited 0) is sent again
    outside it, and stops the step, named as any Ctrl-C is; so does one a library's catch-all
    swallowed, at the next line; and none arrives twice."""
    import io
    import time

    from rich.console import Console

    from rlbench_suite.demo.report import DemoInterrupted, Reporter

    dropped = []
    before = lambda u: dropped.append(u.exc_type)  # noqa: E731
    monkeypatch.setattr(sys, "unraisablehook", before)

    class Finalized:
        def __del__(self):
            signal.raise_signal(signal.SIGINT)  # the handler runs here, inside the finalizer

    out = Reporter(Console(file=io.StringIO()), total=2)
    reached = []
    started = time.monotonic()
    stopped = pytest.raises(DemoInterrupted, match=r"step 1/2 \(work\)")
    with stopped, out.watch_interrupts(), out.step(1, "work"):
        Finalized()
        time.sleep(10)  # the Ctrl-C, sent again, interrupts the sleep
        reached.append("after the sleep")
    assert reached == [] and time.monotonic() - started < 5
    assert dropped == [] and out.interrupted  # dropped without a traceback
    assert sys.unraisablehook is before  # the demo's hook is gone with its watch
    with out.step(2, "after"):  # delivered once: the next step is not stopped again
        out.say("more")

    # a Ctrl-C a library swallowed (``except BaseException``) stops the step at its next line
    out = Reporter(Console(file=io.StringIO()), total=2)
    stopped = pytest.raises(DemoInterrupted, match=r"step 1/2")
    with stopped, out.watch_interrupts(), out.step(1, "work"):
        with contextlib.suppress(BaseException):  # as a library's catch-all would
            signal.raise_signal(signal.SIGINT)
        out.say("the next line")
        reached.append("the next line")
    assert reached == []

    # an error the dropped Ctrl-C caused (SQLAlchemy's pool, say) is the interruption, and the
    # Ctrl-C is not sent again after the demo stopped for it
    out = Reporter(Console(file=io.StringIO()), total=2)
    stopped = pytest.raises(DemoInterrupted, match=r"step 1/2")
    with stopped, out.watch_interrupts(), out.step(1, "work"):
        Finalized()
        raise RuntimeError("a connection pool left broken")
    try:
        time.sleep(0.3)
    except KeyboardInterrupt:
        pytest.fail("the Ctrl-C arrived a second time")


def test_the_summary_table_keeps_every_column_and_cell_at_80_columns(monkeypatch):
    """COLUMNS=80, piped: the narrow table wraps its cells; before, rich dropped the
    'verified' column and cut the others."""
    import io

    from rlbench_suite.cli.common import make_console
    from rlbench_suite.demo.report import Reporter

    monkeypatch.setenv("COLUMNS", "80")
    console = make_console()
    console.file = io.StringIO()
    assert console.width == 80 and not console.is_terminal
    columns = ["env", "baseline", "IQM normalized score [95% CI]", "over", "verified"]
    rows = [(pick.card.name, pick.label, "-95.3 [-90.1, -99.0] *", "10 runs, 10 verified", "no")
            for pick in quick_suite(2)]  # the real ids and labels, the widest other cells
    rows.append((QUAD.removeprefix("rlbench/"), "demo: fast_ppo trained just now",
                 "101 [99.2, 103] *", "50 episodes of 1 run", "yes"))  # fmt: skip
    Reporter(console, 6).table("The demo's results on the leaderboard", columns, rows)
    lines = console.file.getvalue().splitlines()
    assert max(map(len, lines)) <= 80
    heads = [line for line in lines if line.startswith("┃")]
    header = [c.strip() for c in heads[-1].strip("┃").split("┃")]
    assert header[-1] == "verified", lines
    body = [line for line in lines if line.startswith("│")]
    verified = [c.strip() for c in (line.strip("│").split("│")[-1] for line in body)]
    assert [v for v in verified if v] == [row[-1] for row in rows]
    text = " ".join(" ".join(c.strip() for c in line.strip("│┃").split("│")) for line in lines)
    for cell in (c for row in rows for c in row):
        for word in cell.split():
            assert word in text, word


def test_main_sh_sets_up_only_the_demo_extra_and_the_tests_set_up_everything():
    """main.sh installs the `demo` extra and no system package; test.sh (CI) the rest."""
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    [demo] = extras["optional-dependencies"]["demo"]
    wanted = set(re.fullmatch(r"rlbench-suite\[(.+)\]", demo)[1].split(","))
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    tests = set(re.search(r'tests\) DEFAULT_EXTRAS="([^"]+)"', setup)[1].split(","))
    assert wanted <= tests and {"distributed", "docs", "dev"} <= tests - wanted
    assert re.search(r'demo\) DEFAULT_EXTRAS="demo"', setup)
    assert "bash scripts/setup.sh demo\n" in (ROOT / "scripts" / "main.sh").read_text()
    assert "bash scripts/setup.sh\n" in (ROOT / "scripts" / "test.sh").read_text()
    assert "bash scripts/test.sh" in (ROOT / ".ci" / "run").read_text()
    done = subprocess.run(["bash", "scripts/setup.sh", "everything"], cwd=ROOT,
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 2
    assert done.stderr == ("error: unknown set-up 'everything'; accepted: tests (the default) "
                           "or demo\n")  # fmt: skip


@pytest.mark.slow
def test_setup_gives_a_venv_without_pip_its_pip_then_takes_torch_from_the_index_named(tmp_path):
    """`python3 -m venv --without-pip .venv && bash scripts/setup.sh demo` failed with "No
    module named pip" on every run. Here pip can reach no package at all, so the set-up stops
    at torch, after the repair, on the index it was told to use."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "setup.sh", tmp_path / "scripts" / "setup.sh")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / ".venv")],
                   check=True)  # fmt: skip
    nowhere = (tmp_path / "no-index").as_uri()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "VIRTUAL_ENV"))}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1", TORCH_INDEX_URL=nowhere)
    done = subprocess.run(["bash", "scripts/setup.sh", "demo"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert "== .venv has no pip; installing it with ensurepip" in done.stdout, done.stderr
    assert "No module named pip" not in done.stderr
    assert f"== installing torch 2.13.0 from TORCH_INDEX_URL={nowhere}" in done.stdout
    assert done.returncode != 0  # no torch to be had
    pip = subprocess.run([str(tmp_path / ".venv" / "bin" / "python"), "-m", "pip", "--version"],
                         capture_output=True, text=True)  # fmt: skip
    assert pip.returncode == 0 and pip.stdout.startswith("pip ")


NOTE = ("rlbench/QuadHover-v0: its row is only the policy trained just now (method "
        "'demo-trained fast_ppo (policy 1a2b3c4d)'); the shipped baseline (method "
        "'zoo-fast_ppo') stands apart at 98.7 [97.1, 99.6] over 5 runs")  # fmt: skip
PATH = (
    "/home/someone/.local/share/rlbench/demo/downloads/rlbench/CartPole-random-v0/data/"
    "main_data.hdf5"
)
MADE = "rlbench/CartPole-random-v0 in a fresh cache, verified"


def _said(monkeypatch, columns: str | None) -> tuple[list[str], int]:
    """What the Reporter prints of a long note and a made: line with a long path, on a console
    made as the CLI makes it (piped; COLUMNS as given)."""
    import io

    from rlbench_suite.cli.common import make_console
    from rlbench_suite.demo.report import Reporter

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    console = make_console()
    console.file = io.StringIO()
    out = Reporter(console, 6)
    out.say(NOTE)
    out.made_here(MADE, PATH)
    return console.file.getvalue().splitlines(), console.width


def test_prose_wraps_at_word_boundaries_at_80_columns_and_paths_stay_whole(monkeypatch):
    lines, width = _said(monkeypatch, "80")
    assert width == 80 and len(lines) > 2
    for line in lines:  # within the width, but for a line that is one unbreakable path
        assert len(line) <= 80 or line.strip() == PATH, line
    words = " ".join(lines).split()
    assert words == [*NOTE.split(), "made:", *f"{MADE}:".split(), PATH]
    note_lines = lines[: next(i for i, line in enumerate(lines) if "made:" in line)]
    assert len(note_lines) >= 2 and all(line.startswith("  ") for line in note_lines[1:])
    made = lines[len(note_lines) :]
    assert made[0].startswith("  made: ") and all(line.startswith("    ") for line in made[1:])


def test_piped_prose_is_one_line_each(monkeypatch):
    lines, _ = _said(monkeypatch, None)
    assert lines == [NOTE, f"  made: {MADE}: {PATH}"]


def test_a_result_without_a_normalized_score_is_said_in_its_cards_primary_metric():
    """ConnectFour is ranked by win rate (the summary table's scale); step 2 printed the
    first aggregate, return_mean, beside it."""
    from rlbench_suite.demo.run import score_text

    card = get_card("rlbench/ConnectFour-v3")
    path = next(ROOT.glob("baselines/results/ConnectFour-v3/*/seed-*/result.json"))
    result = load_result(path)
    assert result.normalized_score is None and card.primary_metric == "win_rate"
    assert score_text(card, result) == f"win_rate {interval(result.aggregates['success_rate'])}"
    scored = result.model_copy(update={"normalized_score": result.aggregates["success_rate"]})
    assert score_text(card, scored).startswith("normalized ")
