"""Implicit Q-Learning (Kostrikov et al., 2021), after CORL's ``iql.py``.

Never queries actions outside the data: ``V`` is fit by expectile regression (``iql_tau``)
to the target twin ``Q`` of the data's actions, ``Q`` to ``r + discount * V(s')``, and the
actor by advantage-weighted regression, weights ``exp(beta * (Q - V))`` capped at 100.
The actor is a Gaussian with a tanh mean and a state-independent log std, its learning rate
annealed by a cosine over the run; the exported policy is the mean.
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

EXP_ADV_MAX = 100.0
LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0


@dataclasses.dataclass
class Config(CheckedConfig):
    batch_size: int = 256
    discount: float = 0.99
    tau: float = 0.005
    beta: float = 3.0
    """Inverse temperature: small -> BC, large -> maximizing Q."""
    iql_tau: float = 0.7
    """The expectile of the value regression."""
    vf_lr: float = 3e-4
    qf_lr: float = 3e-4
    actor_lr: float = 3e-4
    actor_dropout: float | None = None
    hidden: int = 256
    n_hidden: int = 2
    normalize: bool = True


class GaussianActor(nn.Module):
    def __init__(self, obs_dim: int, act_dim: int, cfg: Config) -> None:
        super().__init__()
        sizes = [obs_dim, *[cfg.hidden] * cfg.n_hidden, act_dim]
        self.mean = mlp(sizes, nn.Tanh(), cfg.actor_dropout)
        self.log_std = nn.Parameter(torch.zeros(act_dim))

    def dist(self, obs: torch.Tensor) -> torch.distributions.Normal:
        std = self.log_std.clamp(LOG_STD_MIN, LOG_STD_MAX).exp()
        return torch.distributions.Normal(self.mean(obs), std)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:  # the deterministic policy
        return self.mean(obs)


class TwinQ(nn.Module):
    def __init__(self, obs_dim: int, act_dim: int, cfg: Config) -> None:
        super().__init__()
        sizes = [obs_dim + act_dim, *[cfg.hidden] * cfg.n_hidden, 1]
        self.q1, self.q2 = mlp(sizes), mlp(sizes)

    def both(self, obs: torch.Tensor, act: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.cat([obs, act], -1)
        return self.q1(x).squeeze(-1), self.q2(x).squeeze(-1)

    def forward(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        return torch.min(*self.both(obs, act))


def asymmetric_l2_loss(u: torch.Tensor, tau: float) -> torch.Tensor:
    return torch.mean(torch.abs(tau - (u < 0).float()) * u**2)


class Agent(Stateful):
    _parts = ("actor", "qf", "q_target", "vf", "actor_opt", "q_opt", "v_opt", "actor_schedule")

    def __init__(self, spec: DataSpec, cfg: Config, max_steps: int) -> None:
        if spec.discrete:
            raise ValueError("IQL here is for continuous actions; use bc or cql on discrete ones")
        self.cfg = cfg
        self.actor = GaussianActor(spec.obs_dim, spec.act_dim, cfg)
        self.qf = TwinQ(spec.obs_dim, spec.act_dim, cfg)
        self.q_target = copy.deepcopy(self.qf).requires_grad_(False)
        self.vf = mlp([spec.obs_dim, *[cfg.hidden] * cfg.n_hidden, 1])
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=cfg.actor_lr)
        self.q_opt = torch.optim.Adam(self.qf.parameters(), lr=cfg.qf_lr)
        self.v_opt = torch.optim.Adam(self.vf.parameters(), lr=cfg.vf_lr)
        self.actor_schedule = torch.optim.lr_scheduler.CosineAnnealingLR(
            self.actor_opt, max(1, max_steps)
        )
        self.step = 0

    def update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        cfg, obs, act = self.cfg, batch["obs"], batch["action"]
        self.step += 1
        with torch.no_grad():
            next_v = self.vf(batch["next_obs"]).squeeze(-1)
            target_q = self.q_target(obs, act)
        # value: expectile regression on the target Q of the data's actions
        adv = target_q - self.vf(obs).squeeze(-1)
        v_loss = asymmetric_l2_loss(adv, cfg.iql_tau)
        self.v_opt.zero_grad()
        v_loss.backward()
        self.v_opt.step()
        # Q: one-step backup through V
        targets = batch["reward"] + (1.0 - batch["terminated"]) * cfg.discount * next_v
        q1, q2 = self.qf.both(obs, act)
        q_loss = (F.mse_loss(q1, targets) + F.mse_loss(q2, targets)) / 2
        self.q_opt.zero_grad()
        q_loss.backward()
        self.q_opt.step()
        soft_update(self.q_target, self.qf, cfg.tau)
        # actor: advantage-weighted regression
        weights = torch.exp(cfg.beta * adv.detach()).clamp(max=EXP_ADV_MAX)
        bc_losses = -self.actor.dist(obs).log_prob(act).sum(-1)
        actor_loss = torch.mean(weights * bc_losses)
        self.actor_opt.zero_grad()
        actor_loss.backward()
        self.actor_opt.step()
        self.actor_schedule.step()
        return {"value_loss": v_loss.item(), "q_loss": q_loss.item(),
                "actor_loss": actor_loss.item()}  # fmt: skip

    def policy(self) -> nn.Module:
        return self.actor
