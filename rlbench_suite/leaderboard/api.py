"""The JSON API: submissions (token, size and rate limits) and read-only listings."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, HTTPException, Path, Query, Request, Response
from fastapi.responses import JSONResponse
from sqlalchemy import select
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser

from rlbench_suite.leaderboard import elo, views
from rlbench_suite.leaderboard.api_responses import TOKEN, answers
from rlbench_suite.leaderboard.artifacts import QueueFull, parse_metadata, submit_policy
from rlbench_suite.leaderboard.db import retried
from rlbench_suite.leaderboard.limits import (
    FORM_TYPE,
    JSON_TYPE,
    check_content_type,
    parse_json,
    read_body,
    refuse_nul,
)
from rlbench_suite.leaderboard.methods import LIMITS as METHOD_LIMITS
from rlbench_suite.leaderboard.methods import (
    MethodEditError,
    MethodNotEditable,
    edit_method,
    method_dict,
    parse_edit,
)
from rlbench_suite.leaderboard.models import (
    MAX_ROW_ID,
    Environment,
    Result,
    Submission,
    VerificationJob,
)
from rlbench_suite.leaderboard.pages import trailing_slash
from rlbench_suite.leaderboard.queries import methods_with_results
from rlbench_suite.leaderboard.query_params import Filtering, FilterQuery, known_query_params
from rlbench_suite.leaderboard.store import RefusedResult, accept_result
from rlbench_suite.leaderboard.tokens import authenticate

router = APIRouter(
    prefix="/api", dependencies=[Depends(known_query_params)], responses=answers(422)
)
TOKEN_HELP = "send 'Authorization: Bearer <token>' (issued by `rlbench leaderboard token create`)"


def require_token(request: Request, authorization: Annotated[str | None, Header()] = None) -> int:
    """The id of the live token the request carries; 401 otherwise (the value is never echoed)."""
    scheme, _, value = (authorization or "").partition(" ")
    if not authorization:
        raise HTTPException(
            401, f"missing token: {TOKEN_HELP}", headers={"WWW-Authenticate": "Bearer"}
        )
    if scheme.lower() != "bearer" or not value.strip():
        raise HTTPException(
            401,
            f"malformed Authorization header: {TOKEN_HELP}",
            headers={"WWW-Authenticate": "Bearer"},
        )
    def known() -> int | None:
        with request.app.state.factory.begin() as session:
            token = authenticate(session, value.strip())
            return None if token is None else token.id

    token_id = retried(known)
    if token_id is None:
        raise HTTPException(401, "unknown or revoked token", headers={"WWW-Authenticate": "Bearer"})
    request.app.state.rate.check(token_id)
    return token_id


Token = Annotated[int, Depends(require_token)]
RowId = Annotated[int, Path(ge=0, le=MAX_ROW_ID)]


def _filters(session: Session, query: FilterQuery) -> views.Filters:
    try:
        return views.checked_filters(session, query.budget, query.verification, query.family)
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None


RESULT_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {"type": "object", "description": "a Result JSON (rlbench eval's output)"}
            }
        },
    }
}
POLICY_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["policy", "metadata"],
                    "properties": {
                        "policy": {
                            "type": "string",
                            "format": "binary",
                            "description": "the .onnx file",
                        },
                        "metadata": {
                            "type": "string",
                            "description": "JSON: env_id, method, "
                            "training_budget_steps, train_seeds, description",
                        },
                    },
                }
            }
        },
    }
}


@router.post(
    "/results",
    status_code=201,
    openapi_extra=RESULT_BODY,
    responses=answers(
        400,
        *TOKEN,
        413,
        415,
        422,
        s201="stored as a new self-reported result: its id, level and page URL",
        s200="already stored (the same Result JSON): the stored row's id, level and URL",
    ),
)
async def post_result(
    request: Request, token_id: Token, method: Annotated[str | None, Query(max_length=100)] = None
) -> JSONResponse:
    """Submit a Result JSON (``Content-Type: application/json``); it is stored as
    self-reported (the server sets the level)."""
    check_content_type(request, JSON_TYPE, "a Result JSON (rlbench eval's output)")
    body = await read_body(request, request.app.state.limits.result_bytes)
    data = parse_json(body, "the Result JSON")

    def store() -> tuple[int, bool, str]:  # in a worker thread: the event loop keeps serving
        with request.app.state.factory.begin() as session:
            stored = accept_result(session, data, method_name=method, token_id=token_id)
            return stored.result.id, stored.created, stored.result.verification

    try:
        result_id, created, verification = await run_in_threadpool(retried, store)
    except RefusedResult as exc:
        raise HTTPException(422, str(exc)) from None
    payload = {
        "id": result_id,
        "created": created,
        "verification": verification,
        "url": str(request.url_for("result_page", result_id=result_id)),
    }
    return JSONResponse(payload, status_code=201 if created else 200)


async def _once(body: bytes) -> AsyncIterator[bytes]:
    yield body


@router.post(
    "/submissions",
    status_code=202,
    openapi_extra=POLICY_BODY,
    responses=answers(
        400,
        *TOKEN,
        413,
        415,
        422,
        s202="queued for verification: the submission, its job and the status URL",
        s200="the same policy was submitted for this env and method before: its job (queued, "
        "running or done) and status URL, `created` false",
    ),
)
async def post_submission(request: Request, token_id: Token) -> JSONResponse:
    """Submit an ONNX policy with its metadata; it is queued for verification (202), unless
    the same policy already has a job on that env and method that is queued, running or
    done: that job is answered (200, ``created`` false). A token may have at most
    ``queued_jobs_per_token`` jobs waiting (429 past it)."""
    body = await read_body(request, request.app.state.limits.policy_bytes)
    check_content_type(request, FORM_TYPE, "a form with the fields 'policy' and 'metadata'")
    try:
        form = await MultiPartParser(
            request.headers, _once(body), max_files=1, max_fields=1, max_part_size=64 * 1024
        ).parse()
    except MultiPartException as exc:
        raise HTTPException(400, f"malformed multipart body: {exc.message}") from None
    policy, metadata = form.get("policy"), form.get("metadata")
    if not isinstance(policy, UploadFile) or not isinstance(metadata, str):
        raise HTTPException(
            422,
            "a policy submission needs a file field 'policy' (.onnx) and a "
            "text field 'metadata' (JSON)",
        )
    content = await policy.read()
    refuse_nul(policy.filename or "", "the file name")
    parse_json(metadata, "the metadata")  # well-formed; parse_metadata checks its fields

    def store() -> dict[str, Any]:  # in a worker thread: the event loop keeps serving
        meta = parse_metadata(metadata)
        most = request.app.state.limits.queued_jobs_per_token
        with request.app.state.factory.begin() as session:
            queued = submit_policy(session, content, policy.filename, meta, token_id, most)
            return {
                "submission": queued.submission.id,
                "job": queued.job.id,
                "state": queued.job.state,
                "created": queued.created,
                "result": queued.job.result_id,
                "artifact_sha256": queued.submission.artifact_sha256,
            }

    try:
        payload = await run_in_threadpool(retried, store)
    except QueueFull as exc:
        raise HTTPException(429, str(exc)) from None
    except RefusedResult as exc:
        raise HTTPException(422, str(exc)) from None
    payload["url"] = str(request.url_for("submission_status", submission_id=payload["submission"]))
    return JSONResponse(payload, status_code=202 if payload["created"] else 200)


@router.get("/submissions/{submission_id}", name="submission_status", responses=answers(404))
def submission_status(request: Request, submission_id: RowId) -> dict[str, Any]:
    """A policy submission and its verification job: ``result`` is the server's re-run, and
    ``verifies`` the self-reported result it reproduced, which the site lists in its place."""
    with request.app.state.factory() as session:
        submission = session.get(Submission, submission_id)
        if submission is None:
            raise HTTPException(404, f"no submission {submission_id}")
        job = session.scalar(
            select(VerificationJob).where(VerificationJob.submission_id == submission_id)
        )
        rerun = session.get(Result, job.result_id) if job and job.result_id else None
        return {
            "submission": submission.id,
            "kind": submission.kind,
            "env_id": submission.env_id,
            "method": submission.method.name,
            "artifact_sha256": submission.artifact_sha256,
            "disagreements": submission.metadata_.get("disagreements", {}),
            "job": None
            if job is None
            else {
                "id": job.id,
                "state": job.state,
                "error": job.error,
                "result": job.result_id,  # the re-run
                # the self-reported result the re-run reproduced (listed in its place), or null
                "verifies": rerun.verifies_result_id if rerun else None,
            },
        }


@router.get("/envs")
def list_envs(request: Request) -> list[dict[str, Any]]:
    """The environments accepting results."""
    with request.app.state.factory() as session:
        envs = session.scalars(
            select(Environment).where(Environment.active).order_by(Environment.id)
        )
        return [
            {
                "id": e.id,
                "family": e.family,
                "primary_metric": e.primary_metric,
                "protocol_hash": e.protocol_hash,
                "spec_hash": e.spec_hash,
                "suites": [s.name for s in e.suites],
            }
            for e in envs
        ]


@router.get("/envs/{namespace}/{name}/ranking", responses=answers(404))
def env_ranking(
    request: Request,
    namespace: str,
    name: str,
    query: Filtering,
    protocol: str | None = None,
) -> dict[str, Any]:
    """An environment's ranking (IQM normalized score, 95% intervals, rank ranges)."""
    with request.app.state.factory() as session:
        filters = _filters(session, query)
        return views.env_ranking(session, f"{namespace}/{name}", filters, protocol)


