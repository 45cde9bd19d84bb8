"""The tutorials run: every code block of every ``docs/tutorials/*.md``, in order, in a
fresh folder (``scripts/run_tutorials.py``, as a reader would run them), and what each block
prints is what the page's expected-output block after it shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import load_script

ROOT = Path(__file__).resolve().parents[1]


RUNNER = load_script("run_tutorials")


def test_the_block_reader_tells_code_files_and_output_apart():
    text = "\n".join([
        "# T", "```python", "x = 1", "```", "```bash", "echo hi", "```", "Prose.", "```text",
        "hi", "```", "```toml", "# file: cards/A-v0.toml", 'id = "a/A-v0"', "```", "```text",
        "out", "```", "````python", "s = '```'", "````",
    ])  # fmt: skip
    found = RUNNER.blocks(text)
    assert [(b.kind, b.path) for b in found] == [
        ("python", None), ("bash", None), ("output", None), ("file", "cards/A-v0.toml"),
        ("show", None), ("python", None)]  # fmt: skip
    assert found[2].code == "hi\n" and found[3].code == 'id = "a/A-v0"\n'
    assert found[5].code == "s = '```'\n"


def test_expected_lines_match_in_order_with_elisions_and_collapsed_spaces():
    actual = "start 12:01\n│ a   │ 1.5  │\nnoise\nresult written to x.json\ndone in 3.2 s\n"
    assert RUNNER.missing_lines("│ a │ 1.5 │\n...\nresult written to x.json\n", actual) == []
    assert RUNNER.missing_lines("start ...\ndone in ... s", actual) == []
    assert RUNNER.missing_lines("result written to x.json\n│ a │ 1.5 │", actual) == [
        "│ a │ 1.5 │"]  # out of order
    # a decimal stands for any number (trained values may differ on another CPU); whole
    # numbers and words must be the same
    assert RUNNER.missing_lines("│ a │ 1.6 │\ndone in 9.0 s", actual) == []
    assert RUNNER.missing_lines("│ b │ 1.6 │\ndone in ... s", actual) == [
        "│ b │ 1.6 │", "done in ... s"]
    assert RUNNER.missing_lines("start 12:02", actual) == ["start 12:02"]
    assert RUNNER.missing_lines("result written", actual) == ["result written"]  # whole lines


def test_output_that_drifts_from_its_block_or_is_not_shown_is_reported(tmp_path):
    page = tmp_path / "t.md"
    page.write_text("```bash\necho made 3 files; echo took 0.2 s\n```\n\n```text\n"
                    "made 3 files\ntook ... s\n```\n\n```python\nprint('4 rows')\n```\n\n"
                    "```text\n5 rows\n```\n\n```bash\necho unshown\n```\n\n"
                    "```bash\ntrue\n```\n")  # fmt: skip
    done = RUNNER.run_tutorial(page, tmp_path / "work")
    assert done.returncode == 0, done.stdout
    found = RUNNER.problems(page, done.stdout)
    assert len(found) == 2, found
    assert found[0].startswith("t.md, the python block at line 10: its expected output "
                               "(line 14) has '5 rows'") and "4 rows" in found[0]  # fmt: skip
    assert found[1].startswith("t.md, the bash block at line 18 prints output but no")


def test_a_failing_block_fails_the_tutorial_and_says_which(tmp_path):
    page = tmp_path / "t.md"
    page.write_text("```python\nvalue = 41\n```\n\n```bash\necho ok > made.txt\n```\n\n"
                    "```python\nassert value == 42, 'off by one'\n```\n")  # fmt: skip
    done = RUNNER.run_tutorial(page, tmp_path / "work")
    assert done.returncode != 0
    assert "FAILED: t.md, the block at line 9" in done.stdout and "off by one" in done.stdout
    assert (tmp_path / "work" / "made.txt").read_text() == "ok\n"


@pytest.mark.slow
@pytest.mark.parametrize("page", RUNNER.tutorials(), ids=lambda p: p.stem)
def test_the_tutorial_runs(page, tmp_path):
    found = RUNNER.blocks(page.read_text())
    assert [b for b in found if b.kind in RUNNER.RUNS], f"{page.name} has no code to run"
    assert [b for b in found if b.kind == "output"], f"{page.name} shows no expected output"
    done = RUNNER.run_tutorial(page, tmp_path)
    assert done.returncode == 0, done.stdout[-4000:]
    assert len(RUNNER.block_outputs(done.stdout)) == len(
        [b for b in found if b.kind in (*RUNNER.RUNS, "file")])
    problems = RUNNER.problems(page, done.stdout)
    assert not problems, "\n\n".join(problems)[-6000:]


def test_there_are_the_tutorials_issue_16_asks_for():
    names = {p.stem for p in RUNNER.tutorials()}
    assert {"evaluate-your-agent", "train-and-reproduce", "add-your-environment",
            "evaluate-on-ray", "submit-to-the-leaderboard", "offline-iql"} <= names  # fmt: skip
