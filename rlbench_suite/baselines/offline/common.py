"""What the offline algorithms share: the dataset as tensors, networks, the exported actor.

Each algorithm file (``bc.py``, ``td3bc.py``, ``iql.py``, ``cql.py``, ``cql_discrete.py``)
holds the whole algorithm: a ``Config`` dataclass (its hyperparameters, CORL's defaults) and
an ``Agent`` with ``update(batch)``, ``policy()`` and a state dict. They all see the data the
same way (CORL's convention): observations standardized by the dataset's mean and std
(``normalize``), continuous actions rescaled to ``[-1, 1]`` from the action space's bounds,
discrete actions as indices. :class:`ExportedActor` undoes both, so the ONNX file takes raw
observations and returns actions in the env's own units (the suite's ONNX convention).

Every ``Config`` derives from :class:`CheckedConfig`: each field is checked when the config is
made, its type from the dataclass's annotation and its range from :data:`RULES` (one table for
every algorithm, by field name), so a hyperparameter file's negative learning rate or
``batch_size: 0`` is one error naming the key and what it accepts, never a torch traceback or
a run that trains nothing.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
import typing
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

NORMALIZE_EPS = 1e-3
"""Added to the observations' std, as CORL's ``compute_mean_std(..., eps=1e-3)``."""


@dataclasses.dataclass(frozen=True)
class DataSpec:
    """The shapes and statistics an agent is built from."""

    obs_dim: int
    discrete: bool
    act_dim: int
    """Continuous: the action's size; discrete: the number of actions."""
    obs_mean: np.ndarray
    obs_std: np.ndarray
    act_low: np.ndarray | None = None
    act_high: np.ndarray | None = None


class OfflineDataError(ValueError):
    """A dataset or space an offline algorithm cannot train on (the message says why)."""


SPACE_CHARS = 80
"""How much of a space's repr a message shows (a Text space's repr is its whole charset)."""


def shown_space(space: Any, limit: int = SPACE_CHARS) -> str:
    """``space``'s repr on one line, cut to ``limit`` characters (``...`` where cut)."""
    text = " ".join(repr(space).split())
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


