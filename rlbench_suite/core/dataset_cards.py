"""Dataset cards: the :class:`DatasetCard` schema, and the suite's dataset catalog.

A dataset card (``datasets/**/*.toml``) says what an offline dataset is (its id, the env it
was recorded in, its D4RL kind), how it is built from source (the policies, the command and
the first seed), what it holds (episodes, steps, the SHA-256 and size of every file, a content
hash over the data itself), where it can be downloaded (remotes, in order) and the reference
returns its normalized score uses. A malformed card fails with the file, the field and what
is accepted, as environment cards do.

Ids are Gymnasium ids, ``rlbench/<EnvName>-<kind>-vN`` (``rlbench/CartPole-medium-v0``): the
environment's name without its version, the kind, the dataset's own version. One id is then
the dataset (``rlbench datasets download``), its Minari id (``minari.load_dataset``) and its
offline environment (``gym.make``); Gymnasium allows a single ``/`` in an id, so the form
``rlbench/<env>/<kind>-vN`` could not be registered.
"""

from __future__ import annotations

import functools
import math
import re
from pathlib import Path, PurePosixPath
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from rlbench_suite.core.cards import (
    ENV_ID_PATTERN,
    SUITE_NAMESPACE,
    CardError,
    Normalized,
    RefScore,
    _Model,
    load_cards_with_paths,
    load_model,
)
from rlbench_suite.core.catalog import normalize_id, unknown_id_message
from rlbench_suite.core.seeds import DATASET_SEEDS, TRAINING_SEEDS
from rlbench_suite.resources import content_dir

DatasetKind = Literal["random", "medium", "medium-replay", "medium-expert", "expert"]
DATASET_KINDS: tuple[str, ...] = DatasetKind.__args__  # type: ignore[attr-defined]
_KINDS_RE = "|".join(sorted(DATASET_KINDS, key=len, reverse=True))
DATASET_ID_PATTERN = rf"^[A-Za-z][\w.-]*/[A-Za-z][\w.-]*-({_KINDS_RE})-v\d+$"
SHA256_PATTERN = r"^[0-9a-f]{64}$"
DATA_FILE = "data/main_data.hdf5"
"""The data file of a dataset, inside its folder (Minari's HDF5 layout)."""
METADATA_FILE = "data/metadata.json"
"""Minari's metadata file of a dataset, inside its folder."""
PROTOCOLS = "a folder, file://, http://, https:// or s3://"
"""What a remote may be (a card's ``remotes``, ``download --remote``, ``publish --to``)."""


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def remote_userinfo(url: str) -> tuple[str, str | None, str | None]:
    """``url`` without its ``user:password@`` part, and the (percent-decoded) user and
    password. The authority is everything after ``://`` up to the first ``/``, and the userinfo
    everything in it before its last ``@``, so a password holding ``@``, ``#``, ``?`` or a space
    is split off whole (as curl does), not read as part of the host."""
    from urllib.parse import unquote

    scheme, sep, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    if not sep or "@" not in authority:
        return url, None, None
    userinfo, host = authority.rsplit("@", 1)
    user, _, password = userinfo.partition(":")
    return f"{scheme}://{host}{slash}{path}", unquote(user), unquote(password)


def shown(text: str) -> str:
    """``text`` naming a remote (its URL, its answer) as it may be printed: control characters
    (terminal escapes) as ``?``, a URL's password as ``***`` (:func:`remote_userinfo`'s)."""
    text = _CONTROL.sub("?", text)
    return re.sub(r"(://[^/\s:@]*:)[^/]*@", r"\1***@", text)


def check_remote(remote: str) -> str:
    """``remote`` when it names a place (a folder, or a URL with more than slashes after
    ``://``); a ValueError otherwise: an empty one (an unset shell variable) or ``file:///``
    would be the filesystem's root (``/``, written out, is taken as meant)."""
    _, sep, rest = remote.partition("://")
    if not remote.strip() or (sep and not rest.strip(" /")):
        raise ValueError(f"{shown(repr(remote))} names no remote: a remote is {PROTOCOLS} "
                         "(with a path)")  # fmt: skip
    return remote


