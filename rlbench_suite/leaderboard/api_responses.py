"""What each API route answers, for its OpenAPI document (and so ``/api/docs``): every status
a route can send, said once here; the routes pass ``responses=answers(...)``. A test provokes
each documented status and checks that no other one comes back."""

from __future__ import annotations

from typing import Any

ERROR_BODY = {
    "application/json": {
        "schema": {
            "type": "object",
            "required": ["detail"],
            "properties": {"detail": {"type": "string", "description": "what was wrong"}},
        }
    }
}
"""Every error is ``{"detail": "..."}`` (``leaderboard.errors``)."""
JSON_BODY = {"application/json": {"schema": {"type": "object"}}}

ERRORS: dict[int, str] = {
    400: "malformed body: JSON that does not parse or nests too deep, a NUL character, "
    "a malformed multipart form or Content-Length",
    401: "missing, malformed, unknown or revoked token (`WWW-Authenticate: Bearer`)",
    403: "the token did not create this method",
    404: "not on this leaderboard; the error says what (an unknown name gets the closest ones "
    "suggested)",
    413: "body over this route's size limit (the error names the limit)",
    415: "a body declared as another media type than the route takes: application/json (a "
    "Result, a method edit; a body declared as nothing is read as JSON) or multipart/form-data "
    "(a policy); the error names the accepted type",
    422: "refused: a query parameter the route does not take, a parameter or field of the "
    "wrong type or out of range, or a Result that does not match the card it claims (the "
    "error says what differs)",
    429: "over the token's submissions per minute (the error says when to retry; `Retry-After`), "
    "or, submitting a policy, over its verification jobs waiting (the error names the limit "
    "and the count)",
}
TOKEN = (401, 429)
"""What every route taking a token may answer before reading anything else."""


def answers(*statuses: int, **successes: str) -> dict[int | str, dict[str, Any]]:
    """The ``responses`` of a route: each error status of ``statuses`` with its description
    and body, and each success given as ``s200="..."`` (its status and description)."""
    found: dict[int | str, dict[str, Any]] = {
        int(key.removeprefix("s")): {"description": text, "content": JSON_BODY}
        for key, text in successes.items()
    }
    for status in statuses:
        found[status] = {"description": ERRORS[status], "content": ERROR_BODY}
    return found
