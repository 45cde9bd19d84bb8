"""How the site answers errors: JSON ``{"detail": ...}`` under ``/api/``, the HTML error page
(``base.html`` with ``problem``) everywhere else, for its own errors, unknown paths, requests
that fail validation and URLs holding a NUL; long echoed values cut (``limits.clip_echoes``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from rlbench_suite.leaderboard import pages, views
from rlbench_suite.leaderboard.limits import NUL_REFUSAL, clip_echoes, url_has_nul


def answer(
    request: Request, status: int, detail: str, headers: Mapping[str, str] | None = None
) -> Response:
    """The error ``detail`` with ``status``: JSON for the API, the error page for a browser."""
    if request.url.path.startswith("/api/"):
        return JSONResponse({"detail": clip_echoes(detail)}, status_code=status, headers=headers)
    page = pages.render(request, "base.html", status_code=status, problem=detail)
    page.headers.update(headers or {})
    return page


class RefuseNulInURL:
    """ASGI middleware: a request whose path or query string holds a NUL (``%00``) gets 400,
    answered as every other error (before any route reads it)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and url_has_nul(scope):
            detail = f"the URL contains a NUL character (%00): {NUL_REFUSAL}"
            await answer(Request(scope), 400, detail)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def validation_detail(exc: RequestValidationError) -> str:
    problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
    return f"invalid request: {problems}"


def install(app: FastAPI) -> None:
    """Register the site's error handlers on ``app``."""

    @app.exception_handler(views.NotFound)
    async def _not_found(request: Request, exc: views.NotFound) -> Response:
        return answer(request, 404, str(exc))

    @app.exception_handler(views.BadQuery)
    async def _bad_query(request: Request, exc: views.BadQuery) -> Response:
        return answer(request, 422, str(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> Response:
        detail = str(exc.detail)
        if exc.status_code == 404 and detail == "Not Found":  # no route matched
            detail = f"no page at {request.url.path} on this leaderboard"
        return answer(request, exc.status_code, detail, exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> Response:
        return answer(request, 422, validation_detail(exc))