class UnknownDatasetError(LookupError):
    """A dataset id not in the catalog; the message lists the closest known ids."""


class SourcePolicy(_Model):
    """One policy of a dataset's source and how many episodes it played."""

    policy: str = Field(description="a --policy string: random, baseline:NAME, module:...")
    episodes: int = Field(gt=0)
    epsilon: float = Field(
        0.0, ge=0.0, le=1.0,
        description="probability of a uniformly random action instead of the policy's",
    )  # fmt: skip
    deterministic: bool = True
    noise_std: float | list[float] = Field(
        0.0, description="standard deviation of Gaussian noise added to each Box action before "
        "it is clipped to the action space's bounds: one number, or one per action dimension "
        "(a policy acting with its own exploration noise, as D4RL's stochastic policies do)",
    )  # fmt: skip

    @field_validator("noise_std", mode="before")
    @classmethod
    def _finite_non_negative(cls, value: object) -> object:
        values = value if isinstance(value, list) else [value]
        if not values:
            raise ValueError("noise_std is one number, or one per action dimension; not an "
                             "empty list")  # fmt: skip
        for v in values:
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v < math.inf:
                raise ValueError("noise_std must be finite numbers >= 0 (one, or one per "
                                 "action dimension)")  # fmt: skip
        return value

    @property
    def noisy(self) -> bool:
        """Whether the policy's actions get Gaussian noise."""
        values = self.noise_std if isinstance(self.noise_std, list) else [self.noise_std]
        return any(v > 0 for v in values)


class TrainingRun(_Model):
    """The training run whose collected transitions a medium-replay dataset holds (D4RL's
    medium-replay: an agent's replay buffer from scratch up to the medium level): ``rlbench
    train``'s envs and model for ``algo`` with the ``hyperparams`` entry, seeded with ``seed``,
    planned for ``budget`` env steps and stopped at ``stop``; every episode that the first
    ``recorded_envs`` sub-envs completed, as the env emitted it."""

    algo: str = Field(description="an online --algo of rlbench train (ppo, sac, fast_ppo, ...)")
    hyperparams: str = Field(
        pattern=ENV_ID_PATTERN,
        description="the entry of baselines/hyperparams/<algo>.yaml (an env id)",
    )
    seed: int = Field(
        ge=TRAINING_SEEDS.start, lt=TRAINING_SEEDS.stop,
        description=f"the run's --seed, in core.seeds.TRAINING_SEEDS ({TRAINING_SEEDS.start}.."
        f"{TRAINING_SEEDS.stop - 1})",
    )  # fmt: skip
    budget: int = Field(
        gt=0, description="the run's budget in env steps (it sets the run's schedules: a "
        "linear learning rate decays over it); the zoo's run budget to repeat that run",
    )  # fmt: skip
    stop: int = Field(
        gt=0, description="env steps (all sub-envs together) after which the run is stopped "
        "and recording ends: SB3 at the first env step at or past it, fast_ppo at the first "
        "update at or past it",
    )  # fmt: skip
    recorded_envs: int = Field(
        gt=0, description="the first k sub-envs are recorded (of joint data, parameter "
        "sharing's games: each game's agents make one joint episode)",
    )  # fmt: skip
    curve: str | None = Field(
        None, description="the learning curve the budget was read from (a path in the suite)"
    )
    curve_return: float | None = Field(None, description="that curve's mean return at stop")
    deterministic: bool = Field(
        True, description="whether a rebuild repeats the run exactly (the content hash holds)"
    )

    @model_validator(mode="after")
    def _stops_in_budget(self) -> TrainingRun:
        if self.stop > self.budget:
            raise ValueError(f"stop = {self.stop} is past the run's budget = {self.budget}")
        return self

    @property
    def reset_seeds(self) -> list[int]:
        """The seeds the recorded sub-envs are first reset with (env ``i``: ``seed + i``)."""
        return list(range(self.seed, self.seed + self.recorded_envs))


