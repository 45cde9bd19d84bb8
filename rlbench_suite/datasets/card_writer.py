"""Write a build's results (counts, hashes, files, versions) into a dataset card file."""

from __future__ import annotations

from pathlib import Path

import tomlkit

from rlbench_suite.core.dataset_cards import load_dataset_card
from rlbench_suite.datasets.builder import BuildOutput


def write_build(path: Path, output: BuildOutput) -> None:
    """Record ``output`` in the card file ``path`` (other keys and comments kept), then check
    that the file still loads; the old text is restored if it does not."""
    old = path.read_text(encoding="utf-8")
    doc = tomlkit.parse(old)
    doc["episodes"] = output.episodes
    doc["steps"] = output.steps
    doc["mean_return"] = round(output.mean_return, 6)
    doc["content_sha256"] = output.content_sha256
    files = tomlkit.aot()
    for file in output.files:
        files.append(tomlkit.item({"path": file.path, "sha256": file.sha256, "size": file.size}))
    doc["files"] = files
    build = doc["build"]
    versions = tomlkit.inline_table()
    versions.update(output.versions)
    build["versions"] = versions  # type: ignore[index]
    if output.cpu is not None:
        build["cpu"] = output.cpu  # type: ignore[index]
    path.write_text(tomlkit.dumps(doc), encoding="utf-8")
    try:
        load_dataset_card(path)
    except Exception:
        path.write_text(old, encoding="utf-8")
        raise
