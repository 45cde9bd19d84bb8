"""The site's pages (Jinja2, server-rendered, no JavaScript) and their SVG plots."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from sqlalchemy import select
from sqlalchemy.orm import Session

from rlbench_suite.core.wording import budget, counted, fixed, score, significant
from rlbench_suite.leaderboard import elo, plots, ranking, views
from rlbench_suite.leaderboard.export import is_static
from rlbench_suite.leaderboard.limits import clip_echoes
from rlbench_suite.leaderboard.models import (
    MAX_ROW_ID,
    VERIFICATION_LEVELS,
    Result,
    Suite,
)
from rlbench_suite.leaderboard.queries import env_card, method_runs, methods_with_results
from rlbench_suite.leaderboard.query_params import Filtering, FilterQuery, known_query_params
from rlbench_suite.resources import content_dir

router = APIRouter(include_in_schema=False, dependencies=[Depends(known_query_params)])
SVG = "image/svg+xml"


def page(route_of: APIRouter, path: str, **kwargs: Any) -> Callable:
    """``route_of.get(path)`` that answers HEAD too: a link checker or ``curl -I`` gets the
    page's status and headers (uvicorn sends no body for HEAD). The API stays GET-only, as its
    OpenAPI document says."""
    return route_of.api_route(path, methods=["GET", "HEAD"], **kwargs)


def trailing_slash(request: Request, name: str, exists: Callable[[str], bool]) -> Response | None:
    """The redirect Starlette's ``redirect_slashes`` would give (307, the query kept) where a
    ``{name:path}`` route matched only because of a trailing slash: ``/methods/`` to the index
    ``/methods``, ``/methods/x/`` to ``/methods/x`` (unless something is called ``x/``)."""
    if name and (not name.endswith("/") or exists(name)):
        return None
    return RedirectResponse(str(request.url.replace(path=request.url.path.rstrip("/"))), 307)


@functools.cache
def templates() -> Jinja2Templates:
    """The site's templates (autoescaped: every stored string is shown escaped)."""
    found = Jinja2Templates(directory=content_dir("leaderboard") / "templates")
    found.env.filters["counted"] = counted  # {{ n|counted("environment") }}
    found.env.filters["fixed"] = fixed  # {{ x|fixed(1) }}: "0.0" where "%.1f" writes "-0.0"
    found.env.filters["significant"] = significant  # {{ x|significant(4) }}
    found.env.filters["score"] = score  # {{ x|score(normalized) }}: 98.7, or a rate's 0.987
    return found