class DataSource(_Model):
    """Where the data comes from: policies played in order (a mixture when several), or a
    training run (medium-replay)."""

    policies: list[SourcePolicy] = Field(default_factory=list)
    training: TrainingRun | None = Field(None, description="the training run of replay data")
    notes: str | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> DataSource:
        if self.training is None and not self.policies:
            raise ValueError("a source names its policies (or, for medium-replay data, its "
                             "training run: [source.training])")  # fmt: skip
        if self.training is not None and self.policies:
            raise ValueError("a source is either policies or a training run, not both")
        return self

    @property
    def episodes(self) -> int | None:
        """Episodes the policies play; None for a training run (known after a build)."""
        if self.training is not None:
            return None
        return sum(p.episodes for p in self.policies)


class BuildInfo(_Model):
    """How to rebuild the dataset: the command and the first episode seed (episode ``i``
    is reset with ``seed + i``; a training run's data has none of its own)."""

    command: str
    seed: int | None = Field(
        None, ge=DATASET_SEEDS.start, lt=DATASET_SEEDS.stop,
        description=f"in core.seeds.DATASET_SEEDS ({DATASET_SEEDS.start}..); none for a "
        "training run's data (its seed is source.training.seed)",
    )  # fmt: skip
    versions: dict[str, str] = Field(
        default_factory=dict, description="package versions of the build (the content hash holds "
        "for these)",
    )  # fmt: skip
    cpu: str | None = Field(
        None, description="the CPU the build ran on (core.provenance.cpu_platform), recorded by "
        "every build since 2026-11-29 (before: by training runs' only)",
    )  # fmt: skip


class DataFile(_Model):
    """One file of a dataset: its path inside the dataset folder, SHA-256 and size."""

    path: str
    sha256: str = Field(pattern=SHA256_PATTERN, description="64 lowercase hex digits")
    size: int = Field(ge=0)

    @field_validator("path")
    @classmethod
    def _relative(cls, path: str) -> str:
        parts = PurePosixPath(path).parts
        if not parts or path.startswith("/") or ".." in parts or "\\" in path:
            raise ValueError(f"expected a relative path like {DATA_FILE!r}, got {path!r}")
        return path


class DatasetReferences(_Model):
    """Episode returns of the env (D4RL's convention): a random and an expert policy."""

    random: RefScore
    expert: RefScore


class DatasetCard(_Model, Normalized):
    """Everything the suite knows about one offline dataset."""

    id: str = Field(
        pattern=DATASET_ID_PATTERN,
        description="namespace/<EnvName>-<kind>-vN, kind one of "
        f"{', '.join(DATASET_KINDS)} (rlbench/CartPole-medium-v0)",
    )
    env_id: str = Field(pattern=ENV_ID_PATTERN, description="the environment's id (rlbench/X-vN)")
    kind: DatasetKind
    description: str = Field(min_length=20)
    source: DataSource
    build: BuildInfo
    episodes: int | None = Field(None, gt=0, description="episodes held (None before a build)")
    steps: int | None = Field(None, gt=0, description="transitions held")
    mean_return: float | None = Field(None, description="the data's mean episode return")
    content_sha256: str | None = Field(
        None, pattern=SHA256_PATTERN, description="SHA-256 over the data (not HDF5 metadata)"
    )
    files: list[DataFile] = Field(default_factory=list)
    remotes: list[Annotated[str, AfterValidator(check_remote)]] = Field(
        default_factory=list,
        description="base URLs in order of preference: a folder, file://, http(s)://, s3://",
    )
    reference: DatasetReferences

    @model_validator(mode="after")
    def _consistent(self) -> DatasetCard:
        name, kind = self.id.split("/", 1)[1], self.kind
        env_name = re.sub(r"-v\d+$", "", self.env_id.split("/", 1)[1])
        expected = f"{env_name}-{kind}-v"
        if not name.startswith(expected):
            raise ValueError(
                f"id {self.id!r} does not match env_id {self.env_id!r} and kind {kind!r}: "
                f"expected '{self.id.split('/')[0]}/{expected}N'"
            )
        if kind == "medium-expert" and len(self.source.policies) < 2:
            raise ValueError("a medium-expert dataset mixes at least 2 source policies")
        replay = self.source.training is not None
        if (kind == "medium-replay") != replay:
            raise ValueError(
                "a medium-replay dataset names its training run in [source.training] (and no "
                "policies)" if kind == "medium-replay" else
                f"only medium-replay data comes from a training run, not {kind!r} data"
            )  # fmt: skip
        if replay and self.build.seed is not None:
            raise ValueError("build.seed: a training run's episodes are reset by the run "
                             "(source.training.seed); leave build.seed out")  # fmt: skip
        if not replay and self.build.seed is None:
            raise ValueError("build.seed: the first episode seed is required (in "
                             f"core.seeds.DATASET_SEEDS, {DATASET_SEEDS.start}..)")  # fmt: skip
        if self.source.episodes is not None and self.episodes is not None \
                and self.episodes != self.source.episodes:
            raise ValueError(
                f"episodes = {self.episodes} but the source policies play {self.source.episodes}"
            )
        paths = [f.path for f in self.files]
        if len(set(paths)) != len(paths):
            raise ValueError(f"files are listed twice: {sorted(paths)}")
        return self

    @property
    def name(self) -> str:
        """The id without its namespace (``CartPole-medium-v0``)."""
        return self.id.split("/", 1)[1]

    @property
    def reset_seeds(self) -> list[int]:
        """The seeds the data's episodes were reset with: ``build.seed + i`` for each episode
        of the policies; a training run's recorded sub-envs' first seeds."""
        if self.source.training is not None:
            return self.source.training.reset_seeds
        first = self.build.seed or 0
        return list(range(first, first + (self.source.episodes or 0)))

    @property
    def built(self) -> bool:
        """Whether the card records a build (files and content hash)."""
        return bool(self.files) and self.content_sha256 is not None



