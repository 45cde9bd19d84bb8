"""The learning curve: the policy evaluated at fixed intervals of training, one CSV row each.

``curve.csv`` columns: :data:`COLUMNS`. Each point plays ``episodes`` deterministic episodes
of the card's environment (the standard wrapper stack, as the harness plays it) from the same
seeds every time, :data:`CURVE_FIRST_SEED` onwards: the last thousand of the training seed
range, never a card's evaluation seed. The curve is for watching and plotting; the final
score is the harness's ``result.json``. Evaluating draws from no global random generator,
so it does not change the training run it watches.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from rlbench_suite.core.seeds import TRAINING_SEEDS
from rlbench_suite.wrappers import apply_wrappers
from rlbench_suite.wrappers.masks import get_action_mask

CURVE_FILE = "curve.csv"
COLUMNS = (
    "step",
    "wall_time_s",
    "episodes",
    "mean_return",
    "std_return",
    "mean_length",
    "success_rate",
    "normalized_score",
)
CURVE_FIRST_SEED = TRAINING_SEEDS.stop - 1000
"""Curve episodes use seeds 9000, 9001, ... (inside the training range, used by no run)."""
STATS_KEY = "rlbench_episode"


def curve_seeds(episodes: int, first_seed: int = CURVE_FIRST_SEED) -> list[int]:
    return list(range(first_seed, first_seed + episodes))


class CurveEvaluator:
    """Plays the curve's episodes with an SB3 model's deterministic actions (from
    ``first_seed`` on; tuning trials pass one of ``core.seeds.TUNING_SEEDS``)."""

    def __init__(
        self, env_id: str, episodes: int, *, masked: bool = False,
        first_seed: int = CURVE_FIRST_SEED, wrappers: Sequence[Any] = (),
    ) -> None:  # fmt: skip
        self.env = apply_wrappers(gym.make(env_id), list(wrappers))
        self.seeds = curve_seeds(episodes, first_seed)
        self.masked = masked
        self._recurrent_state: tuple[Any, np.ndarray] | None = None

    def close(self) -> None:
        self.env.close()

    def act(self, model: Any, obs: Any, info: dict[str, Any]) -> Any:
        normalizer = model.get_vec_normalize_env()
        if normalizer is not None:
            obs = normalizer.normalize_obs(obs)
        kwargs: dict[str, Any] = {"deterministic": True}
        if self.masked:
            kwargs["action_masks"] = get_action_mask(obs, info)
        if self._recurrent_state is not None:  # RecurrentPPO: the LSTM state of this episode
            state, start = self._recurrent_state
            kwargs.update(state=state, episode_start=start)
        action, state = model.predict(obs, **kwargs)
        if self._recurrent_state is not None:
            self._recurrent_state = (state, np.zeros((1,), dtype=bool))
        return action

    def episode(self, model: Any, seed: int) -> dict[str, Any]:
        recurrent = type(model).__name__ == "RecurrentPPO"
        self._recurrent_state = (None, np.ones((1,), dtype=bool)) if recurrent else None
        obs, info = self.env.reset(seed=seed)
        total, length = 0.0, 0
        while True:
            obs, reward, terminated, truncated, info = self.env.step(self.act(model, obs, info))
            total, length = total + float(reward), length + 1
            if terminated or truncated:
                break
        stats = info.get(STATS_KEY) or {}
        return {
            "r": float(stats.get("r", total)),
            "l": int(stats.get("l", length)),
            "success": stats.get("success"),
            "normalized_score": stats.get("normalized_score"),
        }

    def __call__(self, model: Any, wall_time_s: float) -> dict[str, Any]:
        """One curve row for ``model`` at its current step."""
        episodes = [self.episode(model, seed) for seed in self.seeds]
        returns = np.array([e["r"] for e in episodes])
        successes = [e["success"] for e in episodes if e["success"] is not None]
        scores = [e["normalized_score"] for e in episodes if e["normalized_score"] is not None]
        return {
            "step": int(model.num_timesteps),
            "wall_time_s": round(wall_time_s, 3),
            "episodes": len(episodes),
            "mean_return": float(returns.mean()),
            "std_return": float(returns.std()),
            "mean_length": float(np.mean([e["l"] for e in episodes])),
            "success_rate": float(np.mean(successes)) if successes else math.nan,
            "normalized_score": float(np.mean(scores)) if scores else math.nan,
        }


def append_row(path: Path, row: dict[str, Any]) -> None:
    """Append ``row`` to the curve file (writing the header first if it is new)."""
    new = not path.is_file() or path.stat().st_size == 0
    with open(path, "a", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        if new:
            writer.writeheader()
        writer.writerow({k: row[k] for k in COLUMNS})


def read_curve(path: Path) -> list[dict[str, float]]:
    """The curve's rows, numbers as numbers."""
    if not path.is_file():
        return []
    with open(path, newline="", encoding="utf-8") as f:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]


def truncate_curve(path: Path, last_step: int) -> list[dict[str, Any]]:
    """Drop the rows after ``last_step`` (work after the checkpoint a run resumes from); the
    rows kept."""
    rows = [{**r, "step": int(r["step"]), "episodes": int(r["episodes"])}
            for r in read_curve(path) if r["step"] <= last_step]  # fmt: skip
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.unlink(missing_ok=True)
    for row in rows:
        append_row(tmp, row)
    if rows:
        tmp.replace(path)
    else:
        path.unlink(missing_ok=True)
    return rows
