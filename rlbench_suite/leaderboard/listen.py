"""The site's listening socket, bound before any other work so that a taken port is refused
at once, in one line (``rlbench leaderboard serve`` and ``rlbench demo``)."""

from __future__ import annotations

import socket


class PortUnavailable(OSError):
    """The site cannot listen on the address asked for; the message says what to pass."""


def bind_site(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host``:``port`` (0: any free port), for uvicorn to listen on;
    :class:`PortUnavailable` where it cannot be bound (in use, no such address)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise PortUnavailable(
            f"cannot serve on {host}:{port} ({exc.strerror}); pass another --port "
            "(0: any free port)"
        ) from None
    return sock
