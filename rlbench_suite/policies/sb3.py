"""SB3 models as policies: :class:`SB3Policy` and :func:`detect_sb3_algorithm`.

torch and stable-baselines3 are imported only when a policy is created.
"""

from __future__ import annotations

import base64
import copy
import importlib
import json
import pickletools
import zipfile
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from rlbench_suite.policies.core import (
    PolicyIdentity,
    PolicyMetadata,
    artifact_identity,
    load_metadata,
)
from rlbench_suite.wrappers.masks import (
    ACTION_MASK_KEY,
    coerce_action,
    get_action_mask,
    split_masked_observation,
)


def without_log_folder(model: Any) -> Any:
    """``model`` with a logger that writes nothing: SB3's default one makes a folder
    ``SB3-<date-time>`` in the temp dir on every ``learn()`` and never removes it (the suite's
    runs keep their own records). Set again after a ``load``: a saved model has no logger."""
    from stable_baselines3.common.logger import Logger

    model.set_logger(Logger(folder=None, output_formats=[]))
    return model


SB3_ALGORITHMS: dict[str, str] = {
    "PPO": "stable_baselines3",
    "A2C": "stable_baselines3",
    "DQN": "stable_baselines3",
    "SAC": "stable_baselines3",
    "TD3": "stable_baselines3",
    "DDPG": "stable_baselines3",
    "MaskablePPO": "sb3_contrib",
    "RecurrentPPO": "sb3_contrib",
    "TQC": "sb3_contrib",
    "QRDQN": "sb3_contrib",
    "TRPO": "sb3_contrib",
    "ARS": "sb3_contrib",
    "CrossQ": "sb3_contrib",
}
"""Algorithms :class:`SB3Policy` loads, and the package each comes from."""

# Module of the saved policy class -> algorithm (checked in order, by prefix).
_POLICY_MODULES = (
    ("stable_baselines3.dqn.", "DQN"),
    ("stable_baselines3.sac.", "SAC"),
    ("stable_baselines3.td3.", "TD3"),
    ("sb3_contrib.common.maskable.", "MaskablePPO"),
    ("sb3_contrib.common.recurrent.", "RecurrentPPO"),
    ("sb3_contrib.tqc.", "TQC"),
    ("sb3_contrib.qrdqn.", "QRDQN"),
    ("sb3_contrib.ars.", "ARS"),
    ("sb3_contrib.crossq.", "CrossQ"),
)


def _algorithm_class(algo: str) -> type:
    """The SB3 algorithm class named ``algo`` (case-insensitive)."""
    names = {name.lower(): name for name in SB3_ALGORITHMS}
    name = names.get(algo.lower())
    if name is None:
        raise ValueError(f"unknown SB3 algorithm {algo!r}; accepted: {', '.join(SB3_ALGORITHMS)}")
    package = SB3_ALGORITHMS[name]
    try:
        module = importlib.import_module(package)
    except ImportError as exc:
        extra = "sb3-contrib" if package == "sb3_contrib" else "stable-baselines3"
        raise ImportError(
            f"SB3 algorithm {name} needs {extra}: pip install 'rlbench-suite[baselines]'"
        ) from exc
    return getattr(module, name)


