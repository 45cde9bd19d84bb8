"""API tokens: issued once, stored as their SHA-256 only, revocable."""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import secrets

from sqlalchemy import select
from sqlalchemy.orm import Session

from rlbench_suite.leaderboard.models import ApiToken, utcnow

TOKEN_PREFIX = "rlb_"
_TOKEN_TEXT = re.compile(re.escape(TOKEN_PREFIX) + r"[A-Za-z0-9_\-]+|(?<=token=)[^&\s\"]+")
REDACTED = "[redacted]"


def redact_tokens(text: str) -> str:
    """``text`` with every token value (``rlb_...``, or any ``token=`` query value) hidden."""
    return _TOKEN_TEXT.sub(REDACTED, text)


class RedactTokens(logging.Filter):
    """A log filter hiding token values in a record's message and arguments (uvicorn's
    access log prints the request line, query string included)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact_tokens(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(redact_tokens(a) if isinstance(a, str) else a for a in record.args)
        return True


def redact_tokens_in_server_logs() -> None:
    """Hide token values in uvicorn's access and error logs (once per process)."""
    for name in ("uvicorn.access", "uvicorn.error"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactTokens) for f in logger.filters):
            logger.addFilter(RedactTokens())


NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,99}$"


class TokenError(ValueError):
    """A token name that is taken or malformed, or a token that does not exist."""


def token_hash(token: str) -> str:
    """The stored form of a token."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def create_token(session: Session, name: str) -> tuple[ApiToken, str]:
    """A new token named ``name``: its row and its value (shown once, never stored)."""
    if not re.match(NAME_PATTERN, name):
        raise TokenError(
            f"token name {name!r} is not accepted: 1-100 letters, digits and _.@- , "
            "starting with a letter or digit"
        )
    known = session.scalar(select(ApiToken).where(ApiToken.name == name))
    if known is not None and known.revoked_at is not None:
        raise TokenError(
            f"a token named {name!r} was revoked on {known.revoked_at:%Y-%m-%d}; a name is "
            "never given to a second token (its methods and runs stay the revoked token's): "
            "pick another name"
        )
    if known is not None:
        raise TokenError(f"a token named {name!r} exists already; revoke it or pick another name")
    value = TOKEN_PREFIX + secrets.token_urlsafe(32)
    row = ApiToken(name=name, token_sha256=token_hash(value))
    session.add(row)
    session.flush()
    return row, value


def revoke_token(session: Session, name: str) -> tuple[ApiToken, bool]:
    """Revoke the token named ``name``; whether this call revoked it (revoking twice keeps
    the first time)."""
    row = session.scalar(select(ApiToken).where(ApiToken.name == name))
    if row is None:
        known = ", ".join(session.scalars(select(ApiToken.name).order_by(ApiToken.name))) or "none"
        raise TokenError(f"no token named {name!r}; known: {known}")
    if row.revoked_at is not None:
        return row, False
    row.revoked_at = utcnow()
    return row, True


def list_tokens(session: Session) -> list[ApiToken]:
    """Every token, oldest first (their values are not known)."""
    return list(session.scalars(select(ApiToken).order_by(ApiToken.id)))


def authenticate(session: Session, value: str) -> ApiToken | None:
    """The live token whose value is ``value``; None for unknown or revoked ones."""
    digest = token_hash(value)
    row = session.scalar(select(ApiToken).where(ApiToken.token_sha256 == digest))
    if row is None or row.revoked_at is not None:
        return None
    if not hmac.compare_digest(row.token_sha256, digest):
        return None
    row.last_used_at = utcnow()
    return row