@router.get("/envs/{namespace}/{name}/elo", responses=answers(404, 422))
def env_elo(request: Request, namespace: str, name: str, query: Filtering) -> dict[str, Any]:
    """The tournament Elo of a competitive environment's game (the Duel family), with 95%
    credible intervals (null: unbounded, the player won or lost every game), rating the
    games of the runs the ranking's filters keep."""
    with request.app.state.factory() as session:
        filters = _filters(session, query)
        env = views.get_env(session, f"{namespace}/{name}")
        table = elo.tournament(session, env, filters.apply)
        if table is None:
            raise HTTPException(
                404, f"{env.id} is not a competitive environment (no tag '{elo.TAG}')"
            )
        return table


@router.get("/suites/{name}/ranking", responses=answers(404))
def suite_ranking(
    request: Request,
    name: str,
    query: Filtering,
) -> dict[str, Any]:
    """A suite's aggregate ranking and performance profiles."""
    with request.app.state.factory() as session:
        filters = _filters(session, query)
        return views.suite_ranking(session, name, filters)


@router.get("/results", responses=answers(404))
def list_results(
    request: Request,
    response: Response,
    env: str | None = None,
    method: str | None = None,
    verification: str | None = None,
    budget: str | None = None,
    protocol_hash: str | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=MAX_ROW_ID)] = 0,
) -> list[dict[str, Any]]:
    """Stored results, newest first; ``budget`` keeps a budget class and the smaller ones.
    The ``X-Total-Count`` header says how many match, and ``Link`` names the next and
    previous pages (RFC 8288, as GitHub's API pages)."""
    with request.app.state.factory() as session:
        filters = _filters(session, FilterQuery(budget, verification))
        rows, total = views.list_results(
            session,
            env_id=env,
            method=method,
            verification=filters.verification,
            budget=filters.budget,
            protocol_hash=protocol_hash or None,
            limit=limit,
            offset=offset,
        )
    response.headers["X-Total-Count"] = str(total)
    links = []
    if offset + limit < total:
        links.append((offset + limit, "next"))
    if offset > 0:
        links.append((max(0, offset - limit), "prev"))
    if links:
        response.headers["Link"] = ", ".join(
            f'<{request.url.include_query_params(offset=at)}>; rel="{rel}"' for at, rel in links
        )
    return rows