def detect_sb3_algorithm(path: str | Path) -> str:
    """Which SB3 algorithm saved the ``.zip`` at ``path``, from its ``data`` JSON.

    SB3 stores the *policy* class (module and name), not the algorithm; the algorithm
    follows from the policy's module and, for the shared actor-critic policy, from the
    hyperparameters saved with it (PPO has ``clip_range``, TRPO ``cg_max_steps``, A2C
    neither). DDPG is TD3 with ``policy_delay == 1`` and ``target_noise_clip == 0``.
    Nothing is unpickled.
    """
    path = Path(path)
    try:
        with zipfile.ZipFile(path) as archive:
            data = json.loads(archive.read("data"))
    except (zipfile.BadZipFile, KeyError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(
            f"{path} is not an SB3 model (.zip with a 'data' JSON entry): {exc}"
        ) from None
    module, name = _saved_class(data.get("policy_class"))
    for prefix, algo in _POLICY_MODULES:
        if module.startswith(prefix):
            if (
                algo == "TD3"
                and data.get("policy_delay") == 1
                and not data.get("target_noise_clip")
            ):
                return "DDPG"
            return algo
    if module == "stable_baselines3.common.policies":
        if "cg_max_steps" in data:
            return "TRPO"
        return "PPO" if "clip_range" in data else "A2C"
    raise ValueError(
        f"cannot tell which SB3 algorithm saved {path} (policy class {module}.{name}); "
        f"pass algo= (accepted: {', '.join(SB3_ALGORITHMS)})"
    )


def _saved_class(entry: Any) -> tuple[str, str]:
    """(module, name) of a class SB3 serialised into its data JSON, read without unpickling."""
    if not isinstance(entry, dict):
        return "", ""
    strings: list[str] = []
    try:
        raw = base64.b64decode(entry.get(":serialized:", ""))
        strings = [arg for _, arg, _ in pickletools.genops(raw) if isinstance(arg, str)]
    except Exception:  # a class pickled by value, or a damaged entry: fall back to the JSON
        strings = []
    module = entry.get("__module__") or (strings[0] if strings else "")
    name = strings[1] if len(strings) > 1 else ""
    return str(module), str(name)


class SB3Policy:
    """A stable-baselines3 (or sb3-contrib) model: ``model.predict(obs, deterministic=...)``.

    ``model_or_path`` is a model or the path of a saved ``.zip``; the algorithm is ``algo``
    if given, else the sidecar's ``algo``, else detected (:func:`detect_sb3_algorithm`).
    MaskablePPO gets ``action_masks`` from ``info["action_mask"]``; other deterministic
    actor-critic policies over a ``Discrete`` action (PPO, A2C) take the legal action of
    highest logit where ``info`` has a mask, as their ONNX export does, so ``sb3:`` and
    ``onnx:`` of one model score alike; recurrent policies keep their state across steps and
    start afresh on ``reset``.

    Stochastic actions (``deterministic=False``) are reproducible: SB3 samples from torch's
    global generator, so the policy swaps its own generator state in around ``predict`` (and
    restores the global one after), seeded by ``reset(seed)``; DQN and QR-DQN explore
    epsilon-greedily as their ``predict`` does, with the policy's own numpy generator. Same
    seed, same actions, whatever else runs in the process (on CPU, the default device).
    Loading a ``.zip`` unpickles it: load only files you trust (or use ONNX).
    """

    def __init__(
        self,
        model_or_path: Any,
        deterministic: bool = True,
        algo: str | None = None,
        *,
        device: str = "cpu",
    ) -> None:
        self.deterministic = deterministic
        metadata: PolicyMetadata | None = None
        if isinstance(model_or_path, str | Path):
            path = Path(model_or_path)
            if not path.is_file() and path.with_name(path.name + ".zip").is_file():
                path = path.with_name(path.name + ".zip")
            if not path.is_file():
                raise FileNotFoundError(f"SB3 model file not found: {path}")
            metadata = load_metadata(path)
            algo = algo or (metadata.algo if metadata else None) or detect_sb3_algorithm(path)
            self.model = _algorithm_class(algo).load(path, device=device)
        else:
            from stable_baselines3.common.base_class import BaseAlgorithm

            if not isinstance(model_or_path, BaseAlgorithm):
                raise TypeError(
                    f"expected an SB3 model or a path to a saved .zip, got {type(model_or_path)!r}"
                )
            path = None
            self.model = model_or_path
        self.algo = type(self.model).__name__
        self.masked = self.algo == "MaskablePPO"
        self.recurrent = self.algo == "RecurrentPPO"
        self.explores = hasattr(self.model, "exploration_rate")  # DQN, QRDQN: epsilon-greedy
        # deterministic actor-critic policies over a Discrete action take the best *legal*
        # action where the env gives a mask, as their ONNX export does (OnnxPolicy)
        self._greedy_masked = (
            not self.masked and not self.recurrent and not self.explores
            and isinstance(self.model.action_space, gym.spaces.Discrete)
            and hasattr(self.model.policy, "get_distribution")
        )  # fmt: skip
        space = self.model.action_space
        self._discrete = space.dtype.type if isinstance(space, gym.spaces.Discrete) else None
        self._explore_space = copy.deepcopy(space)
        extra = {"algo": self.algo, "num_timesteps": int(self.model.num_timesteps)}
        if path is not None:
            self.identity = artifact_identity(path, "sb3", metadata, **extra)
        else:
            self.identity = PolicyIdentity(name=self.algo, kind="sb3", extra=extra)
        self._state: Any = None
        self._episode_start = np.ones((1,), dtype=bool)
        self._seed_generators(None)

    def _seed_generators(self, seed: int | None) -> None:
        import torch

        torch_seed, numpy_seed, space_seed = np.random.SeedSequence(seed).generate_state(3)
        self._torch_state = torch.Generator().manual_seed(int(torch_seed)).get_state()
        self._numpy_rng = np.random.default_rng(numpy_seed)
        self._explore_space.seed(int(space_seed))

    def reset(self, seed: int | None = None) -> None:
        self._state = None
        self._episode_start = np.ones((1,), dtype=bool)
        if seed is not None:
            self._seed_generators(seed)

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        observation, info = _split_mask(observation, info, self.model.observation_space)
        kwargs: dict[str, Any] = {"deterministic": self.deterministic}
        if self.masked:
            kwargs["action_masks"] = get_action_mask(None, info)
        if self.recurrent:
            kwargs.update(state=self._state, episode_start=self._episode_start)

        if self.deterministic and self._greedy_masked:
            legal = self._masked_greedy(observation, get_action_mask(None, info))
            if legal is not None:  # as OnnxPolicy: the best legal action
                return self._discrete(legal)
        if self.deterministic:
            action, state = self.model.predict(observation, **kwargs)
        elif self.explores:  # as DQN.predict, which draws from numpy's global generator
            if self._numpy_rng.random() < self.model.exploration_rate:
                action, state = np.asarray(self._explore_space.sample()), None
            else:  # the Q-network's policy is greedy whatever `deterministic` says
                action, state = self.model.predict(observation, deterministic=True)
        else:
            action, state = self._predict_with_own_generator(observation, kwargs)
        if self.recurrent:
            self._state = state
            self._episode_start = np.zeros((1,), dtype=bool)
        if self._discrete is not None and isinstance(action, np.ndarray) and action.ndim == 0:
            return self._discrete(action)
        return coerce_action(action, self.model.action_space)

    def _masked_greedy(self, observation: Any, mask: Any) -> int | None:
        """The action of highest logit among the legal ones (``mask``), or None without a
        mask or without logits to read."""
        import torch

        if mask is None:
            return None
        policy = self.model.policy
        obs_tensor, _ = policy.obs_to_tensor(observation)
        with torch.no_grad():
            logits = getattr(policy.get_distribution(obs_tensor).distribution, "logits", None)
        legal = np.asarray(mask, dtype=bool).reshape(-1)
        if logits is None or logits.numel() != legal.size or not legal.any():
            return None
        scores = logits.cpu().numpy().reshape(-1)
        return int(np.argmax(np.where(legal, scores, -np.inf)))

    def _predict_with_own_generator(self, observation: Any, kwargs: dict[str, Any]) -> Any:
        import torch

        saved = torch.get_rng_state()
        torch.set_rng_state(self._torch_state)
        try:
            return self.model.predict(observation, **kwargs)
        finally:
            self._torch_state = torch.get_rng_state()
            torch.set_rng_state(saved)


def _split_mask(
    observation: Any, info: dict[str, Any], space: gym.Space | None
) -> tuple[Any, dict[str, Any]]:
    """Move a PettingZoo-style mask into ``info`` unless the policy observes the dict itself."""
    if isinstance(space, gym.spaces.Dict) and ACTION_MASK_KEY in space.spaces:
        return observation, info
    return split_masked_observation(observation, info or {})
