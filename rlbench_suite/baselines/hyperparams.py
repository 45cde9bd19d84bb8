"""Hyperparameters as data: ``baselines/hyperparams/<algo>.yaml``, one entry per env id.

The files have rl-baselines3-zoo's shape, so an entry reads at a glance::

    rlbench/CartPole-v1:
      source:
        origin: public                 # public (a named source), tuned (here) or defaults
        reference: rl-baselines3-zoo hyperparams/ppo.yml, CartPole-v1 (...)
      n_envs: 8                        # parallel environments (one process)
      n_timesteps: !!float 1e5         # the default budget (--budget overrides it)
      policy: MlpPolicy                # or a policy class as "package.module:Class"
      policy_kwargs: {net_arch: [64, 64], activation_fn: tanh}
      normalize: false                 # VecNormalize: true, or {norm_obs: .., norm_reward: ..}
      learning_rate: lin_0.001         # "lin_X": linear decay from X to 0, as in the zoo
      n_steps: 32                      # ... any other argument of the SB3 class

Every other key must be an argument of the algorithm's SB3 class; a key that is not, or a
value of the wrong type, is an error that names the file, the env id and the key. An offline
algorithm's keys are the fields of its ``Config``, whose type and range are checked here too
(``offline.common.RULES``): ``learning_rate: -1`` or ``batch_size: 0`` is refused before any
data is loaded, naming what the key accepts.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rlbench_suite.baselines.algorithms import Algorithm
from rlbench_suite.core.cards import WrapperRef
from rlbench_suite.core.wrapper_names import GAME_WRAPPERS, TRAINING_ONLY_WRAPPERS
from rlbench_suite.resources import content_dir

ACTIVATIONS = {"tanh": "Tanh", "relu": "ReLU", "elu": "ELU", "leaky_relu": "LeakyReLU"}
"""``policy_kwargs.activation_fn`` names (``nn.ReLU`` as in the zoo is accepted too)."""
SCHEDULED = ("learning_rate", "clip_range", "clip_range_vf")
"""Arguments that may be ``lin_X`` (linear decay from X to 0 over the run)."""
NOISE_TYPES = ("normal", "ornstein-uhlenbeck")


class HyperparamsError(ValueError):
    """A hyperparameter file or entry that cannot be used (the message names env and key)."""


class Source(BaseModel):
    """Where an entry's values came from."""

    model_config = ConfigDict(extra="forbid")

    origin: Literal["public", "tuned", "defaults"]
    """``public``: taken from a named public source; ``tuned``: tuned here; ``defaults``: the
    SB3 class's defaults (plus ``n_envs``/``n_timesteps``), not tuned yet."""
    reference: str = Field(min_length=3, description="the named source, or how it was tuned")
    # written by ``rlbench tune`` (origin: tuned): the study's summary
    trials: int | None = None
    budget_per_trial: int | None = None
    best_value: float | None = None
    metric: str | None = None
    date: str | None = None
    command: str | None = None
    tuning_seeds: list[int] | None = None
    """Every seed the study's trials trained and were evaluated on (``core.seeds.TUNING_SEEDS``);
    a policy trained from this entry records them as its ``tuning_seeds``."""


class LeagueSettings(BaseModel):
    """``league:`` of a league entry (rlbench_suite/baselines/league.py)."""

    model_config = ConfigDict(extra="forbid")
    opponents: list[str] = Field(min_length=1)
    """The fixed opponents, as ``--policy`` strings (the ladder bots, random)."""
    snapshot_every: int = Field(gt=0)
    """Steps between snapshots of the learner (taken at rollout boundaries)."""
    max_snapshots: int = Field(8, ge=1)
    power: float = Field(2.0, ge=0)
    """PFSP: opponents weighted by ``(1 - learner's score) ** power``; 0 is uniform."""
    window: int = Field(50, ge=1)
    """Recent games per opponent that its score is taken over."""
    min_weight: float = Field(0.02, ge=0, le=1)


