"""Conservative Q-Learning (Kumar et al., 2020) for continuous actions, after CORL's
``cql.py`` (the non-Lagrange CQL(H) with importance sampling).

SAC with twin critics and a tanh-Gaussian actor (automatic entropy tuning), plus the CQL
term on each critic: ``cql_alpha * (logsumexp over sampled actions of Q - Q(s, a_data))``,
the sampled actions being uniform ones and the actor's at ``s`` and ``s'`` (each corrected
by its log density). It pushes Q down off the data and up on it. The exported policy is
``tanh(mean)``. Discrete actions: :mod:`~rlbench_suite.baselines.offline.cql_discrete`.
"""

from __future__ import annotations

import copy
import dataclasses
import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.distributions import Normal, TanhTransform, TransformedDistribution

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
    alpha_multiplier: float = 1.0
    use_automatic_entropy_tuning: bool = True
    backup_entropy: bool = False
    policy_lr: float = 3e-5
    qf_lr: float = 3e-4
    soft_target_update_rate: float = 5e-3
    target_update_period: int = 1
    cql_n_actions: int = 10
    cql_importance_sample: bool = True
    cql_temp: float = 1.0
    cql_alpha: float = 10.0
    cql_clip_diff_min: float = -math.inf
    cql_clip_diff_max: float = math.inf
    orthogonal_init: bool = True
    q_n_hidden_layers: int = 3
    bc_steps: int = 0
    """Gradient steps at the start whose actor loss is behavior cloning."""
    reward_scale: float = 1.0
    reward_bias: float = 0.0
    hidden: int = 256
    normalize: bool = True


def _init(net: nn.Sequential, orthogonal: bool) -> nn.Sequential:
    """CORL's ``init_module_weights``: orthogonal hidden layers (optional), a small last one."""
    linear = [m for m in net if isinstance(m, nn.Linear)]
    for layer in linear[:-1] if orthogonal else []:
        nn.init.orthogonal_(layer.weight, gain=math.sqrt(2))
        nn.init.zeros_(layer.bias)
    init = nn.init.orthogonal_ if orthogonal else nn.init.xavier_uniform_
    init(linear[-1].weight, gain=1e-2)
    nn.init.zeros_(linear[-1].bias)
    return net


