"""Environment cards: the :class:`EnvCard` schema, and loading and validating card files.

A card says what an environment is (id, family, API, entry point, kwargs), how it is
scored (primary metric, success rule, reference scores with how they were measured),
which standardized wrappers it gets, and where it belongs (suites, tags, extra).
A malformed card fails with the file, the field and what is accepted.
"""

from __future__ import annotations

import datetime as dt
import math
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from rlbench_suite.core.scoring import (
    Metric,
    OutcomeRule,
    SuccessRule,
    normalized_score,
    references_separated,
)
from rlbench_suite.core.seeds import DATASET_SEEDS, EVALUATION_FIRST_SEED
from rlbench_suite.core.wrapper_names import WRAPPERS
from rlbench_suite.resources import content_dir

Family = Literal["classic", "robotics", "multiagent", "text", "offline"]
Api = Literal["gymnasium", "pettingzoo-parallel", "pettingzoo-aec"]
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

SUITE_NAMESPACE = "rlbench"
COMPETITIVE_TAG = "competitive"
"""The tag of a two-sided game card scored by win rate: its episodes are games against the
card's fixed opponent, rated by the leaderboard's tournament Elo; it needs an ``[outcome]``
rule telling draws from losses."""
ENV_ID_PATTERN = r"^[A-Za-z][A-Za-z0-9_.-]*/[A-Za-z][A-Za-z0-9_.-]*-v\d+$"
ENTRY_POINT_PATTERN = r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$"


CardModel = TypeVar("CardModel", bound=BaseModel)


