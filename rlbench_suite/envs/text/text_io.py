"""Shared conventions of the text games: spaces, charsets, and reading commands safely.

Every text game observes and acts in Gymnasium ``Text`` spaces over :data:`CHARSET`
(printable ASCII: letters, digits, punctuation, space and newline). Observations are at most
the game's ``max_observation_length`` characters; commands at most
:data:`MAX_COMMAND_LENGTH`. :func:`read_command` is how every ``step`` reads its action:
any string up to the limit is accepted (unknown or malformed commands are the game's to
answer in-game, with zero reward), while a non-string or an over-long string is a
:class:`ValueError` that names what is accepted. Nothing else from ``step`` may raise.
"""

from __future__ import annotations

import re
import string
import unicodedata
from typing import Any

from gymnasium import spaces

CHARSET = frozenset(string.ascii_letters + string.digits + string.punctuation + " \n")
"""The characters observations are made of (and commands are sampled from)."""
MAX_COMMAND_LENGTH = 256
_OUTSIDE_CHARSET = re.compile(f"[^{re.escape(''.join(sorted(CHARSET)))}]")


def text_space(max_length: int, min_length: int = 0) -> spaces.Text:
    """A ``Text`` space over :data:`CHARSET` with at most ``max_length`` characters."""
    charset = "".join(sorted(CHARSET))
    return spaces.Text(max_length=max_length, min_length=min_length, charset=charset)


def read_command(action: Any, max_length: int = MAX_COMMAND_LENGTH) -> str:
    """``action`` as a normalized command: lower case, single spaces, no control characters.

    Raises ValueError for a non-string or a string longer than ``max_length`` characters.
    """
    if isinstance(action, bytes):
        action = action.decode("utf-8", errors="replace")
    if not isinstance(action, str):
        raise ValueError(
            f"a text game's action is a string (a command of at most {max_length} "
            f"characters), got {type(action).__name__}"
        )
    if len(action) > max_length:
        raise ValueError(f"commands are at most {max_length} characters; got one of {len(action)}")
    cleaned = "".join(" " if unicodedata.category(c).startswith(("C", "Z")) else c for c in action)
    return " ".join(cleaned.lower().split())


def clip_observation(text: str, max_length: int) -> str:
    """``text`` restricted to :data:`CHARSET` and cut to ``max_length`` characters."""
    kept = _OUTSIDE_CHARSET.sub("?", text)
    return kept if len(kept) <= max_length else kept[: max_length - 3] + "..."
