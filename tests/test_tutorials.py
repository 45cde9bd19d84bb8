"""The tutorials run: every code block of every ``docs/tutorials/*.md``, in order, in a
fresh folder (``scripts/run_tutorials.py``, as a reader would run them)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _runner():
    path = ROOT / "scripts" / "run_tutorials.py"
    spec = importlib.util.spec_from_file_location("run_tutorials", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


RUNNER = _runner()


def test_the_block_reader_tells_code_files_and_output_apart():
    text = "\n".join([
        "# T", "```python", "x = 1", "```", "```bash", "echo hi", "```",
        "```toml", "# file: cards/A-v0.toml", 'id = "a/A-v0"', "```", "```text", "out", "```",
        "````python", "s = '```'", "````",
    ])  # fmt: skip
    found = RUNNER.blocks(text)
    assert [(b.kind, b.path) for b in found] == [
        ("python", None), ("bash", None), ("file", "cards/A-v0.toml"), ("show", None),
        ("python", None)]  # fmt: skip
    assert found[2].code == 'id = "a/A-v0"\n' and found[4].code == "s = '```'\n"


def test_a_failing_block_fails_the_tutorial_and_says_which(tmp_path):
    page = tmp_path / "t.md"
    page.write_text("```python\nvalue = 41\n```\n\n```bash\necho ok > made.txt\n```\n\n"
                    "```python\nassert value == 42, 'off by one'\n```\n")  # fmt: skip
    done = RUNNER.run_tutorial(page, tmp_path / "work")
    assert done.returncode != 0
    assert "FAILED: t.md, the block at line 9" in done.stdout + done.stderr
    assert (tmp_path / "work" / "made.txt").read_text() == "ok\n"


@pytest.mark.slow
@pytest.mark.parametrize("page", RUNNER.tutorials(), ids=lambda p: p.stem)
def test_the_tutorial_runs(page, tmp_path):
    runnable = [b for b in RUNNER.blocks(page.read_text()) if b.kind in ("python", "bash")]
    assert runnable, f"{page.name} has no code to run"
    done = RUNNER.run_tutorial(page, tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    assert output.count("=== ") == len([b for b in RUNNER.blocks(page.read_text())
                                        if b.kind != "show"])  # fmt: skip


def test_there_are_the_tutorials_issue_16_asks_for():
    names = {p.stem for p in RUNNER.tutorials()}
    assert {"evaluate-your-agent", "train-and-reproduce", "add-your-environment",
            "evaluate-on-ray", "submit-to-the-leaderboard", "offline-iql"} <= names  # fmt: skip
