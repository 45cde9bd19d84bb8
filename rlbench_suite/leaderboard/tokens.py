"""API tokens: issued once, stored as their SHA-256 only, revocable."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

from sqlalchemy import select
from sqlalchemy.orm import Session

from rlbench_suite.leaderboard.models import ApiToken, utcnow

TOKEN_PREFIX = "rlb_"
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
    if session.scalar(select(ApiToken).where(ApiToken.name == name)) is not None:
        raise TokenError(f"a token named {name!r} exists already; revoke it or pick another name")
    value = TOKEN_PREFIX + secrets.token_urlsafe(32)
    row = ApiToken(name=name, token_sha256=token_hash(value))
    session.add(row)
    session.flush()
    return row, value


def revoke_token(session: Session, name: str) -> ApiToken:
    """Revoke the token named ``name`` (revoking twice keeps the first time)."""
    row = session.scalar(select(ApiToken).where(ApiToken.name == name))
    if row is None:
        known = ", ".join(session.scalars(select(ApiToken.name).order_by(ApiToken.name))) or "none"
        raise TokenError(f"no token named {name!r}; known: {known}")
    if row.revoked_at is None:
        row.revoked_at = utcnow()
    return row


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