class CardError(ValueError):
    """A card file is malformed; the message names the file, the field and what is accepted."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RefScore(_Model):
    """A reference score and how it was obtained: measured over seeded episodes, or exact.

    An ``exact`` reference is the primary metric's expected value computed analytically (e.g.
    a matrix game's expected payoff of a mixed strategy); it has no episodes or seeds, and
    ``command`` says how to compute it again.
    """

    value: float = Field(description="the primary metric's value")
    std: float | None = Field(None, description="standard deviation over episodes")
    policy: str = Field(description="what produced it: 'random', 'baseline:NAME', ...")
    method: Literal["measured", "exact"] = "measured"
    episodes: int | None = Field(None, gt=0)
    draws: int | None = Field(
        None, ge=0, description="episodes drawn (measured on a card with an [outcome] rule)"
    )
    seeds: list[int] | None = Field(None, min_length=1, description="reset seeds, one each")
    suite_version: str
    measured: dt.date = Field(description="date of the measurement (YYYY-MM-DD)")
    command: str | None = Field(None, description="the command that measured it")

    @model_validator(mode="after")
    def _one_seed_per_episode(self) -> RefScore:
        if self.method == "exact":
            if self.episodes is not None or self.seeds is not None or self.draws is not None:
                raise ValueError("an exact reference has no episodes, seeds or draws")
            return self
        if self.episodes is None or self.seeds is None:
            raise ValueError("a measured reference needs its 'episodes' and 'seeds'")
        if len(self.seeds) != self.episodes:
            raise ValueError(f"{self.episodes} episodes but {len(self.seeds)} seeds; give one each")
        if self.draws is not None and self.draws > self.episodes:
            raise ValueError(f"{self.draws} draws in {self.episodes} episodes")
        return self

    @property
    def standard_error(self) -> float:
        """The standard error of ``value``: 0 when exact or when no spread was recorded."""
        if self.method == "exact" or self.std is None or not self.episodes:
            return 0.0
        return self.std / math.sqrt(self.episodes)


class References(_Model):
    random: RefScore | None = None
    expert: RefScore | None = None


class Interval(_Model):
    """A point estimate with its 95% interval."""

    point: float
    low: float
    high: float


class TrainedBaseline(_Model):
    """A trained reference policy of the zoo: one algorithm, one budget, several training
    seeds, each scored by the harness under the card's protocol; the aggregate is the
    interquartile mean over seeds with a stratified-bootstrap 95% interval."""

    name: str = Field(description="baseline:<env-name>/<algo>; seed S is .../seed-<S>")
    algo: str
    budget_steps: int = Field(gt=0, description="environment steps, the same for every seed")
    seeds: list[int] = Field(min_length=1, description="the training seeds")
    value: Interval = Field(description="the primary metric: IQM over seeds of each seed's mean")
    normalized: Interval | None = Field(None, description="the same on the 0-100 scale")
    wall_time_s: float = Field(ge=0, description="training wall time summed over seeds")
    results: str = Field(description="the folder of its result files, in baselines/")
    suite_version: str
    measured: dt.date


class EvalDefaults(_Model):
    """The card's default evaluation protocol: episodes, seeds, deterministic actions.

    Evaluation seeds start at :data:`~rlbench_suite.core.seeds.EVALUATION_FIRST_SEED`, clear
    of the training, tuning and reference-score seed ranges (see :mod:`rlbench_suite.core.seeds`).
    """

    episodes: int = Field(50, gt=0)
    first_seed: int = Field(EVALUATION_FIRST_SEED, ge=EVALUATION_FIRST_SEED, lt=DATASET_SEEDS.start)
    deterministic: bool = True

    @property
    def seeds(self) -> list[int]:
        return list(range(self.first_seed, self.first_seed + self.episodes))


class WrapperRef(_Model):
    """A standardized wrapper by versioned name, with its keyword arguments."""

    name: str
    kwargs: dict[str, Any] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _known(cls, name: str) -> str:
        if name not in WRAPPERS:
            raise ValueError(f"unknown wrapper {name!r}; accepted: {', '.join(sorted(WRAPPERS))}")
        return name


class Normalized:
    """The normalized score of a card with ``reference.random`` and ``reference.expert``
    (environment and dataset cards): the one normalization of :mod:`core.scoring`."""

    reference: Any

    def reference_values(self) -> tuple[float, float] | None:
        """``(random, expert)`` reference values, or None: the card has a normalized score
        only when both exist and the expert beats random by the margin of
        :func:`~rlbench_suite.core.scoring.references_separated`."""
        return None if self.normalization_problem() else (
            self.reference.random.value, self.reference.expert.value
        )  # fmt: skip

    def normalization_problem(self) -> str | None:
        """Why the card has no normalized score (None if it has one)."""
        random, expert = self.reference.random, self.reference.expert
        if random is None or expert is None:
            missing = " and ".join(k for k, v in (("random", random), ("expert", expert)) if not v)
            return f"no {missing} reference"
        return references_separated(
            random.value, random.standard_error, expert.value, expert.standard_error
        )

    def normalized_score(self, value: Any) -> Any:
        """``value`` (a number or an array) on the 0 (random) to 100 (expert) scale; NaN
        without both references."""
        references = self.reference_values()
        return math.nan if references is None else normalized_score(value, *references)


class EnvCard(_Model, Normalized):
    """Everything the suite knows about one environment id."""

    id: str = Field(
        pattern=ENV_ID_PATTERN,
        description="namespace/Name-vN: rlbench/Name-vN for the suite's own cards, "
        "another namespace (mylab/Name-v0) for yours",
    )
    family: Family
    api: Api
    entry_point: str = Field(pattern=ENTRY_POINT_PATTERN, description="module:attr")
    vector_entry_point: str | None = Field(None, pattern=ENTRY_POINT_PATTERN)
    batched_entry_point: str | None = Field(
        None,
        pattern=ENTRY_POINT_PATTERN,
        description="multi-agent: a batched backend, a Gymnasium VectorEnv with one slot per "
        "agent of num_games games (rlbench_suite.make_batched)",
    )
    kwargs: dict[str, Any] = Field(default_factory=dict)
    max_episode_steps: int | None = Field(None, gt=0)
    reward_threshold: float | None = None
    primary_metric: Metric
    success: SuccessRule | None = None
    outcome: OutcomeRule | None = Field(
        None, description="competitive cards: how an episode not won is told a draw or a loss"
    )
    agent: str | None = Field(None, description="multi-agent: the agent the scores are for")
    opponents: str | None = Field(
        None,
        description="multi-agent: the --policy spec the other agents play in the Gymnasium "
        "view (partners in cooperative games); random when not given",
    )
    wrappers: list[WrapperRef] = Field(default_factory=list)
    reference: References = Field(default_factory=References)
    trained: list[TrainedBaseline] = Field(
        default_factory=list, description="the zoo's trained baselines, best first"
    )
    evaluation: EvalDefaults = Field(default_factory=EvalDefaults)
    suites: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    extra: Literal[EXTRAS] | None = None  # type: ignore[valid-type]
    upstream_id: str | None = Field(None, description="the original id, for external envs")
    description: str = Field(min_length=20)

    @model_validator(mode="after")
    def _consistent(self) -> EnvCard:
        if self.primary_metric in ("success_rate", "win_rate") and self.success is None:
            raise ValueError(
                f"primary_metric {self.primary_metric!r} needs a [success] rule saying what a "
                "success (or win) is"
            )
        self._check_outcome()
        if self.is_multiagent and self.agent is None:
            raise ValueError("a multi-agent card needs 'agent': the agent its scores are for")
        if not self.is_multiagent and (self.agent, self.opponents) != (None, None):
            raise ValueError(
                "'agent' and 'opponents' are only for multi-agent cards (api pettingzoo-*)"
            )
        if self.is_multiagent and self.vector_entry_point is not None:
            raise ValueError("'vector_entry_point' is only for single-agent (gymnasium) cards")
        if not self.is_multiagent and self.batched_entry_point is not None:
            raise ValueError(
                "'batched_entry_point' is only for multi-agent cards; single-agent cards "
                "name their native vector env as 'vector_entry_point'"
            )
        return self

    def _check_outcome(self) -> None:
        competitive = COMPETITIVE_TAG in self.tags and self.primary_metric == "win_rate"
        if competitive and self.outcome is None:
            raise ValueError(
                f"a card tagged {COMPETITIVE_TAG!r} and scored by win_rate needs an [outcome] "
                "rule (draw_within = ...) telling a drawn episode from a lost one"
            )
        if self.outcome is None:
            return
        if self.primary_metric != "win_rate":
            raise ValueError("an [outcome] rule is for cards whose primary_metric is 'win_rate'")
        for kind in ("random", "expert"):
            ref = getattr(self.reference, kind)
            if ref is not None and ref.method == "measured" and ref.draws is None:
                raise ValueError(
                    f"reference.{kind}: a card with an [outcome] rule records the 'draws' of "
                    "its measured references (rlbench refscores measures them)"
                )

    @property
    def name(self) -> str:
        """The id without its namespace (``CartPole-v1``)."""
        return self.id.split("/", 1)[1]

    @property
    def namespace(self) -> str:
        """The id's namespace: ``rlbench`` for the suite's own cards."""
        return self.id.split("/", 1)[0]

    @property
    def is_multiagent(self) -> bool:
        return self.api != "gymnasium"


def format_validation_error(
    path: Path, error: ValidationError, model: type[BaseModel] | None = None,
    what: str = "environment card",
) -> str:
    """``error`` as lines naming ``path``, each field and what is accepted there."""
    model = model or EnvCard
    lines = [f"{path}: invalid {what}"]
    for item in error.errors():
        field = ".".join(str(part) for part in item["loc"]) or "(card)"
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            owner = _model_at(item["loc"][:-1], model)
            message += f"; accepted fields here: {', '.join(owner.model_fields)}"
            if len(item["loc"]) > 1:
                message += " (in TOML, keys written after a [table] header belong to that table)"
        elif item["type"] in ("string_pattern_mismatch", "greater_than_equal", "less_than"):
            owner = _model_at(item["loc"][:-1], model)
            info = owner.model_fields.get(str(item["loc"][-1]))
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


def _model_at(loc: tuple[Any, ...], model: type[BaseModel]) -> type[BaseModel]:
    """The (nested) card model that the path ``loc`` points into."""
    for part in loc:
        field = model.model_fields.get(str(part)) if isinstance(part, str) else None
        if field is None:
            continue  # a list index
        for candidate in (field.annotation, *getattr(field.annotation, "__args__", ())):
            for inner in (candidate, *getattr(candidate, "__args__", ())):
                if isinstance(inner, type) and issubclass(inner, BaseModel):
                    model = inner
    return model


def read_toml(path: Path) -> dict[str, Any]:
    """The TOML table in ``path``; a :class:`CardError` naming the file if it is unreadable."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise CardError(f"{path}: not valid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CardError(f"{path}: cannot read the card ({type(exc).__name__}: {exc})") from None


