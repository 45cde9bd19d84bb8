"""Run the tutorials (``docs/tutorials/*.md``) as a reader would: every code block, in order,
in a fresh folder.

    python scripts/run_tutorials.py                      # all of them, each in a temp folder
    python scripts/run_tutorials.py docs/tutorials/evaluate-your-agent.md --keep DIR

What a block does depends on its fence:

- ```` ```python ````: runs in one interpreter per tutorial, its names kept for the next
  python block (``__name__`` is ``"__main__"``);
- ```` ```bash ````: runs with ``bash -euo pipefail``, the suite's ``rlbench`` on ``PATH``;
- any block whose first line is ``# file: PATH``: written to PATH (the line left out), run
  by nothing;
- a ```` ```text ```` block that comes next after a python or bash block (prose between is
  fine): that block's *expected output*, what the reader will see. Its lines must appear in
  the block's real output (stdout and stderr together), in order, each as a whole line;
  ``...`` inside a line stands for any text (times, paths) and a line that is only ``...``
  marks left-out lines; other lines of the real output may come between. A number with a
  decimal point stands for any number there (trained and bootstrapped values may differ in
  their last digits on another CPU or torch build; the reader still sees real ones), while
  whole numbers (episodes, steps, seeds) must be the same. Spaces are compared collapsed,
  so a table may be re-padded. A runnable block that prints
  anything must have one (:func:`problems`);
- anything else (```` ```toml ```` without ``# file:``): shown only.

The folder is the working directory, and not on ``PYTHONPATH``: a tutorial's own modules
import only as they would for a reader (python blocks run from a script in the folder;
``rlbench`` adds the working directory itself). ``RLBENCH_DATA_DIR`` points inside it, so
a tutorial writes nothing elsewhere. The tests (``tests/test_tutorials.py``) run every
tutorial this way and check its expected outputs with :func:`problems`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TUTORIALS = ROOT / "docs" / "tutorials"
FILE_MARK = re.compile(r"^(?:#|//|--)\s*file:\s*(\S+)\s*$")
_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,})(?P<info>[^`]*)$")


RUNS = ("python", "bash")
ELIDED = "..."
MARKER = re.compile(r"^=== .*, the block at line (\d+) \((\w+)\)$", re.MULTILINE)


@dataclass(frozen=True)
class Block:
    """A fenced code block of a tutorial: ``kind`` is python, bash, file, output or show
    (``output``: the expected output of the runnable block before it)."""

    kind: str
    code: str
    line: int
    path: str | None = None


def blocks(markdown: str) -> list[Block]:
    """The fenced code blocks of ``markdown``, in order, with what each one does."""
    found, lines, i = [], markdown.splitlines(), 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        fence, info, start = opening["fence"], opening["info"].strip(), i + 1
        i += 1
        body = []
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i])
            i += 1
        i += 1
        language = info.split()[0] if info else ""
        marked = FILE_MARK.match(body[0]) if body else None
        if marked:
            found.append(Block("file", "\n".join(body[1:]) + "\n", start, marked[1]))
        elif language in RUNS:
            found.append(Block(language, "\n".join(body) + "\n", start))
        elif language == "text" and found and found[-1].kind in RUNS:
            found.append(Block("output", "\n".join(body) + "\n", start))
        else:
            found.append(Block("show", "\n".join(body) + "\n", start))
    return found


_DRIVER = r'''
import json, subprocess, sys, traceback
from pathlib import Path

name, blocks = sys.argv[1], json.loads(Path(sys.argv[2]).read_text())
namespace = {"__name__": "__main__"}
for block in blocks:
    where = f"{name}, the block at line {block['line']}"
    print(f"=== {where} ({block['kind']})", flush=True)
    if block["kind"] == "file":
        Path(block["path"]).parent.mkdir(parents=True, exist_ok=True)
        Path(block["path"]).write_text(block["code"])
    elif block["kind"] == "bash":
        if subprocess.run(["bash", "-euo", "pipefail", "-c", block["code"]]).returncode:
            sys.exit(f"FAILED: {where}")
    elif block["kind"] == "python":
        try:
            exec(compile(block["code"], where, "exec"), namespace)
        except BaseException:
            traceback.print_exc()
            sys.exit(f"FAILED: {where}")
    sys.stdout.flush()
'''


def block_outputs(stdout: str) -> dict[int, str]:
    """What each block printed, by the line its code starts at (from the driver's markers)."""
    marks = list(MARKER.finditer(stdout))
    ends = [m.start() for m in marks[1:]] + [len(stdout)]
    return {int(m[1]): stdout[m.end() + 1 : end] for m, end in zip(marks, ends, strict=True)}


DECIMAL = re.compile(r"-?\d+\.\d+(?:e[-+]?\d+)?")
ANY_NUMBER = r"(?:-?\d+(?:\.\d+)?(?:e[-+]?\d+)?|-?inf|nan)"


def _literal(text: str) -> str:
    """``text`` as a pattern: itself, but each decimal number any number."""
    pieces = DECIMAL.split(" ".join(text.split()))
    return ANY_NUMBER.join(re.escape(piece) for piece in pieces)


def _pattern(line: str) -> re.Pattern[str]:
    parts = [_literal(part) for part in line.split(ELIDED)]
    return re.compile(r"\s*" + ".*".join(parts) + r"\s*")


def missing_lines(expected: str, actual: str) -> list[str]:
    """The lines of ``expected`` (module doc: ``...``, order, spaces) not found in ``actual``:
    after the first one missing, the rest of them (nothing can match past it)."""
    wanted = [line for line in expected.splitlines() if line.strip() not in ("", ELIDED)]
    lines = [" ".join(line.split()) for line in actual.splitlines()]
    at = 0
    for i, line in enumerate(wanted):
        pattern = _pattern(line)
        found = next((j for j in range(at, len(lines)) if pattern.fullmatch(lines[j])), None)
        if found is None:
            return wanted[i:]
        at = found + 1
    return []


def problems(page: Path, stdout: str) -> list[str]:
    """Where the tutorial at ``page`` and the output of its run (``stdout``, stderr merged)
    disagree: an expected-output block whose lines are not in its block's output, or a
    block that printed something with no expected-output block to show it."""
    found, printed = blocks(page.read_text(encoding="utf-8")), block_outputs(stdout)
    out = []
    for i, block in enumerate(found):
        if block.kind not in RUNS or block.line not in printed:
            continue
        shown = found[i + 1] if i + 1 < len(found) and found[i + 1].kind == "output" else None
        where = f"{page.name}, the {block.kind} block at line {block.line}"
        if shown is None:
            if printed[block.line].strip():
                out.append(f"{where} prints output but no ```text block after it shows it; "
                           f"it printed:\n{printed[block.line]}")  # fmt: skip
            continue
        missing = missing_lines(shown.code, printed[block.line])
        if missing:
            out.append(f"{where}: its expected output (line {shown.line}) has "
                       f"{missing[0]!r} and what follows, not in what it printed:\n"
                       f"{printed[block.line]}")  # fmt: skip
    return out


def run_tutorial(path: Path, workdir: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run every block of the tutorial at ``path`` in ``workdir``; the finished process
    (its stdout, stderr merged in, holds a ``=== ...`` line per block and ``FAILED: ...``
    for a failing one)."""
    workdir.mkdir(parents=True, exist_ok=True)
    found = blocks(path.read_text(encoding="utf-8"))
    runnable = [asdict(b) for b in found if b.kind in (*RUNS, "file")]
    (workdir / ".tutorial-blocks.json").write_text(json.dumps(runnable))
    (workdir / ".tutorial-driver.py").write_text(_DRIVER)
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
           "PYTHONPATH": str(ROOT),  # the suite in a checkout; never the tutorial's folder
           "RLBENCH_DATA_DIR": str(workdir / "data"), "MPLBACKEND": "Agg",
           "COLUMNS": "120", "PYTHONUNBUFFERED": "1"}  # fmt: skip
    return subprocess.run(
        [sys.executable, ".tutorial-driver.py", path.name, ".tutorial-blocks.json"],
        cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        timeout=timeout,
    )  # fmt: skip


def tutorials() -> list[Path]:
    """Every tutorial page (the index aside)."""
    return sorted(p for p in TUTORIALS.glob("*.md") if p.name != "index.md")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, help="tutorials (default: all)")
    parser.add_argument("--keep", type=Path, help="run in this folder and keep it")
    args = parser.parse_args(argv)
    failed = 0
    for path in args.paths or tutorials():
        with tempfile.TemporaryDirectory() as tmp:
            workdir = args.keep / path.stem if args.keep else Path(tmp)
            done = run_tutorial(path.resolve(), workdir)
            print(done.stdout)
            wrong = problems(path.resolve(), done.stdout) if done.returncode == 0 else []
            for problem in wrong:
                print(f"OUTPUT DIFFERS: {problem}")
            ok = done.returncode == 0 and not wrong
            print(f"{path.name}: {'ok' if ok else 'FAILED'}")
            failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