class Entry(BaseModel):
    """The keys the trainer itself reads; every other key goes to the SB3 class."""

    model_config = ConfigDict(extra="allow")

    source: Source
    n_timesteps: int = Field(gt=0)
    policy: str = "MlpPolicy"
    n_envs: int = Field(1, ge=1)
    policy_kwargs: dict[str, Any] = Field(default_factory=dict)
    normalize: bool | dict[str, Any] = False
    noise_type: Literal["normal", "ornstein-uhlenbeck"] | None = None
    noise_std: float | None = Field(None, gt=0)
    env_wrappers: list[WrapperRef] = Field(default_factory=list)
    """The suite's versioned wrappers to train through, innermost first, on top of the card's
    stack (e.g. the text games' AdmissibleActions and HashedBagOfWords); recorded with the
    policy so the harness rebuilds them."""
    partners: dict[str, str | list[str]] | None = None
    """shared_ppo: agents played by fixed ``--policy`` strings, a list spread over the games."""
    game_wrappers: list[WrapperRef] = Field(default_factory=list)
    """shared_ppo: training-only wrappers of each PettingZoo game (innermost first, below the
    partners), e.g. ``rlbench/KitchenOwnContribution-v0``; only names listed in
    ``TRAINING_ONLY_WRAPPERS``, since the trained policy is scored without them."""
    league: LeagueSettings | None = None
    """league: the opponents and snapshot schedule (league.py)."""

    @field_validator("n_timesteps", mode="before")
    @classmethod
    def _integral(cls, value: Any) -> Any:  # the zoo writes !!float 1e5
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value

    @field_validator("policy_kwargs")
    @classmethod
    def _activation(cls, kwargs: dict[str, Any]) -> dict[str, Any]:
        name = kwargs.get("activation_fn")
        if name is not None and _activation_name(name) is None:
            raise ValueError(
                f"activation_fn {name!r} is not one of {', '.join(ACTIVATIONS)} (or nn.ReLU, ...)"
            )
        return kwargs


