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
- anything else (```` ```text ```` for output, ```` ```toml ```` without ``# file:``): shown
  only.

The folder is the working directory, on ``PYTHONPATH`` (a tutorial's own modules import),
and ``RLBENCH_DATA_DIR`` points inside it, so a tutorial writes nothing elsewhere. The
tests (``tests/test_tutorials.py``) run every tutorial this way.
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


@dataclass(frozen=True)
class Block:
    """A fenced code block of a tutorial: ``kind`` is python, bash, file or show."""

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
        elif language in ("python", "bash"):
            found.append(Block(language, "\n".join(body) + "\n", start))
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


def run_tutorial(path: Path, workdir: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run every block of the tutorial at ``path`` in ``workdir``; the finished process
    (its output holds a ``=== ...`` line per block and ``FAILED: ...`` for a failing one)."""
    workdir.mkdir(parents=True, exist_ok=True)
    runnable = [asdict(b) for b in blocks(path.read_text(encoding="utf-8")) if b.kind != "show"]
    (workdir / ".tutorial-blocks.json").write_text(json.dumps(runnable))
    (workdir / ".tutorial-driver.py").write_text(_DRIVER)
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
           "PYTHONPATH": os.pathsep.join([str(workdir), str(ROOT)]),
           "RLBENCH_DATA_DIR": str(workdir / "data"), "MPLBACKEND": "Agg",
           "COLUMNS": "120"}  # fmt: skip
    return subprocess.run(
        [sys.executable, ".tutorial-driver.py", path.name, ".tutorial-blocks.json"],
        cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout,
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
            print(done.stdout + done.stderr)
            print(f"{path.name}: {'ok' if done.returncode == 0 else 'FAILED'}")
            failed += done.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