class TanhGaussianActor(nn.Module):
    def __init__(self, obs_dim: int, act_dim: int, hidden: int) -> None:
        super().__init__()
        self.act_dim = act_dim
        self.net = _init(mlp([obs_dim, hidden, hidden, hidden, 2 * act_dim]), False)
        self.log_std_multiplier = nn.Parameter(torch.tensor(1.0))
        self.log_std_offset = nn.Parameter(torch.tensor(-1.0))

    def dist(self, obs: torch.Tensor) -> tuple[torch.Tensor, TransformedDistribution]:
        mean, log_std = torch.split(self.net(obs), self.act_dim, dim=-1)
        log_std = (self.log_std_multiplier * log_std + self.log_std_offset).clamp(-20.0, 2.0)
        return mean, TransformedDistribution(
            Normal(mean, log_std.exp()), TanhTransform(cache_size=1)
        )

    def sample(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """A reparameterized action and its log density."""
        _, dist = self.dist(obs)
        action = dist.rsample()
        return action, dist.log_prob(action).sum(-1)

    def log_prob(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        action = action.clamp(-1 + 1e-6, 1 - 1e-6)
        return self.dist(obs)[1].log_prob(action).sum(-1)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:  # the deterministic policy
        return torch.tanh(self.dist(obs)[0])


class QFunction(nn.Module):
    def __init__(self, obs_dim: int, act_dim: int, cfg: Config) -> None:
        super().__init__()
        sizes = [obs_dim + act_dim, *[cfg.hidden] * cfg.q_n_hidden_layers, 1]
        self.net = _init(mlp(sizes), cfg.orthogonal_init)

    def forward(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        if act.ndim == 3:  # (batch, n, act_dim): n actions per observation
            obs = obs.unsqueeze(1).expand(-1, act.shape[1], -1)
        return self.net(torch.cat([obs, act], -1)).squeeze(-1)


class Agent(Stateful):
    _parts = ("actor", "critic_1", "critic_2", "target_1", "target_2", "log_alpha",
              "actor_opt", "critic_opt", "alpha_opt")  # fmt: skip

    def __init__(self, spec: DataSpec, cfg: Config, max_steps: int) -> None:
        if spec.discrete:
            raise ValueError("cql.py is for continuous actions; cql_discrete.py for discrete ones")
        self.cfg, self.act_dim = cfg, spec.act_dim
        self.actor = TanhGaussianActor(spec.obs_dim, spec.act_dim, cfg.hidden)
        self.critic_1 = QFunction(spec.obs_dim, spec.act_dim, cfg)
        self.critic_2 = QFunction(spec.obs_dim, spec.act_dim, cfg)
        self.target_1 = copy.deepcopy(self.critic_1).requires_grad_(False)
        self.target_2 = copy.deepcopy(self.critic_2).requires_grad_(False)
        self.log_alpha = nn.ParameterList([nn.Parameter(torch.zeros(()))])
        self.target_entropy = -float(spec.act_dim)
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=cfg.policy_lr)
        critics = [*self.critic_1.parameters(), *self.critic_2.parameters()]
        self.critic_opt = torch.optim.Adam(critics, lr=cfg.qf_lr)
        self.alpha_opt = torch.optim.Adam(self.log_alpha.parameters(), lr=cfg.policy_lr)
        self.step = 0

    def _cql_term(self, critic: QFunction, q_data: torch.Tensor, obs: torch.Tensor,
                  sampled: list[tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:  # fmt: skip
        cfg = self.cfg
        qs = [critic(obs, actions) - (log_density if cfg.cql_importance_sample else 0.0)
              for actions, log_density in sampled]  # fmt: skip
        if not cfg.cql_importance_sample:
            qs.append(q_data.unsqueeze(1))
        ood = torch.logsumexp(torch.cat(qs, 1) / cfg.cql_temp, dim=1) * cfg.cql_temp
        diff = (ood - q_data).clamp(cfg.cql_clip_diff_min, cfg.cql_clip_diff_max).mean()
        return cfg.cql_alpha * diff

    def update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        cfg, obs, act, next_obs = self.cfg, batch["obs"], batch["action"], batch["next_obs"]
        reward = batch["reward"] * cfg.reward_scale + cfg.reward_bias
        self.step += 1
        # actor and temperature
        new_act, log_pi = self.actor.sample(obs)
        alpha = self.log_alpha[0].exp() * cfg.alpha_multiplier
        if cfg.use_automatic_entropy_tuning:
            alpha_loss = -(self.log_alpha[0] * (log_pi + self.target_entropy).detach()).mean()
        else:
            alpha_loss, alpha = torch.zeros(()), obs.new_tensor(cfg.alpha_multiplier)
        if self.step <= cfg.bc_steps:
            actor_loss = (alpha.detach() * log_pi - self.actor.log_prob(obs, act)).mean()
        else:
            q_new = torch.min(self.critic_1(obs, new_act), self.critic_2(obs, new_act))
            actor_loss = (alpha.detach() * log_pi - q_new).mean()
        # critics: TD error plus the conservative term
        q1, q2 = self.critic_1(obs, act), self.critic_2(obs, act)
        with torch.no_grad():
            next_act, next_log_pi = self.actor.sample(next_obs)
            target_q = torch.min(
                self.target_1(next_obs, next_act), self.target_2(next_obs, next_act)
            )
            if cfg.backup_entropy:
                target_q = target_q - alpha * next_log_pi
            td_target = reward + (1.0 - batch["terminated"]) * cfg.discount * target_q
            n, batch_size = cfg.cql_n_actions, obs.shape[0]
            uniform = torch.empty(batch_size, n, self.act_dim).uniform_(-1.0, 1.0)
            repeat = obs.unsqueeze(1).expand(-1, n, -1)
            current, current_log_pi = self.actor.sample(repeat)
            following, following_log_pi = self.actor.sample(next_obs.unsqueeze(1).expand(-1, n, -1))
            sampled = [(uniform, torch.full((batch_size, n), np.log(0.5**self.act_dim))),
                       (following, following_log_pi), (current, current_log_pi)]  # fmt: skip
        critic_loss = (F.mse_loss(q1, td_target) + F.mse_loss(q2, td_target)
                       + self._cql_term(self.critic_1, q1, obs, sampled)
                       + self._cql_term(self.critic_2, q2, obs, sampled))  # fmt: skip
        if cfg.use_automatic_entropy_tuning:
            self.alpha_opt.zero_grad()
            alpha_loss.backward()
            self.alpha_opt.step()
        self.actor_opt.zero_grad()
        actor_loss.backward()
        self.actor_opt.step()
        self.critic_opt.zero_grad()
        critic_loss.backward()
        self.critic_opt.step()
        if self.step % cfg.target_update_period == 0:
            soft_update(self.target_1, self.critic_1, cfg.soft_target_update_rate)
            soft_update(self.target_2, self.critic_2, cfg.soft_target_update_rate)
        return {"actor_loss": actor_loss.item(), "critic_loss": critic_loss.item(),
                "alpha": float(alpha.detach())}  # fmt: skip

    def policy(self) -> nn.Module:
        return self.actor