def load_dataset_card(path: str | Path) -> DatasetCard:
    """Parse and validate one dataset card file; a :class:`CardError` on any problem."""
    return load_model(path, DatasetCard, "dataset card")


def load_dataset_cards_with_paths(
    root: Path | None = None, errors: list[CardError] | None = None
) -> tuple[dict[str, DatasetCard], dict[str, Path]]:
    """Every dataset card under ``root`` (default: the suite's ``datasets/``): ``(id -> card,
    id -> file)``. Errors raise, or are appended to ``errors`` and the card left out."""
    if root is None:
        try:
            root = content_dir("datasets")
        except FileNotFoundError:
            return {}, {}
    return load_cards_with_paths(root, errors, load_dataset_card)


@functools.cache
def _suite_datasets() -> tuple[dict[str, DatasetCard], dict[str, Path], tuple[CardError, ...]]:
    errors: list[CardError] = []
    loaded, origin = load_dataset_cards_with_paths(errors=errors)
    for card_id in [i for i in loaded if not i.startswith(f"{SUITE_NAMESPACE}/")]:
        errors.append(CardError(f"{origin[card_id]}: the suite's dataset ids start with "
                                f"'{SUITE_NAMESPACE}/', got {card_id!r}"))  # fmt: skip
        del loaded[card_id], origin[card_id]
    return loaded, origin, tuple(errors)


def dataset_cards() -> dict[str, DatasetCard]:
    """The suite's dataset cards by id (loaded once)."""
    return dict(_suite_datasets()[0])


def dataset_card_paths() -> dict[str, Path]:
    """Dataset id -> the card file it was loaded from."""
    return dict(_suite_datasets()[1])


def dataset_catalog_errors() -> tuple[CardError, ...]:
    """The dataset cards that failed to load (left out of :func:`dataset_cards`)."""
    return _suite_datasets()[2]


def get_dataset_card(dataset_id: str | DatasetCard) -> DatasetCard:
    """The card of ``dataset_id`` (``rlbench/X-kind-vN`` or ``X-kind-vN``); an unknown id is
    an :class:`UnknownDatasetError` naming the closest ids."""
    if isinstance(dataset_id, DatasetCard):
        return dataset_id
    catalog = dataset_cards()
    key = normalize_id(dataset_id)
    if key in catalog:
        return catalog[key]
    raise UnknownDatasetError(unknown_id_message(
        "dataset", dataset_id, list(catalog), dataset_catalog_errors(), "rlbench datasets list"))
