"""The SAME_STEP autoreset info of the suite's native vector envs, built in one place."""

from __future__ import annotations

from typing import Any

import numpy as np


def same_step_final(
    observations: np.ndarray, done: np.ndarray, info: dict[str, np.ndarray] | None = None
) -> dict[str, Any]:
    """``final_obs`` / ``final_info`` entries (with their masks) for the envs that are ``done``.

    Call it before resetting those envs. ``final_obs`` always has one slot per env (an
    object array), so it keeps that shape even when every env ends on the same step;
    ``final_info`` holds ``info``'s arrays, masked to the ending envs.
    """
    final_obs = np.full(len(done), None, dtype=object)
    for i in np.flatnonzero(done):
        final_obs[i] = observations[i]
    final_info = {key: np.array(value, copy=True) for key, value in (info or {}).items()}
    final_info.update({f"_{key}": done.copy() for key in info or {}})
    return {"final_obs": final_obs, "_final_obs": done.copy(),
            "final_info": final_info, "_final_info": done.copy()}  # fmt: skip
