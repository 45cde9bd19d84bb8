"""Editing a method's metadata: authors, paper and code links, description, algorithm family.

A method's name is its key and never changes. Its metadata may be edited by the token that
created it (the token of its first submission: ``PATCH /api/methods/<name>``), or on the
server by whoever holds the database (``rlbench leaderboard method edit``); a method created
by an import has no token, so only the latter. Every field is checked here: bounded length, no
control characters, links only ``http://`` or ``https://`` URLs with a host (a page shows them
as links); the pages show every field escaped.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator
from sqlalchemy import select
from sqlalchemy.orm import Session

from rlbench_suite.core.result import validation_problems
from rlbench_suite.leaderboard.models import Method, Submission
from rlbench_suite.leaderboard.views import get_method

EDITABLE = ("authors", "paper_url", "code_url", "description", "family")
LIMITS = {"authors": 500, "paper_url": 500, "code_url": 500, "description": 5000, "family": 100}
ALGORITHM_FAMILIES = (
    "policy-gradient",
    "off-policy actor-critic",
    "value-based",
    "offline",
    "model-based",
    "evolutionary",
    "scripted",
    "other",
)
"""The algorithm families a method may name (the rankings' family filter)."""
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class MethodEditError(ValueError):
    """An edit that is refused; the message says what is accepted."""


class MethodNotEditable(PermissionError):
    """A token that did not create the method."""


class MethodEdit(BaseModel):
    """The fields an edit may set (absent: unchanged; null or "": cleared)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    authors: str | None = None
    paper_url: str | None = None
    code_url: str | None = None
    description: str | None = None
    family: str | None = None

    @field_validator(*EDITABLE)
    @classmethod
    def _bounded(cls, value: str | None, info: Any) -> str | None:
        if value is None or not value.strip():
            return None
        value = value.strip()
        limit = LIMITS[info.field_name]
        if len(value) > limit:
            raise ValueError(f"{len(value)} characters; at most {limit} are accepted")
        newlines = "" if info.field_name == "description" else "\n\t"
        if CONTROL.search(value) or any(c in value for c in newlines):
            raise ValueError("control characters are not accepted")
        if info.field_name == "family" and value not in ALGORITHM_FAMILIES:
            raise ValueError(f"{value[:40]!r} is not accepted; accepted: "
                             f"{', '.join(ALGORITHM_FAMILIES)}")  # fmt: skip
        if info.field_name.endswith("_url"):
            parts = urlsplit(value)
            if parts.scheme not in ("http", "https") or not parts.netloc or " " in value:
                raise ValueError(f"{value[:60]!r} is not accepted: an http:// or https:// URL "
                                 "with a host, without spaces")  # fmt: skip
        return value


def option(field: str) -> str:
    """The command-line option that sets ``field``: ``paper_url`` is ``--paper-url``."""
    return "--" + field.replace("_", "-")


def parse_edit(data: Any, cli: bool = False) -> dict[str, str | None]:
    """The fields an edit sets, checked; a :class:`MethodEditError` saying what is accepted,
    in the API's terms (JSON fields, null clears) or with ``cli`` in those of
    ``rlbench leaderboard method edit`` (its options, '' clears)."""
    accepted = (
        f"accepted: a JSON object with any of {', '.join(EDITABLE)} (strings, or null to clear)"
    )
    if not isinstance(data, dict):
        raise MethodEditError(f"expected a JSON object; {accepted}")
    if "name" in data:
        raise MethodEditError(f"a method's name is its key and cannot change; {accepted}")
    try:
        edit = MethodEdit.model_validate(data)
    except ValidationError as exc:
        if cli:  # the command passes only its options' strings: each problem is a value's
            raise MethodEditError("; ".join(
                f"{option(str(e['loc'][0]))}: {e['msg'].removeprefix('Value error, ')}"
                for e in exc.errors())) from None  # fmt: skip
        problems = validation_problems(exc, whole="body").replace("Value error, ", "")
        raise MethodEditError(f"{problems} ({accepted})") from None
    return {k: getattr(edit, k) for k in edit.model_fields_set}


def creator(session: Session, method: Method) -> Submission | None:
    """The submission that created ``method``: its first (``kind`` "import" and no token for
    an import on the server); None while it has none."""
    query = select(Submission).where(Submission.method_id == method.id).order_by(Submission.id)
    return session.scalars(query.limit(1)).first()


def owned_by(session: Session, method: Method, token_id: int | None) -> bool:
    """The one rule of who may add runs to ``method`` and edit it: the server's operator
    (``token_id`` None: the CLI, an import) always; a token when it created the method, or
    while the method has no submission yet (a concurrent creation whose own result lost the
    race leaves it nobody's: the next to add to it creates it)."""
    if token_id is None:
        return True
    first = creator(session, method)
    return first is None or first.token_id == token_id


def edit_method(
    session: Session, name: str, changes: dict[str, str | None], token_id: int | None
) -> Method:
    """Apply checked ``changes`` to method ``name`` for ``token_id`` (None: the server's
    operator, allowed to edit any method)."""
    method = get_method(session, name)
    if not owned_by(session, method, token_id):
        raise MethodNotEditable(
            f"only the token that created method {name!r} may edit it (an imported method is "
            "edited on the server with `rlbench leaderboard method edit`)"
        )
    for field, value in changes.items():
        setattr(method, field, value)
    session.flush()
    return method


def method_dict(method: Method) -> dict[str, Any]:
    """What the API says of a method."""
    return {
        "name": method.name,
        "family": method.family,
        "authors": method.authors,
        "paper_url": method.paper_url,
        "code_url": method.code_url,
        "description": method.description,
    }
