"""Environment cards: the :class:`EnvCard` model and loading and validation of ``envs/**/*.toml``.

A card says what an environment is (id, family, API, entry point, kwargs), how it is
scored (primary metric, success rule, reference scores with how they were measured),
which standardized wrappers it gets, and where it belongs (suites, tags, extra).
A malformed card fails with the file, the field and what is accepted.
"""

from __future__ import annotations

import difflib
import functools
import math
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rlbench_suite.resources import content_dir

Family = Literal["classic", "robotics", "multiagent", "text", "offline"]
Api = Literal["gymnasium", "pettingzoo-parallel", "pettingzoo-aec"]
Metric = Literal["return", "success_rate", "win_rate", "score/max_score"]
EXTRAS = (
    "classic",
    "robotics",
    "multiagent",
    "text",
    "baselines",
    "datasets",
    "leaderboard",
    "distributed",
    "plots",
)

ENV_ID_PATTERN = r"^rlbench/[A-Za-z][A-Za-z0-9_.-]*-v\d+$"
ENTRY_POINT_PATTERN = r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$"


class CardError(ValueError):
    """A card file is malformed; the message names the file, the field and what is accepted."""


class UnknownEnvError(LookupError):
    """An id that is not in the catalog; the message lists the closest known ids."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RefScore(_Model):
    """A reference score and how it was measured."""

    value: float = Field(description="the primary metric's value")
    std: float | None = Field(None, description="standard deviation over episodes")
    policy: str = Field(description="what produced it: 'random', 'baseline:NAME', ...")
    episodes: int = Field(gt=0)
    seeds: list[int] = Field(min_length=1, description="reset seeds, one per episode")
    suite_version: str
    measured: str = Field(description="ISO date of the measurement")
    command: str | None = Field(None, description="the command that measured it")


class References(_Model):
    random: RefScore | None = None
    expert: RefScore | None = None


class SuccessRule(_Model):
    """When an episode counts as a success.

    ``info``: ``info[key]`` was truthy at any step (Meta-World's definition);
    ``terminated``: the episode terminated (reached a terminal state) rather than being truncated;
    ``terminated_positive``: it terminated with a positive last reward;
    ``return_at_least``: the episode return is at least ``threshold``.
    """

    kind: Literal["info", "terminated", "terminated_positive", "return_at_least"]
    key: str = "success"
    threshold: float | None = None


class WrapperRef(_Model):
    """A standardized wrapper by versioned name, with its keyword arguments."""

    name: str
    kwargs: dict[str, Any] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _known(cls, name: str) -> str:
        from rlbench_suite.wrappers import WRAPPERS

        if name not in WRAPPERS:
            raise ValueError(f"unknown wrapper {name!r}; accepted: {', '.join(sorted(WRAPPERS))}")
        return name


class EnvCard(_Model):
    """Everything the suite knows about one environment id."""

    id: str = Field(pattern=ENV_ID_PATTERN, description="rlbench/Name-vN")
    family: Family
    api: Api
    entry_point: str = Field(pattern=ENTRY_POINT_PATTERN, description="module:attr")
    vector_entry_point: str | None = Field(None, pattern=ENTRY_POINT_PATTERN)
    kwargs: dict[str, Any] = Field(default_factory=dict)
    max_episode_steps: int | None = Field(None, gt=0)
    reward_threshold: float | None = None
    primary_metric: Metric
    success: SuccessRule | None = None
    agent: str | None = Field(None, description="multi-agent: the agent the scores are for")
    wrappers: list[WrapperRef] = Field(default_factory=list)
    reference: References = Field(default_factory=References)
    suites: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    extra: Literal[EXTRAS] | None = None  # type: ignore[valid-type]
    upstream_id: str | None = Field(None, description="the original id, for external envs")
    description: str = Field(min_length=20)

    @property
    def name(self) -> str:
        return self.id.split("/", 1)[1]

    @property
    def is_multiagent(self) -> bool:
        return self.api != "gymnasium"

    def normalized_score(self, value: float) -> float:
        """``value`` on the 0 (random) to 100 (expert) scale; NaN without both references."""
        random, expert = self.reference.random, self.reference.expert
        if random is None or expert is None or expert.value == random.value:
            return math.nan
        return 100.0 * (value - random.value) / (expert.value - random.value)


def _format_validation_error(path: Path, error: ValidationError) -> str:
    lines = [f"{path}: invalid environment card"]
    for item in error.errors():
        field = ".".join(str(part) for part in item["loc"]) or "(card)"
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            message += f"; accepted fields: {', '.join(EnvCard.model_fields)}"
        elif item["type"] == "string_pattern_mismatch":
            info = EnvCard.model_fields.get(str(item["loc"][0]))
            if info is not None and info.description:
                message += f"; accepted: {info.description}"
        elif item["type"] == "missing":
            message = "required field is missing"
        lines.append(
            f"  field '{field}': {message} (got {item.get('input')!r})"
            if item["type"] != "missing"
            else f"  field '{field}': {message}"
        )
    return "\n".join(lines)


def load_card(path: Path) -> EnvCard:
    """Parse and validate one card file, raising :class:`CardError` on any problem."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise CardError(f"{path}: not valid TOML: {exc}") from None
    try:
        return EnvCard.model_validate(data)
    except ValidationError as exc:
        raise CardError(_format_validation_error(path, exc)) from None


def card_files(root: Path | None = None) -> list[Path]:
    """All card files under ``root`` (default: the suite's ``envs/`` folder), sorted."""
    root = root if root is not None else content_dir("envs")
    return sorted(p for p in root.rglob("*.toml") if "assets" not in p.parts)


def load_cards(root: Path | None = None) -> dict[str, EnvCard]:
    """Load every card under ``root``; duplicate ids are a :class:`CardError`."""
    cards: dict[str, EnvCard] = {}
    origin: dict[str, Path] = {}
    for path in card_files(root):
        card = load_card(path)
        if card.id in cards:
            raise CardError(f"{path}: id {card.id!r} is already defined in {origin[card.id]}")
        cards[card.id] = card
        origin[card.id] = path
    return cards


@functools.cache
def catalog() -> dict[str, EnvCard]:
    """The suite's own cards, loaded once."""
    return load_cards()


@functools.cache
def card_paths() -> dict[str, Path]:
    """Card id -> the file it was loaded from."""
    return {load_card(p).id: p for p in card_files()}


def normalize_id(env_id: str) -> str:
    """Normalize an id given as ``rlbench_suite:rlbench/X-v0``, ``rlbench/X-v0`` or ``X-v0``."""
    env_id = env_id.strip()
    if ":" in env_id:
        env_id = env_id.split(":", 1)[1]
    return env_id if env_id.startswith("rlbench/") else f"rlbench/{env_id}"


def closest_ids(env_id: str, known: list[str], n: int = 3) -> list[str]:
    """The known ids closest to ``env_id`` (case-insensitive), best first."""
    lowered = {k.lower(): k for k in known}
    matches = difflib.get_close_matches(env_id.lower(), list(lowered), n=n, cutoff=0.5)
    return [lowered[m] for m in matches]


def get_card(env_id: str) -> EnvCard:
    """The card for ``env_id``; unknown ids raise :class:`UnknownEnvError` with suggestions."""
    cards = catalog()
    key = normalize_id(env_id)
    if key in cards:
        return cards[key]
    close = closest_ids(key, list(cards))
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    raise UnknownEnvError(
        f"unknown environment id {env_id!r}.{hint} Run `rlbench list` to see all {len(cards)} ids."
    )


def select_cards(
    family: str | None = None, suite: str | None = None, tag: str | None = None
) -> list[EnvCard]:
    """Cards matching every given filter, sorted by family then id."""
    cards = [
        c
        for c in catalog().values()
        if (family is None or c.family == family)
        and (suite is None or suite in c.suites)
        and (tag is None or tag in c.tags)
    ]
    return sorted(cards, key=lambda c: (c.family, c.id))
