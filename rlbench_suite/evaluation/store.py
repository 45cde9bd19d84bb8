"""The per-episode log of a run: written as episodes finish, so a run can resume.

A log is a JSON-lines file: a header line (what is being evaluated) and then one
:class:`EpisodeRecord` per finished episode, each flushed and synced to disk before the
next. Resuming re-reads it, checks the header is the same evaluation, drops a last line a
kill cut short, and plays only the missing episodes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from rlbench_suite.core.result import EpisodeRecord


class OtherEvaluationLog(ValueError):
    """An episode log not written by the evaluation resuming it: another one's, or a file whose
    first line is no evaluation's header."""


class EpisodeLog:
    """Append-only, crash-safe log of the episodes of one evaluation."""

    def __init__(self, path: str | Path, header: dict[str, Any], resume: bool = False) -> None:
        self.path = Path(path)
        self.header = json.loads(json.dumps(header, sort_keys=True, default=str))
        self.done: dict[int, EpisodeRecord] = {}
        if self.path.exists():
            if not resume:
                raise FileExistsError(
                    f"{self.path} holds the episodes of an earlier evaluation; pass --resume to "
                    "reuse them (a finished one is summarized again at once, an interrupted one "
                    "continues), --out for another result file, or remove it to start over"
                )
            self._load()
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._write_line({"header": self.header})

    def _load(self) -> None:
        raw = self.path.read_bytes()
        good = raw[: raw.rfind(b"\n") + 1]  # a kill can leave a last line cut short
        lines = good.decode("utf-8", errors="replace").splitlines()
        if not lines:
            raise ValueError(f"{self.path}: empty episode log; remove it to start over")
        try:
            first = json.loads(lines[0])
        except json.JSONDecodeError as exc:
            first = exc
        if not isinstance(first, dict) or not isinstance(first.get("header"), dict):
            what = f"not JSON ({first})" if isinstance(first, Exception) else "no header"
            raise OtherEvaluationLog(
                f"{self.path}:1: not an episode log (its first line must be the evaluation's "
                f"header; {what}); remove it or write to another --out"
            )
        if first["header"] != self.header:
            raise OtherEvaluationLog(
                f"{self.path} was written by a different evaluation (protocol, environment, "
                "policy or the card's reference scores differ); remove it or write to another "
                "--out"
            )
        if len(good) != len(raw):  # only once the log is known to be this evaluation's
            with self.path.open("r+b") as handle:
                handle.truncate(len(good))
        for number, line in enumerate(lines[1:], start=2):
            try:
                record = EpisodeRecord.model_validate_json(line)
            except ValidationError as exc:
                raise ValueError(f"{self.path}:{number}: not an episode record: {exc}") from None
            self.done[record.index] = record

    def _write_line(self, data: dict[str, Any]) -> None:
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(data, sort_keys=True) + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def append(self, record: EpisodeRecord) -> None:
        """Record a finished episode durably (a repeated index is an error)."""
        if record.index in self.done:
            raise ValueError(f"episode {record.index} is already in {self.path}")
        self._write_line(record.model_dump())
        self.done[record.index] = record
