"""The leaderboard's web application: ``create_app(sessions)`` for uvicorn or a test client."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from sqlalchemy.orm import Session, sessionmaker

from rlbench_suite.core.provenance import package_versions
from rlbench_suite.leaderboard import api, api_docs, dataset_files, errors, pages
from rlbench_suite.leaderboard.errors import RefuseNulInURL
from rlbench_suite.leaderboard.limits import Limits, SubmissionRate
from rlbench_suite.leaderboard.response_cache import ResponseCache
from rlbench_suite.leaderboard.tokens import redact_tokens_in_server_logs
from rlbench_suite.resources import content_dir


def create_app(
    factory: sessionmaker[Session], limits: Limits | None = None, datasets_root: Path | None = None
) -> FastAPI:
    """The site and API over the database ``factory`` opens (already migrated and synced),
    serving the dataset files of the cache ``datasets_root`` (default: the data dir's)."""
    limits = limits or Limits()
    redact_tokens_in_server_logs()  # a token sent in a URL never reaches the access log
    app = FastAPI(
        title="rlbench-suite leaderboard",
        version=package_versions().get("rlbench-suite", "unknown"),  # the suite's, as results say
        description="Results ranked by IQM normalized score with 95% stratified-bootstrap "
        "intervals, one evaluation protocol at a time.",
        docs_url=None,  # /api/docs is api_docs: no CDN, works offline
        redoc_url=None,
        openapi_url="/api/openapi.json",
    )
    app.state.factory = factory
    app.state.limits = limits
    app.state.datasets_root = datasets_root
    app.state.rate = SubmissionRate(limits.submissions_per_minute, factory)
    app.add_middleware(ResponseCache, factory=factory)
    app.add_middleware(RefuseNulInURL)
    app.include_router(api_docs.router)
    app.include_router(api.router)
    app.include_router(pages.router)
    app.include_router(dataset_files.router)
    app.mount(
        "/static", StaticFiles(directory=content_dir("leaderboard") / "static"), name="static"
    )
    app.include_router(dataset_files.files_router)  # /<dataset id>/<file>: the site is a remote

    errors.install(app)
    return app
