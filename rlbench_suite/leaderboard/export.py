"""``rlbench leaderboard export DIR``: the whole site as static files, for hosting without a
server. Every page reachable from the home page by a plain link is rendered by the app itself
and written where a static host finds it (``/envs/a/b`` -> ``envs/a/b/index.html``), with its
plots, the stylesheet, each result's JSON (at its API path) and the API docs page with the
OpenAPI document it links to. Filters and the compare form need the server."""

from __future__ import annotations

import asyncio
import re
from collections import deque
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

import httpx
from fastapi import FastAPI

LINK = re.compile(r'(?:href|src)="(/[^"#]*)"')
SKIPPED = ("/compare",)


def _target(folder: Path, path: str, content_type: str) -> Path:
    parts = PurePosixPath(unquote(path)).parts[1:]
    if any(part in ("..", ".") for part in parts):
        raise ValueError(f"refusing to export the path {path!r}")
    target = folder.joinpath(*parts)
    return target / "index.html" if content_type.startswith("text/html") else target


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
    async with httpx.AsyncClient(transport=transport, base_url="http://export") as client:
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
                    link = urlsplit(link).path if "?" not in link else ""
                    if link and link not in seen and not link.startswith(SKIPPED):
                        seen.add(link)
                        queue.append(link)
    return written
