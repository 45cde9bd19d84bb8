"""The one rule for query strings, on the API and on the pages: a route takes only the query
parameters it declares. A misspelt filter (``env_id`` for ``env``, ``budgets`` for ``budget``)
would otherwise be ignored, and the answer would hold everything as if it were filtered."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.dependencies.models import Dependant


def _query_names(dependant: Dependant) -> set[str]:
    names = {param.alias for param in dependant.query_params}
    for sub in dependant.dependencies:
        names |= _query_names(sub)
    return names


def known_query_params(request: Request) -> None:
    """Refuse (422) a query parameter the route does not take, naming those it takes."""
    route = request.scope["route"]
    accepted = _query_names(route.dependant)
    unknown = sorted(set(request.query_params) - accepted)
    if unknown:
        names = ", ".join(repr(name[:40]) for name in unknown[:5])
        takes = ", ".join(sorted(accepted)) or "no query parameters"
        raise HTTPException(422, f"unknown query parameter {names}; {route.path} takes: {takes}")


@dataclass(frozen=True)
class FilterQuery:
    """The ranking filters a route takes from the query string (as ``Depends()``); checked
    by ``views.checked_filters``."""

    budget: str | None = None
    verification: str | None = None
    family: str | None = None


Filtering = Annotated[FilterQuery, Depends()]
"""A route parameter taking the ranking filters from the query string."""