# -- what each hyperparameter accepts ------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Range:
    """The numbers a field accepts: between ``low`` and ``high`` (each excluded where
    ``*_open``), finite unless ``infinite``; never NaN."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    infinite: bool = False

    def holds(self, value: float) -> bool:
        if isinstance(value, float) and (math.isnan(value)
                                         or (math.isinf(value) and not self.infinite)):  # fmt: skip
            return False
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return self.high is None or (value < self.high if self.high_open else value <= self.high)

    def words(self, noun: str) -> str:
        """What the range accepts, said of ``noun`` (``a number in (0, 1]``)."""
        if self.low is not None and self.high is not None:
            left, right = "(" if self.low_open else "[", ")" if self.high_open else "]"
            return f"{noun} in {left}{self.low:g}, {self.high:g}{right}"
        if self.low is not None:
            return f"{noun} {'>' if self.low_open else '>='} {self.low:g}"
        if self.high is not None:
            return f"{noun} {'<' if self.high_open else '<='} {self.high:g}"
        return f"{noun} (-.inf and .inf included)" if self.infinite else f"a finite {noun[2:]}"


_POSITIVE = Range(0, low_open=True)
_NON_NEGATIVE = Range(0)
_AT_LEAST_ONE = Range(1)
_FRACTION = Range(0, 1, low_open=True)

_RANGES: tuple[tuple[str, Range], ...] = (
    ("batch_size hidden target_update_period policy_freq cql_n_actions", _AT_LEAST_ONE),
    ("n_hidden q_n_hidden_layers", _NON_NEGATIVE),  # 0 hidden layers: a linear network
    ("learning_rate policy_lr qf_lr vf_lr actor_lr critic_lr cql_temp", _POSITIVE),
    ("discount tau soft_target_update_rate frac", _FRACTION),
    ("iql_tau", Range(0, 1, low_open=True, high_open=True)),  # an expectile
    ("actor_dropout", Range(0, 1, high_open=True)),
    ("bc_steps alpha_multiplier cql_alpha alpha beta policy_noise noise_clip", _NON_NEGATIVE),
    ("reward_scale reward_bias", Range()),
    ("cql_clip_diff_min cql_clip_diff_max", Range(infinite=True)),
)
RULES: dict[str, Range] = {name: rule for names, rule in _RANGES for name in names.split()}
"""The range of every number field of the offline algorithms' ``Config`` classes, by name (the
algorithms name a shared meaning alike: one ``cql.yaml`` serves ``cql`` and ``cql_discrete``);
integer or number, and whether null is accepted, come from the field's annotation. A test
checks that every number field of every ``Config`` has its rule here."""

ORDERED = (("cql_clip_diff_min", "cql_clip_diff_max"),)
"""Pairs of fields whose first may not exceed the second."""


class ConfigError(ValueError):
    """A hyperparameter an offline algorithm's ``Config`` refuses: its ``key``, the value
    and what is ``accepted``."""

    def __init__(self, key: str, value: Any, accepted: str) -> None:
        self.key, self.value, self.accepted = key, value, accepted
        shown = repr(value)
        if len(shown) > 60:
            shown = shown[:57] + "..."
        if isinstance(value, str) and _is_number_text(value):
            shown += (" (text: write numbers unquoted, and 3e-4 as 3.0e-4, which YAML reads "
                      "as a number)")  # fmt: skip
        super().__init__(f"key {key!r}: {accepted}, not {shown}")


def _is_number_text(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


@functools.cache
def field_kinds(config_class: type) -> dict[str, tuple[type, bool]]:
    """Each field of ``config_class`` (a dataclass): its kind (``bool``, ``int`` or ``float``)
    and whether it may be None, from its annotation."""
    hints = typing.get_type_hints(config_class)
    kinds = {}
    for field in dataclasses.fields(config_class):
        hint = hints[field.name]
        args = typing.get_args(hint)  # (float, NoneType) for float | None
        kinds_ = [a for a in args if a is not type(None)]
        optional = len(kinds_) < len(args)
        kinds[field.name] = (kinds_[0] if optional else hint, optional)
    return kinds


def accepted(config_class: type, key: str) -> str:
    """What field ``key`` of ``config_class`` accepts, in words (``a number > 0``)."""
    kind, optional = field_kinds(config_class)[key]
    if kind is bool:
        text = "true or false"
    else:
        text = RULES[key].words("an integer" if kind is int else "a number")
    return f"{text}, or null" if optional else text


def checked_value(config_class: type, key: str, value: Any) -> Any:
    """``value`` as field ``key`` of ``config_class`` holds it (a whole number written
    ``64.0`` made ``64``; an integer made a float for a number field); a
    :class:`ConfigError` for a value of another type (true for a number, text) or out of
    the field's :data:`RULES` range."""
    kind, optional = field_kinds(config_class)[key]
    if value is None and optional:
        return None
    if kind is bool:
        if isinstance(value, bool):
            return value
    elif isinstance(value, numbers.Real) and not isinstance(value, bool):
        number: Any = value
        if kind is float:
            number = _as_float(value)
        elif isinstance(value, numbers.Integral) or float(value).is_integer():
            number = int(value)  # numpy's integers; YAML's 64.0 (!!float 64)
        if isinstance(number, kind) and RULES[key].holds(number):
            return number
    raise ConfigError(key, value, accepted(config_class, key))


def _as_float(value: numbers.Real) -> float:
    try:
        return float(value)
    except OverflowError:  # an integer past the floats: out of every finite range
        return math.inf if value > 0 else -math.inf


