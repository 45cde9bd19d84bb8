"""Evaluation protocols: which episodes, with which seeds, of which environment spec count.

An :class:`EvalProtocol` fixes the environment (its id and the hash of its registered
Gymnasium spec: entry point, arguments, step limit and wrapper stack), the episodes and their
reset seeds, whether actions are deterministic, and the options passed to every reset. It is
versioned and hashed; results under different protocol hashes are never ranked together.

Version 1 protocols (written before version 2) restated the wrapper stack and the step limit
instead of the spec hash; they still load and keep their hashes.
"""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rlbench_suite.core.cards import EnvCard

PROTOCOL_VERSION = 2
_V1_ONLY = ("wrappers", "max_episode_steps")


class SeedOverlapError(ValueError):
    """Evaluation seeds overlap the seeds a policy was trained or tuned on."""


def canonical_hash(data: Any) -> str:
    """SHA-256 of the canonical JSON of ``data`` (sorted keys, no whitespace)."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class EvalProtocol(BaseModel):
    """Which episodes of which environment an evaluation plays, and how."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: Literal[1, 2] = PROTOCOL_VERSION
    env_id: str
    spec_hash: str | None = Field(
        None, description="SHA-256 of the registered Gymnasium spec (version 2 and later)"
    )
    episodes: int = Field(gt=0)
    seeds: list[Annotated[int, Field(ge=0)]] = Field(
        min_length=1, description="one reset seed per episode (non-negative, as Gymnasium's)"
    )
    deterministic: bool = True
    reset_options: dict[str, Any] = Field(
        default_factory=dict,
        description="passed to every reset, e.g. {'split': 'test'} for held-out variations",
    )
    wrappers: list[dict[str, Any]] | None = Field(None, description="version 1 only")
    max_episode_steps: int | None = Field(None, description="version 1 only")

    @model_validator(mode="after")
    def _consistent(self) -> EvalProtocol:
        if len(self.seeds) != self.episodes:
            raise ValueError(f"{self.episodes} episodes but {len(self.seeds)} seeds")
        if len(set(self.seeds)) != len(self.seeds):
            raise ValueError("evaluation seeds must be distinct")
        if self.version >= 2:
            if self.spec_hash is None:
                raise ValueError("a version 2 protocol needs the environment's spec_hash")
            if self.wrappers is not None or self.max_episode_steps is not None:
                raise ValueError(
                    "wrappers and max_episode_steps belong to version 1 protocols; version 2 "
                    "pins them through spec_hash"
                )
        elif self.spec_hash is not None:
            raise ValueError("a version 1 protocol has no spec_hash")
        return self

    @classmethod
    def for_card(
        cls,
        card: EnvCard,
        spec_hash: str,
        episodes: int | None = None,
        seeds: list[int] | None = None,
        deterministic: bool | None = None,
        reset_options: dict[str, Any] | None = None,
    ) -> EvalProtocol:
        """The card's default protocol, with any of episodes, seeds, determinism overridden.

        Given ``seeds`` fix the episodes; given ``episodes`` alone take that many seeds from
        the card's first evaluation seed. ``reset_options`` go to every ``reset``
        (``{"split": "test"}``: held-out variations).
        """
        defaults = card.evaluation
        if seeds is None:
            count = episodes if episodes is not None else defaults.episodes
            seeds = list(range(defaults.first_seed, defaults.first_seed + count))
        elif episodes is not None and episodes != len(seeds):
            raise ValueError(f"--episodes {episodes} disagrees with {len(seeds)} --seeds given")
        return cls(
            env_id=card.id,
            spec_hash=spec_hash,
            episodes=len(seeds),
            seeds=list(seeds),
            deterministic=defaults.deterministic if deterministic is None else deterministic,
            reset_options=dict(reset_options or {}),
        )

    @property
    def hash(self) -> str:
        """SHA-256 of the protocol's canonical JSON.

        Empty reset options are left out (so protocols from before they existed keep their
        hashes), and so are the fields of the other version.
        """
        data = self.model_dump(mode="json")
        if not data["reset_options"]:
            del data["reset_options"]
        if self.version >= 2:
            for key in _V1_ONLY:
                del data[key]
        else:
            del data["spec_hash"]
            data["wrappers"] = data["wrappers"] or []
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
