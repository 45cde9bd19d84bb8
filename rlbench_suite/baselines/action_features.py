"""A MaskablePPO policy that scores each action by its features: large, structured action lists.

With hundreds of actions that share structure (Wordle's 715 words, each five letters in five
places), a separate logit per action learns each word from its own wins only. Here the
actor's last layer maps the state to a vector ``v`` of the actions' feature size and the
logit of action ``a`` is ``features[a] . v`` (plus a learned bias per action): what is learned
about a letter in a place carries over to every word with it. This is the standard
Wordle-RL design (Andrew Ho, "Solving Wordle with reinforcement learning", 2022,
github.com/andrewkho/wordle-solver: a state vector dotted with each word's letter-position
one-hot).

The features come from a function named in the hyperparameters, ``policy_kwargs:
{action_features: "package.module:function"}``, which returns a ``(actions, k)`` array; the
matrix is a buffer of the action head, so the exported ONNX graph holds it as a constant.
Select the policy with ``policy: rlbench_suite.baselines.action_features:ActionFeaturesPolicy``.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import torch
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from torch import nn


def load_features(reference: str) -> np.ndarray:
    """The ``(actions, k)`` matrix returned by the function at ``reference``
    (``module:function``); a clear error when it cannot be found or has the wrong shape."""
    module_name, _, attr = reference.partition(":")
    if not module_name or not attr:
        raise ValueError(f"action_features must be 'module:function', got {reference!r}")
    try:
        function = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"action_features {reference!r} cannot be loaded: {exc}") from None
    features = np.asarray(function(), dtype=np.float32)
    if features.ndim != 2:
        raise ValueError(f"action_features {reference!r} gave shape {features.shape}, "
                         "expected (actions, features)")  # fmt: skip
    return features


class ActionFeaturesHead(nn.Module):
    """``logits[a] = features[a] . (W h) + bias[a]`` for a latent ``h``."""

    def __init__(self, latent_dim: int, features: np.ndarray, bias: bool = True) -> None:
        super().__init__()
        self.project = nn.Linear(latent_dim, features.shape[1])
        nn.init.orthogonal_(self.project.weight, gain=0.01)
        nn.init.zeros_(self.project.bias)
        self.register_buffer("features", torch.as_tensor(features, dtype=torch.float32))
        self.bias = nn.Parameter(torch.zeros(features.shape[0])) if bias else None

    def forward(self, latent: torch.Tensor) -> torch.Tensor:
        logits = self.project(latent) @ self.features.T
        return logits if self.bias is None else logits + self.bias


class ActionFeaturesPolicy(MaskableActorCriticPolicy):
    """MaskablePPO's actor-critic with :class:`ActionFeaturesHead` as its action head.

    Args (besides MaskablePPO's): ``action_features``, the ``module:function`` giving the
    features of every action (one row per action of the ``Discrete`` space), and
    ``action_bias``, whether each action also has its own learned bias.
    """

    def __init__(self, *args: Any, action_features: str, action_bias: bool = True,
                 **kwargs: Any) -> None:  # fmt: skip
        self.action_features = action_features
        self.action_bias = action_bias
        super().__init__(*args, **kwargs)

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)
        features = load_features(self.action_features)
        n = int(self.action_space.n)
        if features.shape[0] != n:
            raise ValueError(f"action_features {self.action_features!r} has {features.shape[0]} "
                             f"rows for a Discrete({n}) action space")  # fmt: skip
        self.action_net = ActionFeaturesHead(
            self.mlp_extractor.latent_dim_pi, features, self.action_bias
        )
        self.optimizer = self.optimizer_class(
            self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs
        )

    def _get_constructor_parameters(self) -> dict[str, Any]:
        return {**super()._get_constructor_parameters(), "action_features": self.action_features,
                "action_bias": self.action_bias}  # fmt: skip
