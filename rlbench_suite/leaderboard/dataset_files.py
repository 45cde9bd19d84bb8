"""The site as a dataset remote: the ``/datasets`` page and the dataset files it serves.

Every dataset card of the suite (``core.dataset_cards``) is listed. The files of the datasets
in the server's dataset cache (``datasets.cache``: ``<cache>/<id>/<file>``) are served at
``/<id>/<file>`` (``/rlbench/CartPole-expert-v0/data/main_data.hdf5``), the layout of
``datasets.remotes.file_url``, so the site's base URL is a remote for
``rlbench datasets download --remote URL`` and for a card's ``remotes``. Files are served
with single byte ranges by the rules of ``datasets.server`` (``byte_range``, ``refused``):
only files a card lists, present with the card's size, inside the cache once resolved.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import HTMLResponse, Response, StreamingResponse
from sqlalchemy import select

from rlbench_suite.core.cards import SUITE_NAMESPACE
from rlbench_suite.core.dataset_cards import DatasetCard, dataset_cards
from rlbench_suite.datasets.cache import cache_root, dataset_folder
from rlbench_suite.datasets.server import RangeNotSatisfiable, byte_range, refused
from rlbench_suite.leaderboard.api_responses import answers
from rlbench_suite.leaderboard.models import Environment
from rlbench_suite.leaderboard.pages import page, render
from rlbench_suite.leaderboard.query_params import known_query_params

router = APIRouter(
    dependencies=[Depends(known_query_params)]
)  # the page is left out of the OpenAPI document, the API is in it
files_router = APIRouter(include_in_schema=False)
CHUNK = 1 << 20


@dataclass(frozen=True)
class DatasetFile:
    """One file of a dataset card, and whether this server has it."""

    path: str
    size: int
    sha256: str
    url: str
    served: bool


def served_file(card: DatasetCard, relative: str, root: Path) -> Path | None:
    """The cached file ``relative`` of ``card`` if it may be served: a file the card lists,
    present with the card's size, inside the cache once resolved; else None."""
    listed = {f.path: f for f in card.files}
    if relative not in listed:
        return None
    folder = dataset_folder(card, root)
    path = folder / relative
    if refused(root, path) or path.stat().st_size != listed[relative].size:
        return None
    return path


def dataset_rows(root: Path) -> list[dict[str, Any]]:
    """Every dataset card, with its files and which of them this server has."""
    rows = []
    for card in sorted(dataset_cards().values(), key=lambda c: c.id):
        files = [
            DatasetFile(
                f.path,
                f.size,
                f.sha256,
                f"/{card.id}/{f.path}",
                served_file(card, f.path, root) is not None,
            )
            for f in card.files
        ]
        rows.append(
            {
                "id": card.id,
                "env_id": card.env_id,
                "kind": card.kind,
                "episodes": card.episodes,
                "steps": card.steps,
                "size": sum(f.size for f in card.files) if card.files else None,
                "content_sha256": card.content_sha256,
                "files": files,
                "served": bool(files) and all(f.served for f in files),
                "build_command": f"rlbench datasets build {card.id}",
            }
        )
    return rows


def datasets_root(request: Request) -> Path:
    """The dataset cache this app serves (``create_app(datasets_root=)``, else the default)."""
    return request.app.state.datasets_root or cache_root()


@page(router, "/datasets", response_class=HTMLResponse, include_in_schema=False)
def datasets_page(request: Request) -> HTMLResponse:
    rows = dataset_rows(datasets_root(request))
    with request.app.state.factory() as session:  # offline ids this leaderboard ranks
        ranked = set(session.scalars(select(Environment.id)))
    for row in rows:  # link only to pages this leaderboard has
        row["ranked"], row["env_ranked"] = row["id"] in ranked, row["env_id"] in ranked
    remote = str(request.base_url).rstrip("/")
    return render(request, "datasets.html", datasets=rows, remote=remote)


@router.get("/api/datasets", responses=answers(422))
def list_datasets(request: Request) -> list[dict[str, Any]]:
    """The dataset cards, their files (path, size, SHA-256, URL) and which this server has."""
    rows = dataset_rows(datasets_root(request))
    return [{**r, "files": [asdict(f) for f in r["files"]]} for r in rows]


def _chunks(path: Path, start: int, length: int) -> Iterator[bytes]:
    with open(path, "rb") as handle:
        handle.seek(start)
        while length > 0:
            chunk = handle.read(min(CHUNK, length))
            if not chunk:
                return
            length -= len(chunk)
            yield chunk


@files_router.api_route(f"/{SUITE_NAMESPACE}/{{name}}/{{relative:path}}", methods=["GET", "HEAD"])
def dataset_file(request: Request, name: str, relative: str) -> Response:
    """A dataset file from the cache, whole or one byte range (``Range: bytes=a-b``)."""
    card = dataset_cards().get(f"{SUITE_NAMESPACE}/{name}")
    path = served_file(card, relative, datasets_root(request)) if card is not None else None
    if path is None:
        raise HTTPException(404, f"no file {relative!r} of a dataset {SUITE_NAMESPACE}/{name} "
                            "on this server; see /datasets")  # fmt: skip
    size = path.stat().st_size
    headers = {"Accept-Ranges": "bytes", "Content-Type": "application/octet-stream"}
    try:
        wanted = byte_range(request.headers.get("range"), size)
    except RangeNotSatisfiable:
        return Response(status_code=416, headers={**headers, "Content-Range": f"bytes */{size}"})
    start, end = wanted if wanted is not None else (0, size - 1)
    length = end - start + 1
    headers["Content-Length"] = str(length)
    status = 200
    if wanted is not None:
        status = 206
        headers["Content-Range"] = f"bytes {start}-{end}/{size}"
    if request.method == "HEAD":
        return Response(status_code=status, headers=headers)
    return StreamingResponse(_chunks(path, start, length), status_code=status, headers=headers)
