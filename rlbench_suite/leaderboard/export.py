"""``rlbench leaderboard export DIR``: the whole site as static files, for hosting without a
server. Every page reachable from the home page by a plain link is rendered by the app itself
and written where a static host finds it (``/envs/a/b`` -> ``envs/a/b/index.html``), with its
plots, the stylesheet, each result's JSON (``/api/results/ID.json``) and the API docs page with
the OpenAPI document it links to.

The pages are asked for with :data:`STATIC_HEADER`: what needs the server (the compare page,
the filter forms, other protocols' tables) is then left out or said to be on the live site, so
every link of the export resolves to one of its files.

Rendering the plots (matplotlib, one per result, environment and suite) is most of an
export's time, so they are fetched from the same app in forked worker processes (one per CPU,
at most :data:`MAX_WORKERS`) while this process crawls the pages; the files are the same
bytes either way."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import re
import shutil
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path, PurePosixPath
from urllib.parse import unquote

import httpx
from fastapi import FastAPI

LINK = re.compile(r'(?:href|src)="(/[^"#]*)"')
STATIC_HEADER = "X-Rlbench-Static-Export"
"""Sent with every request of the export (value ``1``): the pages render their static form."""
PLOTS = "/plots/"
"""The paths fetched by the worker processes: SVG plots, which link nothing further."""
MAX_WORKERS = 8
Fetched = tuple[str, int, str, bytes]
"""(path, status code, content type, body)."""
_APP: FastAPI | None = None
"""The app a forked worker renders with (inherited from the exporting process)."""


def is_static(headers) -> bool:
    """Whether a request's ``headers`` ask for a page's static form (see :data:`STATIC_HEADER`)."""
    return headers.get(STATIC_HEADER) == "1"


def _target(folder: Path, path: str, content_type: str) -> Path:
    parts = PurePosixPath(unquote(path)).parts[1:]
    if any(part in ("..", ".") for part in parts):
        raise ValueError(f"refusing to export the path {path!r}")
    target = folder.joinpath(*parts)
    if content_type.startswith("text/html"):
        return target / "index.html"
    if content_type.startswith("application/json") and target.suffix != ".json":
        raise ValueError(f"a JSON document linked without a .json name: {path!r}")
    return target


def default_workers() -> int:
    """Worker processes for the plots: one per CPU, at most :data:`MAX_WORKERS`; 0 (render
    in this process) on one CPU or where processes cannot be forked."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if (cpus or 1) < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return 0
    return min(cpus or 1, MAX_WORKERS)


MARKER = ".rlbench-export"
"""The file an export leaves in its folder: a later export into that folder replaces it."""


class ExportFolderError(ValueError):
    """The export's folder holds files that are not an earlier export's."""


def _clear(folder: Path) -> None:
    """Make ``folder`` ready for an export: new, empty, or an earlier export's (whose files
    are removed, so no page of a result deleted since stays on the host)."""
    if not folder.exists():
        return
    if not folder.is_dir():
        raise ExportFolderError(f"{folder} is a file; export into a folder")
    entries = list(folder.iterdir())
    if entries and not (folder / MARKER).is_file():
        raise ExportFolderError(
            f"{folder} is not empty and holds no earlier export (no {MARKER} file); export "
            "into a new or empty folder, or an earlier export's, which is replaced"
        )
    for entry in entries:
        shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()


def export_site(app: FastAPI, folder: Path, workers: int | None = None) -> list[Path]:
    """Write every page reachable from ``/`` (and its plots, CSS, result JSON) under ``folder``,
    new, empty or an earlier export's (replaced; :class:`ExportFolderError` otherwise);
    ``workers``: processes rendering the plots (default :func:`default_workers`; 0: none)."""
    _clear(folder)
    files = _export(app, folder, workers)
    (folder / MARKER).write_text("written by rlbench leaderboard export\n", encoding="utf-8")
    return files


def _export(app: FastAPI, folder: Path, workers: int | None) -> list[Path]:
    global _APP
    workers = default_workers() if workers is None else workers
    if workers < 1:
        return asyncio.run(_crawl(app, folder, None))
    _APP = app
    try:
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(workers, context, initializer=_start_worker) as pool:
            pool.submit(int).result()  # fork now, before this process starts its threads
            return asyncio.run(_crawl(app, folder, pool))
    finally:
        _APP = None


def _start_worker() -> None:
    """In a forked worker: leave the parent's pooled database connections to the parent."""
    assert _APP is not None
    _APP.state.factory.kw["bind"].dispose(close=False)


def _client(app: FastAPI) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://export",
        headers={STATIC_HEADER: "1"},
    )


async def _get(client: httpx.AsyncClient, path: str) -> Fetched:
    response = await client.get(path)
    content_type = response.headers.get("content-type", "")
    return path, response.status_code, content_type, response.content


def _fetch(path: str) -> Fetched:
    """In a worker: one path of the app, as the crawl would have fetched it."""
    assert _APP is not None

    async def run() -> Fetched:
        async with _client(_APP) as client:
            return await _get(client, path)

    return asyncio.run(run())


def _write(folder: Path, fetched: Fetched, written: list[Path]) -> bool:
    path, status, content_type, content = fetched
    if status != 200:
        return False
    target = _target(folder, path, content_type)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(content)
    written.append(target)
    return True


async def _crawl(app: FastAPI, folder: Path, pool: ProcessPoolExecutor | None) -> list[Path]:
    """Fetch the pages in process through httpx's ASGI transport (the app has no lifespan
    to run), following their links breadth first from ``/``; the plots in ``pool``'s
    workers when given."""
    written: list[Path] = []
    seen: set[str] = {"/"}
    queue = deque(["/"])
    plots: list[Future[Fetched]] = []
    async with _client(app) as client:
        while queue:
            path = queue.popleft()
            if pool is not None and path.startswith(PLOTS):
                plots.append(pool.submit(_fetch, path))
                continue
            fetched = await _get(client, path)
            if not _write(folder, fetched, written) or not fetched[2].startswith("text/html"):
                continue
            for link in LINK.findall(fetched[3].decode()):
                if "?" in link:  # a static page links no query (the site's rule)
                    raise ValueError(f"{path} links {link!r}, which a static host cannot serve")
                if link not in seen:
                    seen.add(link)
                    queue.append(link)
    for plot in plots:
        _write(folder, plot.result(), written)
    return written
