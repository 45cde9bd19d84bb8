"""The API's limits: the media type a body is declared as, body sizes, submissions per token
per minute, verification jobs waiting per token (counted by ``artifacts.check_queue``), text
without NUL characters (PostgreSQL's text cannot hold them), each named in its refusal, and
how much of a refused value a refusal echoes back."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi import HTTPException, Request
from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session, sessionmaker

from rlbench_suite.leaderboard.db import retried
from rlbench_suite.leaderboard.models import ApiToken, RateHit


@dataclass(frozen=True)
class Limits:
    """How much the API accepts."""

    result_bytes: int = 2 * 1024 * 1024
    policy_bytes: int = 20 * 1024 * 1024
    submissions_per_minute: int = 30
    queued_jobs_per_token: int = 20
    """Verification jobs one token may have queued or running at once."""


def _size(n: int) -> str:
    return f"{n / 1024 / 1024:g} MiB" if n >= 1024 * 1024 else f"{n} bytes"


JSON_TYPE = "application/json"
FORM_TYPE = "multipart/form-data"


def check_content_type(request: Request, accepted: str, what: str) -> None:
    """Refuse (415, naming ``accepted`` and ``what`` to send) a body declared as another media
    type than ``accepted`` (its parameters, e.g. ``charset``, aside); a body declared as
    nothing is read as JSON where JSON is ``accepted`` (``curl --data-binary``, old clients)."""
    declared = request.headers.get("content-type")
    media = (declared or "").split(";")[0].strip().lower()
    if media == accepted or (declared is None and accepted == JSON_TYPE):
        return
    got = f"Content-Type {declared[:100]!r}" if declared else "no Content-Type"
    raise HTTPException(415, f"unsupported media type: {got}; send {accepted}: {what}")


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refused with 413 past ``limit`` bytes (declared or streamed)."""
    what = f"the limit of {request.url.path} is {_size(limit)}"
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise HTTPException(400, "Content-Length must be a whole number of bytes")
        if int(declared) > limit:
            raise HTTPException(413, f"request body too large ({_size(int(declared))}); {what}")
    chunks, total = [], 0
    async for chunk in request.stream():
        total += len(chunk)
        if total > limit:
            raise HTTPException(413, f"request body too large (over {_size(limit)}); {what}")
        chunks.append(chunk)
    return b"".join(chunks)


ECHO_CHARS = 200
_LONG = f"{{{ECHO_CHARS + 1},}}"
_ECHO = re.compile(rf"'(?:[^'\\]|\\.){_LONG}'" + rf'|"(?:[^"\\]|\\.){_LONG}"' + rf"|\S{_LONG}")


def _cut(match: re.Match[str]) -> str:
    text = match.group(0)
    quoted = text[0] in "'\"" and text[-1] == text[0]
    quote, inner = (text[0], text[1:-1]) if quoted else ("", text)
    return f"{quote}{inner[:ECHO_CHARS]}…{quote} ({len(inner)} characters)"


def clip_echoes(message: str) -> str:
    """``message`` with every quoted value or word over :data:`ECHO_CHARS` characters cut
    to that many, an ellipsis and its length: a refusal never echoes a huge input back."""
    return _ECHO.sub(_cut, message)


NUL_REFUSAL = "text with NUL (\\x00) characters is not accepted"


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    return False


def url_has_nul(scope: dict) -> bool:
    """Whether a request's path or query string holds a NUL (``%00``)."""
    return "\x00" in scope["path"] or b"%00" in scope["query_string"]


MAX_JSON_DEPTH = 32
"""The deepest nesting of arrays and objects a JSON body may have (a Result needs 4)."""
_DEEPER = object()


def _too_deep(value: Any) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > MAX_JSON_DEPTH:
                return True
            stack.extend(
                (v, depth + 1) for v in (item.values() if isinstance(item, dict) else item)
            )
    return False


def parse_json(body: bytes | str, what: str, expected: str = "") -> Any:
    """``body`` decoded as JSON, or a 400 saying what is wrong: malformed (with where, or
    ``expected``), nested deeper than :data:`MAX_JSON_DEPTH` levels, or holding a NUL."""
    try:
        value = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        where = f"{type(exc).__name__} at byte {getattr(exc, 'pos', getattr(exc, 'start', '?'))}"
        raise HTTPException(400, f"malformed JSON: {expected or where}") from None
    except RecursionError:  # deeper than the interpreter's stack: too deep by far
        value = _DEEPER
    if value is _DEEPER or _too_deep(value):
        raise HTTPException(
            400, f"{what} is nested deeper than {MAX_JSON_DEPTH} levels of arrays and objects"
        )
    refuse_nul(value, what)
    return value


def refuse_nul(value: Any, what: str) -> None:
    """Refuse (400) ``value`` (a decoded JSON value) if any of its strings holds a NUL."""
    if _has_nul(value):
        raise HTTPException(400, f"{what} contains a NUL character: {NUL_REFUSAL}")


class SubmissionRate:
    """At most ``per_minute`` submissions per token in any moving minute, counted in the
    database (``rate_hits``), so every server process on one database enforces one budget.

    Counting is serialized per token: on PostgreSQL by locking the token's row, on SQLite by
    the database's single writer (the DELETE of the token's expired hits, the transaction's
    first write, takes the write lock before anything is counted).
    """

    def __init__(
        self,
        per_minute: int,
        factory: sessionmaker[Session],
        window_s: float = 60.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.per_minute, self.factory, self.window_s, self.clock = (
            per_minute,
            factory,
            window_s,
            clock,
        )

    def _hit(self, token_id: int) -> float | None:
        """Count one submission; None, or the seconds until the oldest counted one expires."""
        now = self.clock()
        with self.factory.begin() as session:
            session.execute(select(ApiToken.id).where(ApiToken.id == token_id).with_for_update())
            expired = (RateHit.token_id == token_id) & (RateHit.at <= now - self.window_s)
            session.execute(delete(RateHit).where(expired))
            count, oldest = session.execute(
                select(func.count(), func.min(RateHit.at)).where(RateHit.token_id == token_id)
            ).one()
            if count >= self.per_minute:
                return oldest + self.window_s - now
            session.add(RateHit(token_id=token_id, at=now))
        return None

    def check(self, token_id: int) -> None:
        """Count one submission, or refuse it with 429 and when to retry."""
        wait = retried(lambda: self._hit(token_id))
        if wait is None:
            return
        seconds = max(1, int(wait) + 1)
        raise HTTPException(
            429,
            f"rate limit: at most {self.per_minute} submissions per minute per token; "
            f"retry in {seconds} s",
            headers={"Retry-After": str(seconds)},
        )
