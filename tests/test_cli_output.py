"""The command line's output as a user sees it: piped, narrow, with bad input."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

import rlbench_suite
from rlbench_suite.cli.common import interval
from rlbench_suite.core.catalog import UnknownEnvError, get_card, select_cards
from tests.conftest import run_cli


def piped(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``rlbench ARGS | cat``: output to a pipe, with no COLUMNS set."""
    clean = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return subprocess.run([sys.executable, "-m", "rlbench_suite.cli", *args], capture_output=True,
                          text=True, timeout=300, env={**clean, **(env or {})})  # fmt: skip


def test_list_piped_keeps_every_row_on_one_line_and_summarizes_generated_families():
    done = piped("list")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    matrix = [c for c in select_cards(family="multiagent") if "MatrixGame-g" in c.id]
    assert len(matrix) == 144
    rows = [line for line in lines if line.startswith("│")]
    assert len(rows) == 212 - 144 + 1  # one row for the 144 generated matrix games
    summary = [r for r in rows if "MatrixGame-g000-v0 ... 143-v0 (144)" in r]
    assert len(summary) == 1 and "rlbench-matrix-games" in summary[0]
    assert "144 generated ids are summarized" in done.stdout
    for card in select_cards(family="classic"):  # each id with its numbers on its own line
        (row,) = [r for r in rows if f" {card.id} " in r]
        random = card.reference.random
        assert f"{random.value:.4g}".lstrip("-")[:3] in row
    expanded = piped("list", "--expand")
    assert sum(line.startswith("│") for line in expanded.stdout.splitlines()) == 212


def test_a_terminal_that_holds_the_scores_keeps_the_trained_column_longest():
    # the review saw the trained column dropped before metric and API, up to 160 columns
    done = run_cli("list", "--suite", "rlbench-reference", env={"COLUMNS": "120"})
    assert done.returncode == 0, done.stderr
    assert "fast_ppo" in done.stdout and "52.3 [51.1, 53.4]" in done.stdout
    assert "(family, API, suites left out at this width" in done.stdout
    assert all(len(line) <= 120 for line in done.stdout.splitlines())
    # one unit in the column: a raw value (no expert reference) is marked, and said under it
    rows = [line for line in done.stdout.splitlines() if line.startswith("│")]
    raw = get_card("rlbench/ConnectFour-v3").trained[0]
    assert raw.normalized is None
    (row,) = [r for r in rows if "ConnectFour" in r]
    assert f"{interval(raw.value.point, raw.value.low, raw.value.high, 3)}* maskable_ppo" in row
    assert sum("* " in r for r in rows) == 1
    assert ("trained: the best baseline's normalized score, IQM over seeds [95% CI]: 0 = random, "
            "100 = expert (the card's references)") in done.stdout.splitlines()  # fmt: skip
    assert ("  (the experts of box2d, classic-control, minigrid and mujoco-v5 cards are the "
            "suite's own best trained seeds)") in done.stdout.splitlines()  # fmt: skip
    assert ("  * the raw win_rate [95% CI], not normalized: the card has no expert reference"
            in done.stdout.splitlines())  # fmt: skip


def test_list_in_a_narrow_terminal_leaves_out_columns_rather_than_cutting_numbers():
    done = run_cli("list", "--suite", "classic-control", env={"COLUMNS": "80"})
    assert done.returncode == 0, done.stderr
    assert "…" not in done.stdout and "left out at this width" in done.stdout
    assert "-499.1 ±6.8" in done.stdout and "rlbench/MountainCarContinuous-v0" in done.stdout
    assert all(len(line) <= 80 for line in done.stdout.splitlines())
    assert "trained: the best" not in done.stdout  # no legend for a column left out


