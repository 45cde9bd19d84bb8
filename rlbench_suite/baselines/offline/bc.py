"""Behavior cloning (BC), continuous and discrete, after CORL's ``any_percent_bc.py``.

Continuous: a deterministic MLP actor (tanh output in ``[-1, 1]``) regressed on the data's
actions with the mean squared error. Discrete: an MLP classifier of the data's actions
(cross-entropy); the exported policy's logits pick the argmax. ``frac`` < 1 keeps only the
best fraction of episodes by return ("10% BC"); 1.0 is plain BC.
"""

from __future__ import annotations

import dataclasses

import torch
import torch.nn.functional as F
from torch import nn

from rlbench_suite.baselines.offline.common import CheckedConfig, DataSpec, Stateful, mlp


@dataclasses.dataclass
class Config(CheckedConfig):
    batch_size: int = 256
    learning_rate: float = 3e-4
    hidden: int = 256
    n_hidden: int = 2
    frac: float = 1.0
    """The best fraction of episodes (by return) to clone; 1.0 clones all."""
    normalize: bool = True
    """Standardize observations by the dataset's mean and std."""


class Agent(Stateful):
    _parts = ("actor", "optimizer")

    def __init__(self, spec: DataSpec, cfg: Config, max_steps: int) -> None:
        self.spec, self.cfg = spec, cfg
        out = None if spec.discrete else nn.Tanh()
        self.actor = mlp([spec.obs_dim, *[cfg.hidden] * cfg.n_hidden, spec.act_dim], out)
        self.optimizer = torch.optim.Adam(self.actor.parameters(), lr=cfg.learning_rate)
        self.step = 0

    def update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        out = self.actor(batch["obs"])
        if self.spec.discrete:
            loss = F.cross_entropy(out, batch["action"])
        else:
            loss = F.mse_loss(out, batch["action"])
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.step += 1
        return {"actor_loss": loss.item()}

    def policy(self) -> nn.Module:
        """Normalized observation -> action in ``[-1, 1]`` (or logits)."""
        return self.actor