def check_config(config: Any) -> None:
    """Check (and normalize, :func:`checked_value`) every field of an offline ``Config``;
    a :class:`ConfigError` for the first refused one."""
    config_class = type(config)
    for field in dataclasses.fields(config):
        setattr(config, field.name, checked_value(config_class, field.name,
                                                  getattr(config, field.name)))  # fmt: skip
    for low, high in ORDERED:
        if hasattr(config, low) and getattr(config, low) > getattr(config, high):
            raise ConfigError(high, getattr(config, high),
                              f"a number >= {low} ({getattr(config, low):g})")  # fmt: skip


class CheckedConfig:
    """The base of every offline algorithm's ``Config`` dataclass: its fields are checked
    when it is made (:func:`check_config`), whether by the trainer, a sweep or a caller."""

    def __post_init__(self) -> None:
        check_config(self)


def data_spec(dataset: Any, observation_space: gym.Space, action_space: gym.Space,
              normalize: bool) -> DataSpec:  # fmt: skip
    """The :class:`DataSpec` of ``dataset`` (an ``OfflineDataset``) in these spaces."""
    if not isinstance(observation_space, gym.spaces.Box) or len(observation_space.shape) != 1:
        raise OfflineDataError(f"offline algorithms take flat Box observations, not "
                               f"{shown_space(observation_space)}")  # fmt: skip
    obs = dataset.observations.astype(np.float64)
    dim = int(observation_space.shape[0])
    mean = obs.mean(0) if normalize else np.zeros(dim)
    std = obs.std(0) + NORMALIZE_EPS if normalize else np.ones(dim)
    if isinstance(action_space, gym.spaces.Discrete):
        return DataSpec(dim, True, int(action_space.n), mean, std)
    if isinstance(action_space, gym.spaces.Box) and len(action_space.shape) == 1:
        low, high = action_space.low.astype(np.float64), action_space.high.astype(np.float64)
        if not (np.isfinite(low).all() and np.isfinite(high).all()):
            raise OfflineDataError(f"continuous offline algorithms need a bounded action space, "
                                   f"not {shown_space(action_space)}")  # fmt: skip
        return DataSpec(dim, False, int(action_space.shape[0]), mean, std, low, high)
    raise OfflineDataError(f"offline algorithms take Discrete or flat Box actions, not "
                           f"{shown_space(action_space)}")  # fmt: skip


class Transitions:
    """The whole dataset as tensors (normalized observations, scaled actions), sampled
    uniformly with replacement by a seeded ``torch.Generator`` (its state is checkpointed)."""

    def __init__(self, dataset: Any, spec: DataSpec, seed: int) -> None:
        t = dataset.transitions()
        mean, std = spec.obs_mean, spec.obs_std
        self.obs = torch.as_tensor((t["observations"] - mean) / std, dtype=torch.float32)
        self.next_obs = torch.as_tensor((t["next_observations"] - mean) / std,
                                        dtype=torch.float32)  # fmt: skip
        if spec.discrete:
            self.actions = torch.as_tensor(t["actions"], dtype=torch.long).reshape(-1)
        else:
            mid, half = (spec.act_high + spec.act_low) / 2, (spec.act_high - spec.act_low) / 2
            scaled = np.clip((t["actions"] - mid) / half, -1.0, 1.0)
            self.actions = torch.as_tensor(scaled, dtype=torch.float32)
        self.rewards = torch.as_tensor(t["rewards"], dtype=torch.float32)
        self.terminated = torch.as_tensor(t["terminations"], dtype=torch.float32)
        self.episode_returns = np.asarray(dataset.episode_returns())
        self.episode_of_step = np.repeat(np.arange(len(dataset.lengths)), dataset.lengths)
        self.generator = torch.Generator().manual_seed(seed)
        self.allowed: torch.Tensor | None = None

    def __len__(self) -> int:
        return len(self.rewards)

    def keep_best_episodes(self, fraction: float) -> None:
        """Sample only the steps of the best ``fraction`` of episodes by return (CORL's
        ``any_percent_bc``; 1.0 keeps everything)."""
        if fraction >= 1.0:
            self.allowed = None
            return
        count = max(1, int(fraction * len(self.episode_returns)))
        best = np.argsort(-self.episode_returns, kind="stable")[:count]
        self.allowed = torch.as_tensor(np.flatnonzero(np.isin(self.episode_of_step, best)))

    def sample(self, batch_size: int) -> dict[str, torch.Tensor]:
        """``obs, action, reward, next_obs, terminated`` of ``batch_size`` random steps."""
        if self.allowed is None:
            idx = torch.randint(len(self), (batch_size,), generator=self.generator)
        else:
            pick = torch.randint(len(self.allowed), (batch_size,), generator=self.generator)
            idx = self.allowed[pick]
        return {"obs": self.obs[idx], "action": self.actions[idx], "reward": self.rewards[idx],
                "next_obs": self.next_obs[idx], "terminated": self.terminated[idx]}  # fmt: skip