def test_the_datasets_table_fits_80_columns_and_one_too_narrow_is_printed_whole():
    """COLUMNS=80: the datasets' ids alone leave too little room, and rich cut the steps
    column to its first digits ("195" for 19542) and dropped three columns; then every cell was
    whole but the lines 118 wide (a review). Now the columns a row's id repeats or `datasets
    info` gives go first, and the table fits; narrower still, it is printed whole."""
    from rlbench_suite.cli.datasets_common import size_text
    from rlbench_suite.core.dataset_cards import dataset_cards

    cards = dataset_cards()
    for columns in (80, 60):
        done = run_cli("datasets", "list", env={"COLUMNS": str(columns)})
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        rows = [[c.strip() for c in line.strip("│ ").split("│")]
                for line in lines if line.startswith("│ rlbench/")]  # fmt: skip
        assert {r[0] for r in rows} == set(cards) and "…" not in done.stdout
        assert all(len(r) == 4 for r in rows)  # id, size, score, cached
        assert all(r[1] == size_text(sum(f.size for f in cards[r[0]].files)) for r in rows)
        table = [line for line in lines if line[:1] in "┏┃┡│└"]
        widest = max(len(line) for line in table)
        assert widest <= 80 if columns == 80 else widest > columns
        assert "(steps, episodes, kind, env left out at this width" in " ".join(lines)


@pytest.mark.parametrize(
    ("seeds", "expected"),
    [("5-2", "runs backwards"), ("1,x", "give integers >= 0"), ("3,3", "repeated")],
)
def test_bad_seeds_are_one_line_saying_what_is_accepted(seeds, expected):
    done = run_cli("eval", "rlbench/CartPole-v1", "--policy", "random", "--seeds", seeds)
    assert done.returncode == 2
    assert expected in done.stderr and "increasing range 100-149" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert "pydantic" not in done.stderr and "http" not in done.stderr


def test_eval_writes_results_to_the_data_dir_not_the_current_folder(tmp_path):
    work, data = tmp_path / "work", tmp_path / "data"
    work.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "rlbench_suite.cli", "eval", "rlbench/CartPole-v1", "--policy",
         "random", "--episodes", "3", "--workers", "1"], cwd=work, capture_output=True,
        text=True, timeout=300, env={**os.environ, "RLBENCH_DATA_DIR": str(data),
                                     "COLUMNS": "300"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert list(work.iterdir()) == []
    (written,) = (data / "results" / "rlbench" / "CartPole-v1").glob("random-*.json")
    assert f"result written to {written}" in done.stdout
    assert json.loads(written.read_text())["env_id"] == "rlbench/CartPole-v1"


def test_success_rate_bounds_print_at_sensible_precision(tmp_path):
    out = tmp_path / "r.json"
    done = run_cli("eval", "rlbench/CartPole-v1", "--policy", "random", "--episodes", "5",
                   "--workers", "1", "--out", str(out))  # fmt: skip
    assert done.returncode == 0, done.stderr
    (rate,) = [ln for ln in done.stdout.splitlines() if ln.startswith("│ success_rate")]
    assert "[0, 0.4345]" in rate and "e-" not in rate


def test_multiagent_typos_suggest_only_multiagent_ids():
    with pytest.raises(UnknownEnvError) as info:
        rlbench_suite.make_multiagent("rlbench/TicTacTo-v3")
    message = str(info.value)
    assert "Did you mean: rlbench/TicTacToe-v3?" in message
    assert "CartPole" not in message and "Ant-v5" not in message
    with pytest.raises(UnknownEnvError, match="unknown batched environment id"):
        rlbench_suite.make_batched("rlbench/CoopNv-v0", num_games=2)


@pytest.mark.parametrize(("module", "hint"), [
    ("deflate", "pip install 'rlbench-suite[datasets]'"),
    ("scipy", "pip install 'rlbench-suite[plots]'"),  # not [dev]: the narrowest extra
    ("chess", "pip install 'rlbench-suite[text]'"),  # not [multiagent]: fewer requirements
    ("fastapi", "pip install 'rlbench-suite[leaderboard]'"),
    ("platformdirs", None),  # the core's: no extra brings it back
    ("torch._C", None),  # a part of an installed package failed: not a missing package
    # import names that are not their distribution's (a review: these gave no hint)
    ("yaml", "pip install 'rlbench-suite[baselines]'"),  # pyyaml
    ("PIL", "pip install 'rlbench-suite[plots]'"),  # pillow
    ("mujoco", "pip install 'rlbench-suite[robotics]'"),  # gymnasium[mujoco] brings it
    ("not_a_package_anywhere", None),
    (None, None),
])
def test_a_missing_package_names_the_narrowest_extra_that_brings_it(module, hint):
    from rlbench_suite.cli.common import install_hint

    pytest.importorskip("torch")
    assert install_hint(ModuleNotFoundError(f"No module named {module!r}", name=module)) == hint


def in_a_terminal(*args: str, timeout: float = 120.0, columns: int = 80) -> tuple[int, str]:
    """``rlbench ARGS`` with stdout and stderr on a pseudo-terminal ``columns`` wide: (exit
    code, what it showed, escapes and all); killed (a test failure) after ``timeout`` seconds."""
    import fcntl
    import pty
    import select
    import struct
    import termios
    import time

    main, side = pty.openpty()
    fcntl.ioctl(side, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    clean = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "TERM")}
    with subprocess.Popen([sys.executable, "-m", "rlbench_suite.cli", *args], stdout=side,
                          stderr=side, stdin=subprocess.DEVNULL,
                          env={**clean, "TERM": "xterm-256color"}) as process:  # fmt: skip
        os.close(side)
        shown, deadline = b"", time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                if not select.select([main], [], [], 1.0)[0]:
                    continue
                try:
                    chunk = os.read(main, 65536)
                except OSError:  # the child closed its side
                    break
                if not chunk:
                    break
                shown += chunk
            else:
                process.kill()
                pytest.fail(f"rlbench {' '.join(args)} ran past {timeout} s: {shown[-2000:]!r}")
        finally:
            os.close(main)
    return process.returncode, shown.decode(errors="replace")


