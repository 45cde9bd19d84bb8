"""The API's limits: body sizes and submissions per token per minute, named in each refusal."""

from __future__ import annotations

import time
from dataclasses import dataclass

from fastapi import HTTPException, Request
from limits import RateLimitItemPerMinute
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter


@dataclass(frozen=True)
class Limits:
    """How much the API accepts."""

    result_bytes: int = 2 * 1024 * 1024
    policy_bytes: int = 20 * 1024 * 1024
    submissions_per_minute: int = 30


def _size(n: int) -> str:
    return f"{n / 1024 / 1024:g} MiB" if n >= 1024 * 1024 else f"{n} bytes"


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


class SubmissionRate:
    """At most ``per_minute`` submissions per token in any moving minute (in this process)."""

    def __init__(self, per_minute: int) -> None:
        self.item = RateLimitItemPerMinute(per_minute)
        self.limiter = MovingWindowRateLimiter(MemoryStorage())

    def check(self, token_id: int) -> None:
        """Count one submission, or refuse it with 429 and when to retry."""
        key = str(token_id)
        if self.limiter.hit(self.item, "token", key):
            return
        reset, _ = self.limiter.get_window_stats(self.item, "token", key)
        wait = max(1, int(reset - time.time()) + 1)
        raise HTTPException(
            429,
            f"rate limit: at most {self.item.amount} submissions per minute per token; "
            f"retry in {wait} s",
            headers={"Retry-After": str(wait)},
        )