def mlp(
    sizes: list[int], out: nn.Module | None = None, dropout: float | None = None
) -> nn.Sequential:
    """Linear layers with ReLU between them (and ``out`` after the last), as CORL's MLP."""
    layers: list[nn.Module] = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
            if dropout:
                layers.append(nn.Dropout(dropout))
    if out is not None:
        layers.append(out)
    return nn.Sequential(*layers)


def soft_update(target: nn.Module, source: nn.Module, tau: float) -> None:
    """Polyak averaging: ``target <- (1 - tau) target + tau source``."""
    with torch.no_grad():
        for t, s in zip(target.parameters(), source.parameters(), strict=True):
            t.mul_(1 - tau).add_(s, alpha=tau)


class Stateful:
    """``state_dict`` / ``load_state_dict`` over the parts named in ``_parts`` (networks,
    optimizers, schedulers) plus the step counter: everything a checkpoint needs."""

    _parts: tuple[str, ...] = ()
    step: int = 0

    def state_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            **{name: getattr(self, name).state_dict() for name in self._parts},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.step = int(state["step"])
        for name in self._parts:
            getattr(self, name).load_state_dict(state[name])


class ExportedActor(nn.Module):
    """Raw observation -> the env's action (continuous) or logits (discrete): the agent's
    deterministic policy with the data's normalization and action scaling around it."""

    def __init__(self, policy: nn.Module, spec: DataSpec) -> None:
        super().__init__()
        self.policy = policy
        self.discrete = spec.discrete
        self.register_buffer("mean", torch.as_tensor(spec.obs_mean, dtype=torch.float32))
        self.register_buffer("std", torch.as_tensor(spec.obs_std, dtype=torch.float32))
        if not spec.discrete:
            low, high = spec.act_low, spec.act_high
            self.register_buffer("act_mid", torch.as_tensor((high + low) / 2, dtype=torch.float32))
            self.register_buffer("act_half", torch.as_tensor((high - low) / 2, dtype=torch.float32))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        out = self.policy((obs - self.mean) / self.std)
        if self.discrete:
            return out
        return self.act_mid + self.act_half * out.clamp(-1.0, 1.0)

    def predict(self, obs: np.ndarray) -> np.ndarray:
        """The deterministic action for one raw observation."""
        with torch.no_grad():
            out = self(torch.as_tensor(np.asarray(obs, dtype=np.float32)[None]))[0]
        return np.asarray(out.argmax()) if self.discrete else out.numpy()


def export_onnx(actor: ExportedActor, path: Any, source: str) -> Any:
    """Write ``actor`` in the suite's ONNX convention (``action`` or ``logits``)."""
    from rlbench_suite.policies.onnx import export_module_to_onnx

    output = "logits" if actor.discrete else "action"
    return export_module_to_onnx(actor.eval(), path, (int(actor.mean.shape[0]),), output, source)
