"""Submitting to a leaderboard server over HTTP (``rlbench submit``)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

TOKEN_ENV_VAR = "RLBENCH_LEADERBOARD_TOKEN"


class SubmitError(RuntimeError):
    """The server refused a submission or could not be reached; the message says why."""


def find_token(config_file: Path) -> str:
    """The token from ``$RLBENCH_LEADERBOARD_TOKEN``, else from ``config_file``."""
    token = os.environ.get(TOKEN_ENV_VAR, "").strip()
    if not token and config_file.is_file():
        token = config_file.read_text(encoding="utf-8").strip()
    if not token:
        raise SubmitError(
            f"no token: set {TOKEN_ENV_VAR} or write it to {config_file} "
            "(a server's admin issues one with `rlbench leaderboard token create NAME`)"
        )
    return token


def _post(
    server: str, path: str, token: str, headers: dict[str, str] | None = None, **kwargs: Any
) -> dict[str, Any]:
    import httpx

    url = server.rstrip("/") + path
    headers = {"Authorization": f"Bearer {token}", **(headers or {})}
    try:
        response = httpx.post(url, headers=headers, timeout=120, **kwargs)
    except httpx.HTTPError as exc:
        raise SubmitError(f"cannot reach {url}: {exc}") from None
    try:
        body = response.json()
    except ValueError:
        body = {"detail": response.text[:500]}
    if response.status_code >= 400:
        raise SubmitError(f"{url} refused ({response.status_code}): {body.get('detail', body)}")
    return body


def submit_result(server: str, token: str, result: Path, method: str | None) -> dict[str, Any]:
    """POST a Result file; the server's answer (id, created, verification, url)."""
    params = {"method": method} if method else {}
    headers = {"Content-Type": "application/json"}
    return _post(
        server, "/api/results", token, content=result.read_bytes(), params=params, headers=headers
    )


def policy_metadata(result: dict[str, Any], method: str) -> dict[str, Any]:
    """The ``metadata`` a policy submission sends, from the Result the policy produced."""
    identity = result.get("policy", {})
    return {
        "env_id": result["env_id"],
        "method": method,
        "training_budget_steps": result.get("training_budget_steps"),
        "train_seeds": identity.get("train_seeds", []),
        "wrappers": identity.get("wrappers", []),
    }


def check_policy_metadata(metadata: dict[str, Any]) -> None:
    """Refuse, before anything is sent, metadata the server would refuse (its own model):
    a :class:`SubmitError` naming the first field and why."""
    from pydantic import ValidationError

    from rlbench_suite.leaderboard.artifacts import PolicyMetadata

    try:
        PolicyMetadata.model_validate(metadata)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise SubmitError(f"the policy's metadata (from the result's policy record) would be "
                          f"refused: {where}: {first['msg']}; nothing was sent") from None


def submit_policy(
    server: str, token: str, policy: Path, result: dict[str, Any], method: str
) -> dict[str, Any]:
    """POST an ONNX policy with the metadata of the Result it produced; queued to verify."""
    metadata = policy_metadata(result, method)
    return _post(
        server,
        "/api/submissions",
        token,
        files={"policy": (policy.name, policy.read_bytes())},
        data={"metadata": json.dumps(metadata)},
    )