@dataclasses.dataclass(frozen=True)
class Hyperparams:
    """One validated entry: for ``algo`` on ``env_id``, read from ``path``."""

    algo: str
    env_id: str
    entry: Entry
    algo_kwargs: dict[str, Any]
    path: Path | None

    def as_dict(self) -> dict[str, Any]:
        """The entry as JSON data (what ``run.json`` records and ``--resume`` compares)."""
        return {**self.entry.model_dump(mode="json", exclude_none=True), **self.algo_kwargs}

    @property
    def sha256(self) -> str:
        text = json.dumps(self.as_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


def env_key(env_id: str) -> str:
    """``CartPole-v1`` and ``rlbench/CartPole-v1`` name the same entry."""
    env_id = str(env_id).strip()
    return env_id if env_id.startswith("rlbench/") else f"rlbench/{env_id}"


def hyperparams_dir() -> Path:
    """``baselines/hyperparams`` in the checkout or the installed wheel."""
    return content_dir("baselines") / "hyperparams"


def hyperparams_file(algo: Algorithm) -> Path:
    return hyperparams_dir() / f"{algo.name}.yaml"


def read_file(path: Path) -> dict[str, Any]:
    """The YAML file as a mapping of env id -> entry (ids normalized to ``rlbench/...``)."""
    if not path.is_file():
        raise HyperparamsError(f"hyperparameter file not found: {path}")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise HyperparamsError(f"{path} is not valid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise HyperparamsError(f"{path}: expected a mapping of env id -> hyperparameters")
    return {env_key(key): value for key, value in data.items()}


def load_hyperparams(
    algo: Algorithm, env_id: str | list[str], path: str | Path | None = None
) -> Hyperparams:
    """The validated entry for ``env_id`` in ``path`` (default: the suite's ``<algo>.yaml``);
    given a list of ids, the first that has an entry (an offline id, then its env's)."""
    file = Path(path) if path is not None else hyperparams_file(algo)
    entries = read_file(file)
    ids = [env_key(i) for i in ([env_id] if isinstance(env_id, str) else env_id)]
    found = [i for i in ids if i in entries]
    if not found:
        known = ", ".join(sorted(entries)) or "none"
        raise HyperparamsError(
            f"{file} has no hyperparameters for {' or '.join(ids)} (entries: {known}); add one, "
            "or pass --hyperparams FILE with an entry for it"
        )
    return parse_entry(algo, found[0], entries[found[0]], file)


def parse_entry(algo: Algorithm, env_id: str, raw: Any, file: Path | None = None) -> Hyperparams:
    """Validate one entry; errors name the file, the env id and the key."""
    where = f"{file}: {env_id}" if file else env_id
    if not isinstance(raw, dict):
        raise HyperparamsError(f"{where}: expected a mapping of hyperparameters, got {raw!r}")
    try:
        entry = Entry.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"key {'.'.join(map(str, e['loc']))!r}: {e['msg']}"
            + (f" (got {e['input']!r})" if e["type"] != "missing" else "")
            for e in exc.errors()
        )
        raise HyperparamsError(f"{where}: {problems}") from None
    extra = dict(entry.model_extra or {})
    accepted = algo.accepted_kwargs()
    for key, value in extra.items():
        if key not in accepted:
            close = difflib.get_close_matches(key, accepted + list(Entry.model_fields), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise HyperparamsError(
                f"{where}: key {key!r} is not a hyperparameter of {algo.class_name}{hint} "
                f"(accepted: {', '.join([*Entry.model_fields, *accepted])})"
            )
        scheduled = key in SCHEDULED and not algo.offline  # offline rates are plain numbers
        if scheduled and isinstance(value, str) and not _is_linear(value):
            raise HyperparamsError(
                f"{where}: key {key!r}: {value!r} is neither a number nor 'lin_<number>'"
            )
    if algo.offline:
        _check_offline_settings(algo, entry, extra, where)
    if entry.noise_type is not None and entry.noise_std is None:
        raise HyperparamsError(f"{where}: key 'noise_std': needed with noise_type")
    if entry.partners is not None and not algo.shared:
        raise HyperparamsError(f"{where}: key 'partners': only for shared_ppo")
    if entry.game_wrappers and not algo.shared:
        raise HyperparamsError(f"{where}: key 'game_wrappers': only for shared_ppo")
    _check_wrapper_refs(entry, where)
    if (entry.league is not None) != algo.league:
        wrong = "needed by league" if algo.league else "only for league"
        raise HyperparamsError(f"{where}: key 'league': {wrong}")
    params = Hyperparams(algo.name, env_id, entry, extra, file)
    sb3_policy(params)  # a policy class that cannot be imported is refused here
    return params


def _check_offline_settings(algo: Algorithm, entry: Entry, settings: dict[str, Any],
                            where: str) -> None:  # fmt: skip
    """An offline algorithm's settings (and ``normalize``) made into its ``Config``, whose
    fields check their types and ranges (``offline.common.RULES``): a refused one names the
    key and what it accepts."""
    from rlbench_suite.baselines.offline.common import ConfigError

    try:
        algo.load_class()(**settings, normalize=entry.normalize)
    except ConfigError as exc:
        raise HyperparamsError(f"{where}: {exc}") from None


def _check_wrapper_refs(entry: Entry, where: str) -> None:
    """Game wrappers only under ``game_wrappers`` (training-only ones), and every wrapper's
    keyword arguments checked by its class where it can (``check_kwargs``)."""
    from gymnasium.envs.registration import load_env_creator

    from rlbench_suite.core.wrapper_names import wrapper_entry_point

    accepted = [n for n in GAME_WRAPPERS if n in TRAINING_ONLY_WRAPPERS]
    for key, refs in (("env_wrappers", entry.env_wrappers), ("game_wrappers", entry.game_wrappers)):
        for i, ref in enumerate(refs):
            here = f"{where}: key '{key}.{i}'"
            if key == "game_wrappers" and ref.name not in accepted:
                raise HyperparamsError(f"{here}: {ref.name!r} is not a training-only wrapper of "
                                       f"the game (accepted: {', '.join(accepted)})")  # fmt: skip
            if key == "env_wrappers" and ref.name in GAME_WRAPPERS:
                raise HyperparamsError(f"{here}: {ref.name!r} wraps the PettingZoo game, not the "
                                       "Gymnasium env: list it under game_wrappers "
                                       "(shared_ppo)")  # fmt: skip
            try:
                wrapper = load_env_creator(wrapper_entry_point(ref.name))
            except KeyError as exc:
                raise HyperparamsError(f"{here}: {exc.args[0]}") from None
            check = getattr(wrapper, "check_kwargs", None)
            try:
                if check is not None:
                    check(**(ref.kwargs or {}))
            except (TypeError, ValueError) as exc:
                raise HyperparamsError(f"{here}: kwargs: {exc}") from None


class LinearSchedule:
    """``lin_X``: X times the remaining progress (1 at the start, 0 at the end), as the zoo."""

    def __init__(self, initial: float) -> None:
        self.initial = initial

    def __call__(self, progress_remaining: float) -> float:
        return progress_remaining * self.initial

    def __repr__(self) -> str:
        return f"lin_{self.initial}"


def _is_linear(value: str) -> bool:
    try:
        float(value.removeprefix("lin_"))
    except ValueError:
        return False
    return value.startswith("lin_")


def _activation_name(name: Any) -> str | None:
    key = str(name).removeprefix("nn.").removeprefix("torch.nn.")
    lowered = {v.lower(): v for v in ACTIVATIONS.values()}
    return ACTIVATIONS.get(key.lower()) or lowered.get(key.lower())


def sb3_policy(params: Hyperparams) -> Any:
    """The entry's ``policy``: an SB3 name (``MlpPolicy``) as is, ``module:Class`` imported;
    a class that cannot be imported is a :class:`HyperparamsError` naming the entry."""
    name = params.entry.policy
    if ":" not in name:
        return name
    import importlib

    module, _, attr = name.partition(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise HyperparamsError(
            f"{params.path}: {params.env_id}: key 'policy': {name!r} cannot be imported ({exc}); "
            "give an SB3 policy name (MlpPolicy) or 'package.module:Class'"
        ) from None


def new_sb3_class_model(sb3_class: Any, params: Hyperparams, env: Any, seed: int | None,
                        device: str = "cpu") -> Any:  # fmt: skip
    """``sb3_class(policy, env)`` with the entry's keyword arguments, seeded with ``seed``,
    silent and logging nowhere (``policies.sb3.without_log_folder``)."""
    from rlbench_suite.policies.sb3 import without_log_folder

    return without_log_folder(sb3_class(sb3_policy(params), env, seed=seed, device=device,
                                        verbose=0, **sb3_kwargs(params, env.action_space)))


def sb3_kwargs(params: Hyperparams, action_space: Any) -> dict[str, Any]:
    """The keyword arguments for the SB3 class: schedules, activations, noise made objects."""
    import numpy as np
    import torch

    kwargs: dict[str, Any] = {}
    for key, value in params.algo_kwargs.items():
        if key in SCHEDULED and isinstance(value, str):
            value = LinearSchedule(float(value.removeprefix("lin_")))
        elif key == "train_freq" and isinstance(value, list):
            value = tuple(value)
        kwargs[key] = value
    policy_kwargs = dict(params.entry.policy_kwargs)
    if "activation_fn" in policy_kwargs:
        name = _activation_name(policy_kwargs["activation_fn"])
        policy_kwargs["activation_fn"] = getattr(torch.nn, name or "")
    if policy_kwargs:
        kwargs["policy_kwargs"] = policy_kwargs
    if params.entry.noise_type is not None:
        from stable_baselines3.common.noise import NormalActionNoise, OrnsteinUhlenbeckActionNoise

        n = int(np.prod(action_space.shape))
        noise = (
            NormalActionNoise
            if params.entry.noise_type == "normal"
            else OrnsteinUhlenbeckActionNoise
        )
        kwargs["action_noise"] = noise(np.zeros(n), params.entry.noise_std * np.ones(n))
    return kwargs


def native_config(
    config_class: type, params: Hyperparams, settings: dict[str, Any],
    error: type[Exception] = HyperparamsError,
) -> Any:  # fmt: skip
    """A native algorithm's config dataclass from an entry's ``settings``; a refused value is
    an ``error`` naming the file, the env id and each key (the trainer passes its
    ``TrainError``)."""
    from pydantic import TypeAdapter

    try:
        return TypeAdapter(config_class).validate_python(settings, strict=False)
    except ValidationError as exc:
        problems = "; ".join(  # a value error of the whole config (its own check) names its key
            (f"key {'.'.join(map(str, e['loc']))!r}: " if e["loc"] else "")
            + e["msg"].removeprefix("Value error, ")
            for e in exc.errors()
        )
        where = f"{params.path}: {params.env_id}"
        raise error(f"{where}: hyperparameters refused: {problems}") from None
