"""What the offline algorithms share: the dataset as tensors, networks, the exported actor.

Each algorithm file (``bc.py``, ``td3bc.py``, ``iql.py``, ``cql.py``, ``cql_discrete.py``)
holds the whole algorithm: a ``Config`` dataclass (its hyperparameters, CORL's defaults) and
an ``Agent`` with ``update(batch)``, ``policy()`` and a state dict. They all see the data the
same way (CORL's convention): observations standardized by the dataset's mean and std
(``normalize``), continuous actions rescaled to ``[-1, 1]`` from the action space's bounds,
discrete actions as indices. :class:`ExportedActor` undoes both, so the ONNX file takes raw
observations and returns actions in the env's own units (the suite's ONNX convention).
"""

from __future__ import annotations

import dataclasses
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


def data_spec(dataset: Any, observation_space: gym.Space, action_space: gym.Space,
              normalize: bool) -> DataSpec:  # fmt: skip
    """The :class:`DataSpec` of ``dataset`` (an ``OfflineDataset``) in these spaces."""
    if not isinstance(observation_space, gym.spaces.Box) or len(observation_space.shape) != 1:
        raise OfflineDataError(f"offline algorithms take flat Box observations, not "
                               f"{observation_space}")  # fmt: skip
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
                                   f"not {action_space}")  # fmt: skip
        return DataSpec(dim, False, int(action_space.shape[0]), mean, std, low, high)
    raise OfflineDataError(f"offline algorithms take Discrete or flat Box actions, not "
                           f"{action_space}")  # fmt: skip


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