def test_in_a_terminal_a_refused_command_shows_its_error_and_no_progress_bar(tmp_path):
    """A review: in a terminal, ``rlbench eval`` with a missing policy file and ``rlbench train``
    of an online algorithm on an offline id drew an empty progress bar (``0/20``, ``0/?``)
    before their one-line error."""
    code, shown = in_a_terminal("eval", "rlbench/CartPole-v1", "--policy", "onnx:nope.onnx",
                                "--out", str(tmp_path / "r.json"))  # fmt: skip
    assert code == 2 and "policy file not found: nope.onnx" in shown
    assert not re.search(r"\s0/(\d+|\?)\s", shown) and "━" not in shown, shown
    code, shown = in_a_terminal("train", "rlbench/Pendulum-medium-v0", "--algo", "sac",
                                "--out", str(tmp_path / "runs"))  # fmt: skip
    assert code == 2 and "is an offline id" in shown
    assert not re.search(r"\s0/(\d+|\?)\s", shown) and "━" not in shown, shown
    assert "seed 0" not in shown, shown
    # an accepted evaluation still draws its bar there
    code, shown = in_a_terminal("eval", "rlbench/CartPole-v1", "--policy", "random",
                                "--episodes", "2", "--out", str(tmp_path / "ok.json"))  # fmt: skip
    assert code == 0 and "2/2" in shown and "━" in shown, shown
    # an accepted run: its title, the budget's note under it, then the bar
    code, shown = in_a_terminal("train", "rlbench/CartPole-v1", "--algo", "ppo", "--budget", "300",
                                "--eval-episodes", "1", "--final-episodes", "2", "--out",
                                str(tmp_path / "runs"))  # fmt: skip
    assert code == 0, shown
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown)
    lines = [line for line in re.split(r"[\r\n]+", plain) if line.strip() and "━" not in line]
    assert lines[0] == "rlbench/CartPole-v1 ppo seed 0", lines
    assert lines[1].startswith("note: --budget 300 is not a whole number"), lines


def test_in_an_80_column_terminal_a_dataset_bar_shows_its_counts_whole(tmp_path):
    """Two reviews: at 80 columns the build bar showed its time as ``0:00:…`` and the download
    bar ``656.1/6…`` (the id is cut short instead)."""
    code, shown = in_a_terminal("datasets", "download", "rlbench/MiniGrid-DoorKey-5x5-medium-v0",
                                "--build", "--cache", str(tmp_path))  # a long id  # fmt: skip
    assert code == 0, shown
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown)
    bars = [line for line in re.split(r"[\r\n]+", plain) if "━" in line]
    assert bars and all(len(line.rstrip()) <= 80 for line in bars), bars
    assert re.search(r"100/100 episodes, 16708 steps \d:\d\d:\d\d$", bars[-1].rstrip()), bars
