"""Conservative Q-Learning for discrete actions: CQL(H) on a DQN (Kumar et al., 2020, the
discrete variant; d3rlpy's ``DiscreteCQL``).

A Q-network over every action, fit to ``r + discount * max_a' Q_target(s', a')`` (Huber
loss), plus ``alpha * (logsumexp_a Q(s, a) - Q(s, a_data))``, which pushes down the actions
the data did not take. The target network follows by Polyak averaging. The exported policy
is the Q-values as logits: the argmax is the greedy action.
"""

from __future__ import annotations

import copy
import dataclasses

import torch
import torch.nn.functional as F
from torch import nn

from rlbench_suite.baselines.offline.common import (
    CheckedConfig,
    DataSpec,
    Stateful,
    mlp,
    soft_update,
)


@dataclasses.dataclass
class Config(CheckedConfig):
    """Named as :class:`cql.Config`'s fields, so one ``cql.yaml`` serves both."""

    batch_size: int = 256
    discount: float = 0.99
    qf_lr: float = 3e-4
    cql_alpha: float = 1.0
    """The weight of the conservative term."""
    soft_target_update_rate: float = 0.005
    hidden: int = 256
    q_n_hidden_layers: int = 2
    normalize: bool = True


class Agent(Stateful):
    _parts = ("q", "q_target", "optimizer")

    def __init__(self, spec: DataSpec, cfg: Config, max_steps: int) -> None:
        if not spec.discrete:
            raise ValueError("cql_discrete.py is for discrete actions; cql.py for continuous ones")
        self.cfg = cfg
        self.q = mlp([spec.obs_dim, *[cfg.hidden] * cfg.q_n_hidden_layers, spec.act_dim])
        self.q_target = copy.deepcopy(self.q).requires_grad_(False)
        self.optimizer = torch.optim.Adam(self.q.parameters(), lr=cfg.qf_lr)
        self.step = 0

    def update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        cfg = self.cfg
        self.step += 1
        with torch.no_grad():
            next_q = self.q_target(batch["next_obs"]).max(-1).values
            target = batch["reward"] + (1.0 - batch["terminated"]) * cfg.discount * next_q
        q_all = self.q(batch["obs"])
        q_data = q_all.gather(1, batch["action"].unsqueeze(1)).squeeze(1)
        td_loss = F.smooth_l1_loss(q_data, target)
        cql_loss = (torch.logsumexp(q_all, dim=1) - q_data).mean()
        loss = td_loss + cfg.cql_alpha * cql_loss
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        soft_update(self.q_target, self.q, cfg.soft_target_update_rate)
        return {"td_loss": td_loss.item(), "cql_loss": cql_loss.item()}

    def policy(self) -> nn.Module:
        return self.q
