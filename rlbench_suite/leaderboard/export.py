"""``rlbench leaderboard export DIR``: the whole site as static files, for hosting without a
server. Every page reachable from the home page by a plain link is rendered by the app itself
and written where a static host finds it (``/envs/a/b`` -> ``envs/a/b/index.html``), with its
plots, the stylesheet, each result's JSON (``/api/results/ID.json``) and the API docs page with
the OpenAPI document it links to.

The pages are asked for with :data:`STATIC_HEADER`: what needs the server (the compare page,
the filter forms, other protocols' tables) is then left out or said to be on the live site, so
every link of the export resolves to one of its files."""

from __future__ import annotations

import asyncio
import re
from collections import deque
from pathlib import Path, PurePosixPath
from urllib.parse import unquote

import httpx
from fastapi import FastAPI

LINK = re.compile(r'(?:href|src)="(/[^"#]*)"')
STATIC_HEADER = "X-Rlbench-Static-Export"
"""Sent with every request of the export (value ``1``): the pages render their static form."""


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


def export_site(app: FastAPI, folder: Path) -> list[Path]:
    """Write every page reachable from ``/`` (and its plots, CSS, result JSON) under ``folder``."""
    return asyncio.run(_crawl(app, folder))


async def _crawl(app: FastAPI, folder: Path) -> list[Path]:
    """Fetch the pages in process through httpx's ASGI transport (the app has no lifespan
    to run), following their links breadth first from ``/``."""
    written: list[Path] = []
    seen: set[str] = {"/"}
    queue = deque(["/"])
    transport = httpx.ASGITransport(app=app)
    headers = {STATIC_HEADER: "1"}
    async with httpx.AsyncClient(
        transport=transport, base_url="http://export", headers=headers
    ) as client:
        while queue:
            path = queue.popleft()
            response = await client.get(path)
            if response.status_code != 200:
                continue
            content_type = response.headers.get("content-type", "")
            target = _target(folder, path, content_type)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(response.content)
            written.append(target)
            if content_type.startswith("text/html"):
                for link in LINK.findall(response.text):
                    if "?" in link:  # a static page links no query (the site's rule)
                        raise ValueError(f"{path} links {link!r}, which a static host cannot serve")
                    if link not in seen:
                        seen.add(link)
                        queue.append(link)
    return written