@router.get("/results/{result_id}.json", include_in_schema=False)
def get_result_file(request: Request, result_id: RowId) -> dict[str, Any]:
    """``/api/results/{id}`` under a file's name: what the result page links to, so that
    the same link works on the server and in the static export (a ``.json`` file there)."""
    return get_result(request, result_id)


@router.get("/results/{result_id}", responses=answers(404))
def get_result(request: Request, result_id: RowId) -> dict[str, Any]:
    """One stored result: the Result JSON whole, with the server's fields (also at
    ``/api/results/{result_id}.json``, as the static export has it)."""
    with request.app.state.factory() as session:
        row = session.get(Result, result_id)
        if row is None:
            raise HTTPException(404, f"no result {result_id}")
        return {**views.result_summary(row, row.method.name), "result": row.document}


@router.get("/methods")
def list_methods(request: Request) -> list[dict[str, Any]]:
    """The methods with results."""
    with request.app.state.factory() as session:
        return [method_dict(m) for m in session.scalars(methods_with_results())]


@router.get("/methods/{name:path}", responses=answers(404), response_model=None)
def get_method(request: Request, name: str) -> dict[str, Any] | Response:
    """One method's metadata (``/api/methods/`` redirects to the list)."""
    with request.app.state.factory() as session:
        if moved := trailing_slash(request, name, lambda n: views.has_method(session, n)):
            return moved
        return method_dict(views.get_method(session, name))


EDIT_BYTES = 64 * 1024
METHOD_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        field: {"type": ["string", "null"], "maxLength": limit}
                        for field, limit in METHOD_LIMITS.items()
                    },
                }
            }
        },
    }
}


@router.patch(
    "/methods/{name:path}",
    openapi_extra=METHOD_BODY,
    responses=answers(400, *TOKEN, 403, 404, 413, 415, 422, s200="the method as edited"),
)
async def edit_method_metadata(request: Request, name: str, token_id: Token) -> dict[str, Any]:
    """Edit a method's authors, paper_url, code_url or description (the name is its key);
    only the token that created the method may."""
    check_content_type(request, JSON_TYPE, "a JSON object of the fields to change")
    body = await read_body(request, EDIT_BYTES)
    data = parse_json(body, "the edit", expected="send a JSON object")
    try:
        changes = parse_edit(data)
    except MethodEditError as exc:
        raise HTTPException(422, str(exc)) from None

    def store() -> dict[str, Any]:
        with request.app.state.factory.begin() as session:
            return method_dict(edit_method(session, name, changes, token_id))

    try:
        return await run_in_threadpool(retried, store)
    except LookupError as exc:
        raise HTTPException(404, str(exc)) from None
    except MethodNotEditable as exc:
        raise HTTPException(403, str(exc)) from None


@router.get("/compare", responses=answers(404))
def compare(request: Request, a: str, b: str, suite: str | None = None) -> dict[str, Any]:
    """P(a run of method a beats a run of method b), per environment and overall."""
    with request.app.state.factory() as session:
        return views.compare(session, a, b, suite)
