"""Evaluation protocols: which episodes, with which seeds, count for a score.

An :class:`EvalProtocol` fixes the environment (id and spec hash), the episodes and their
reset seeds, whether actions are deterministic, and the wrapper stack. It is versioned and
hashed; results from different protocol hashes are never ranked together.
"""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Any

import gymnasium as gym
from pydantic import BaseModel, ConfigDict, Field, model_validator

from rlbench_suite.catalog import get_card
from rlbench_suite.registry import wrapper_specs

PROTOCOL_VERSION = 1


class SeedOverlapError(ValueError):
    """Evaluation seeds overlap the seeds a policy was trained or tuned on."""


def canonical_hash(data: Any) -> str:
    """SHA-256 of the canonical JSON of ``data`` (sorted keys, no whitespace)."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def env_spec_hash(env_id: str) -> str:
    """SHA-256 of the registered Gymnasium spec of ``env_id`` (entry point, kwargs, stack)."""
    return canonical_hash(json.loads(gym.spec(get_card(env_id).id).to_json()))


class EvalProtocol(BaseModel):
    """Which episodes of which environment an evaluation plays, and how."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: int = PROTOCOL_VERSION
    env_id: str
    episodes: int = Field(gt=0)
    seeds: list[Annotated[int, Field(ge=0)]] = Field(
        min_length=1, description="one reset seed per episode (non-negative, as Gymnasium's)"
    )
    deterministic: bool = True
    wrappers: list[dict[str, Any]] = Field(default_factory=list)
    max_episode_steps: int | None = None
    reset_options: dict[str, Any] = Field(
        default_factory=dict,
        description="passed to every reset, e.g. {'split': 'test'} for held-out variations",
    )

    @model_validator(mode="after")
    def _seeds_match(self) -> EvalProtocol:
        if len(self.seeds) != self.episodes:
            raise ValueError(f"{self.episodes} episodes but {len(self.seeds)} seeds")
        if len(set(self.seeds)) != len(self.seeds):
            raise ValueError("evaluation seeds must be distinct")
        return self

    @property
    def hash(self) -> str:
        """SHA-256 of the protocol's canonical JSON (empty reset options left out, so the
        protocols from before they existed keep their hashes)."""
        data = self.model_dump(mode="json")
        if not data["reset_options"]:
            del data["reset_options"]
        return canonical_hash(data)

    @property
    def protocol_id(self) -> str:
        """A readable id: env, episodes and the first 12 hex digits of the hash."""
        return f"{self.env_id}@v{self.version}-{self.episodes}ep-{self.hash[:12]}"

    def check_disjoint(self, train_seeds: list[int], tuning_seeds: list[int]) -> None:
        """Raise :class:`SeedOverlapError` if any evaluation seed was used to train or tune."""
        for kind, used in (("training", train_seeds), ("tuning", tuning_seeds)):
            overlap = sorted(set(self.seeds) & set(used))
            if overlap:
                shown = ", ".join(map(str, overlap[:10])) + (" ..." if len(overlap) > 10 else "")
                raise SeedOverlapError(
                    f"{len(overlap)} evaluation seed(s) of {self.protocol_id} were also "
                    f"{kind} seeds of the policy ({shown}); evaluation seeds must be disjoint "
                    "from training and tuning seeds: pass other --seeds"
                )


def default_protocol(
    env_id: str,
    episodes: int | None = None,
    seeds: list[int] | None = None,
    deterministic: bool | None = None,
    reset_options: dict[str, Any] | None = None,
) -> EvalProtocol:
    """The card's default protocol, with any of episodes, seeds, determinism overridden.

    ``reset_options`` go to every ``reset`` (``{"split": "test"}``: held-out variations).

    Given ``seeds`` fix the episodes; given ``episodes`` alone take that many seeds from
    the card's first evaluation seed.
    """
    card = get_card(env_id)
    defaults = card.evaluation
    if seeds is None:
        count = episodes if episodes is not None else defaults.episodes
        seeds = list(range(defaults.first_seed, defaults.first_seed + count))
    elif episodes is not None and episodes != len(seeds):
        raise ValueError(f"--episodes {episodes} disagrees with {len(seeds)} --seeds given")
    return EvalProtocol(
        env_id=card.id,
        episodes=len(seeds),
        seeds=list(seeds),
        deterministic=defaults.deterministic if deterministic is None else deterministic,
        wrappers=[{"name": w.name, "kwargs": w.kwargs} for w in wrapper_specs(card)],
        max_episode_steps=card.max_episode_steps,
        reset_options=dict(reset_options or {}),
    )
