"""TD3+BC (Fujimoto & Gu, 2021), after CORL's ``td3_bc.py``.

TD3's twin critics and delayed, target-smoothed actor, with the actor's loss
``-lambda * Q(s, pi(s)) + (pi(s) - a)^2``, ``lambda = alpha / mean|Q|``: a policy that
improves on the data's returns while staying close to its actions. Actions live in
``[-1, 1]`` (``max_action`` 1), so the noise settings are in those units as in CORL.
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
    batch_size: int = 256
    discount: float = 0.99
    tau: float = 0.005
    policy_noise: float = 0.2
    noise_clip: float = 0.5
    policy_freq: int = 2
    alpha: float = 2.5
    actor_lr: float = 3e-4
    critic_lr: float = 3e-4
    hidden: int = 256
    normalize: bool = True


class Critic(nn.Module):
    def __init__(self, obs_dim: int, act_dim: int, hidden: int) -> None:
        super().__init__()
        self.q1 = mlp([obs_dim + act_dim, hidden, hidden, 1])
        self.q2 = mlp([obs_dim + act_dim, hidden, hidden, 1])

    def forward(self, obs: torch.Tensor, act: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.cat([obs, act], -1)
        return self.q1(x).squeeze(-1), self.q2(x).squeeze(-1)


class Agent(Stateful):
    _parts = ("actor", "actor_target", "critic", "critic_target", "actor_opt", "critic_opt")

    def __init__(self, spec: DataSpec, cfg: Config, max_steps: int) -> None:
        if spec.discrete:
            raise ValueError("TD3+BC is for continuous actions; use bc or cql on discrete ones")
        self.cfg = cfg
        self.actor = mlp([spec.obs_dim, cfg.hidden, cfg.hidden, spec.act_dim], nn.Tanh())
        self.actor_target = copy.deepcopy(self.actor).requires_grad_(False)
        self.critic = Critic(spec.obs_dim, spec.act_dim, cfg.hidden)
        self.critic_target = copy.deepcopy(self.critic).requires_grad_(False)
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=cfg.actor_lr)
        self.critic_opt = torch.optim.Adam(self.critic.parameters(), lr=cfg.critic_lr)
        self.step = 0

    def update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        cfg, obs, act = self.cfg, batch["obs"], batch["action"]
        self.step += 1
        with torch.no_grad():
            noise = (torch.randn_like(act) * cfg.policy_noise).clamp(-cfg.noise_clip,
                                                                     cfg.noise_clip)  # fmt: skip
            next_act = (self.actor_target(batch["next_obs"]) + noise).clamp(-1.0, 1.0)
            target_q = torch.min(*self.critic_target(batch["next_obs"], next_act))
            target_q = batch["reward"] + (1.0 - batch["terminated"]) * cfg.discount * target_q
        q1, q2 = self.critic(obs, act)
        critic_loss = F.mse_loss(q1, target_q) + F.mse_loss(q2, target_q)
        self.critic_opt.zero_grad()
        critic_loss.backward()
        self.critic_opt.step()
        log = {"critic_loss": critic_loss.item()}
        if self.step % cfg.policy_freq == 0:  # delayed actor and target updates
            pi = self.actor(obs)
            q = self.critic(obs, pi)[0]
            lmbda = cfg.alpha / q.abs().mean().detach()
            actor_loss = -lmbda * q.mean() + F.mse_loss(pi, act)
            self.actor_opt.zero_grad()
            actor_loss.backward()
            self.actor_opt.step()
            soft_update(self.critic_target, self.critic, cfg.tau)
            soft_update(self.actor_target, self.actor, cfg.tau)
            log["actor_loss"] = actor_loss.item()
        return log

    def policy(self) -> nn.Module:
        return self.actor