def load_card(path: str | Path) -> EnvCard:
    """Parse and validate one card file, raising :class:`CardError` on any problem."""
    return load_model(path, EnvCard, "environment card")


def load_model(path: str | Path, model: type[CardModel], what: str) -> CardModel:
    """Parse the TOML file ``path`` as a ``model`` (a card schema); a :class:`CardError`
    naming the file, the field and what is accepted, calling it a ``what``."""
    path = Path(path)
    data = read_toml(path)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise CardError(format_validation_error(path, exc, model, what)) from None


def card_files(root: Path | None = None) -> list[Path]:
    """All card files under ``root`` (default: the suite's ``envs/`` folder), sorted."""
    root = root if root is not None else content_dir("envs")
    return sorted(root.rglob("*.toml"))


def load_cards_with_paths(
    root: Path | None = None, errors: list[CardError] | None = None,
    load: Callable[[Path], Any] = load_card,
) -> tuple[dict[str, Any], dict[str, Path]]:  # fmt: skip
    """Load every card under ``root`` with ``load``: ``(id -> card, id -> file)``.

    A malformed card or a duplicate id raises :class:`CardError`, unless ``errors`` is a
    list: then the error is appended to it and the card left out.
    """
    loaded: dict[str, Any] = {}
    origin: dict[str, Path] = {}
    for path in card_files(root):
        try:
            card = load(path)
            if card.id in loaded:
                raise CardError(f"{path}: id {card.id!r} is already defined in {origin[card.id]}")
        except CardError as exc:
            if errors is None:
                raise
            errors.append(exc)
            continue
        loaded[card.id] = card
        origin[card.id] = path
    return loaded, origin


def load_cards(root: Path | None = None) -> dict[str, EnvCard]:
    """Load every card under ``root``; duplicate ids are a :class:`CardError`."""
    return load_cards_with_paths(root)[0]