def render(request: Request, name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    """The template ``name`` with ``context``; a ``problem`` shown with long values cut;
    ``static``: whether the page is rendered for the static export (``export.is_static``)."""
    context["static"] = is_static(request.headers)
    if context.get("problem"):
        context["problem"] = clip_echoes(context["problem"])
    return templates().TemplateResponse(request, name, context, status_code=status_code)


def _filters(session: Session, query: FilterQuery) -> tuple[views.Filters, str | None]:
    """The filters the query string names, and an error message for bad ones."""
    try:
        return views.checked_filters(session, query.budget, query.verification, query.family), None
    except ValueError as exc:
        return views.Filters(), str(exc)


def _plot_query(request: Request, problem: str | None) -> str:
    """The plot's query string: the page's, or where its filters were refused (the table is
    shown unfiltered) only its protocol."""
    if not problem:
        return str(request.url.query)
    protocol = request.query_params.get("protocol")
    return urlencode({"protocol": protocol}) if protocol else ""


def _filter_choices(session) -> dict[str, list[str]]:
    return {
        "budgets": list(ranking.BUDGET_CLASSES),
        "levels": list(VERIFICATION_LEVELS),
        "families": views.families(session),
    }


@page(router, "/", response_class=HTMLResponse)
def home(request: Request) -> HTMLResponse:
    with request.app.state.factory() as session:
        suites = views.suite_index(session)
        newest_verified, _ = views.list_results(session, verification="verified", limit=10)
        newest, _ = views.list_results(session, limit=10)
        return render(
            request,
            "home.html",
            suites=suites,
            counts=views.counts(session),
            newest_verified=newest_verified,
            newest=newest,
        )


@page(router, "/envs/{namespace}/{name}", response_class=HTMLResponse)
def env_page(
    request: Request,
    namespace: str,
    name: str,
    query: Filtering,
    protocol: str | None = None,
) -> HTMLResponse:
    with request.app.state.factory() as session:
        filters, problem = _filters(session, query)
        env = views.get_env(session, f"{namespace}/{name}")
        table = views.env_ranking(session, env.id, filters, protocol or None)
        return render(
            request,
            "env.html",
            status_code=422 if problem else 200,
            env=env,
            card=env_card(env),
            table=table,
            elo=elo.tournament(session, env, filters.apply),
            filters=filters,
            problem=problem,
            query=_plot_query(request, problem),
            **_filter_choices(session),
        )


@page(router, "/plots/envs/{namespace}/{name}.svg")
def env_plot(
    request: Request,
    namespace: str,
    name: str,
    query: Filtering,
    protocol: str | None = None,
) -> Response:
    with request.app.state.factory() as session:
        filters, _ = _filters(session, query)
        table = views.env_ranking(session, f"{namespace}/{name}", filters, protocol or None)
    groups = tuple(
        (
            f"{row['method']}, {budget(row['budget_class'])}",
            tuple(table["run_scores"][views.run_scores_key(row["method"], row["budget_class"])]),
        )
        for row in table["rows"]
    )
    return Response(plots.score_distribution(groups, table["scale"]), media_type=SVG)


@page(router, "/suites", response_class=HTMLResponse)
def suites_index(request: Request) -> HTMLResponse:
    with request.app.state.factory() as session:
        return render(request, "suites.html", suites=views.suite_index(session))


@page(router, "/suites/", response_class=HTMLResponse)
def suites_slash(request: Request) -> Response:
    """``/suites/`` (which ``/suites/{name}`` does not match) redirects to the index."""
    return RedirectResponse(str(request.url.replace(path="/suites")), 307)


@page(router, "/docs")
def docs(request: Request) -> Response:
    """``/docs`` (FastAPI's usual place, and where people look) redirects to ``/api/docs``."""
    return RedirectResponse(str(request.url.replace(path="/api/docs")), 307)


@page(router, "/suites/{name}", response_class=HTMLResponse)
def suite_page(
    request: Request,
    name: str,
    query: Filtering,
) -> HTMLResponse:
    with request.app.state.factory() as session:
        filters, problem = _filters(session, query)
        table = views.suite_ranking(session, name, filters)
        return render(
            request,
            "suite.html",
            status_code=422 if problem else 200,
            table=table,
            filters=filters,
            problem=problem,
            query=_plot_query(request, problem),
            **_filter_choices(session),
        )


@page(router, "/plots/suites/{name}.svg")
def suite_plot(
    request: Request,
    name: str,
    query: Filtering,
) -> Response:
    with request.app.state.factory() as session:
        filters, _ = _filters(session, query)
        table = views.suite_ranking(session, name, filters)
    profiles = table["profiles"]
    curves = tuple(
        (m, tuple(c["fraction"]), tuple(c["low"]), tuple(c["high"]))
        for m, c in profiles["methods"].items()
    )
    return Response(plots.performance_profiles(tuple(profiles["taus"]), curves), media_type=SVG)


@page(router, "/methods/{name:path}", response_class=HTMLResponse)
def method_page(request: Request, name: str) -> Response:
    with request.app.state.factory() as session:
        if moved := trailing_slash(request, name, lambda n: views.has_method(session, n)):
            return moved
        method = views.get_method(session, name)
        results, _ = views.list_results(session, method=name, limit=500)
        runs = {r.result_id: r.score for r in method_runs(session, method)}
        normalized = views.normalized_envs(session, {r["env_id"] for r in results})
        return render(
            request,
            "method.html",
            method=method,
            results=results,
            scores=runs,
            normalized=normalized,
        )


@page(router, "/methods", response_class=HTMLResponse)
def methods_index(request: Request) -> HTMLResponse:
    with request.app.state.factory() as session:
        return render(request, "methods.html", methods=views.method_index(session))


@page(router, "/envs", response_class=HTMLResponse)
def envs_index(request: Request) -> HTMLResponse:
    with request.app.state.factory() as session:
        return render(request, "envs.html", envs=views.env_index(session))


def _result(session, result_id: int) -> Result:
    row = session.get(Result, result_id) if 0 <= result_id <= MAX_ROW_ID else None
    if row is None:
        raise HTTPException(404, f"no result {result_id}")
    return row


@page(router, "/results/{result_id}", response_class=HTMLResponse, name="result_page")
def result_page(request: Request, result_id: int) -> HTMLResponse:
    with request.app.state.factory() as session:
        row = _result(session, result_id)
        card = env_card(views.get_env(session, row.env_id))
        return render(
            request,
            "result.html",
            row=row,
            doc=row.document,
            computed=views.computed_normalized_score(card, row.document),
            summary=views.result_summary(row, row.method.name),
            checks=views.verification_notes(session, row),
            normalized=card.normalization_problem() is None,
            scale=views.scale(card),
        )


@page(router, "/plots/results/{result_id}.svg")
def result_plot(request: Request, result_id: int) -> Response:
    with request.app.state.factory() as session:
        row = _result(session, result_id)
        returns = tuple(float(r) for r in row.document["returns"])
        title = f"{row.env_id}: {row.policy_name}"
    return Response(plots.episode_returns(returns, title), media_type=SVG)


@page(router, "/compare", response_class=HTMLResponse)
def compare_page(
    request: Request, a: str | None = None, b: str | None = None, suite: str | None = None
) -> HTMLResponse:
    first, second, suite = a, b, suite or None
    with request.app.state.factory() as session:
        methods = [m.name for m in session.scalars(methods_with_results())]
        suites = list(session.scalars(select(Suite.name).order_by(Suite.name)))
        comparison, problem, status = None, None, 200
        if first and second:
            try:
                comparison = views.compare(session, first, second, suite)
            except (views.NotFound, views.BadQuery) as exc:
                problem, status = str(exc), 404 if isinstance(exc, views.NotFound) else 422
        return render(
            request,
            "compare.html",
            status_code=status if problem else 200,
            methods=methods,
            suites=suites,
            first=first,
            second=second,
            suite=suite,
            comparison=comparison,
            problem=problem,
        )
