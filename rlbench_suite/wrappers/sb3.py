"""Stable-Baselines3 on Gymnasium vector environments.

SB3 2.x only vectorizes single environments itself (``DummyVecEnv``, ``SubprocVecEnv``);
:class:`VectorEnvToSB3` lets it train on any Gymnasium ``VectorEnv`` instead, e.g. a
PettingZoo game converted by :class:`~rlbench_suite.wrappers.pz_vector.ParallelEnvToVectorEnv`
(:func:`pettingzoo_to_sb3`). This module imports SB3; import it only when needed.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from stable_baselines3.common.vec_env import VecEnv
from stable_baselines3.common.vec_env.base_vec_env import (
    VecEnvIndices,
    VecEnvObs,
    VecEnvStepReturn,
)


def unbatch_info(infos: dict[str, Any], index: int) -> dict[str, Any]:
    """The info of sub-environment ``index`` from a Gymnasium vector info dict."""
    out: dict[str, Any] = {}
    for key, value in infos.items():
        if key.startswith("_"):
            continue
        present = infos.get(f"_{key}")
        if present is not None and not present[index]:
            continue
        out[key] = unbatch_info(value, index) if isinstance(value, dict) else value[index]
    return out


def _is_wrapped(env: Any, wrapper_class: type) -> bool:
    """Whether ``wrapper_class`` is anywhere in the ``.env`` chain of ``env``."""
    seen = 0
    while env is not None and seen < 100:
        if isinstance(env, wrapper_class):
            return True
        env, seen = getattr(env, "env", None), seen + 1
    return False


class VectorEnvToSB3(VecEnv):
    """An SB3 ``VecEnv`` running a Gymnasium ``VectorEnv`` in ``SAME_STEP`` autoreset mode.

    Per-env infos are SB3's: ``terminal_observation`` (from ``final_obs``),
    ``TimeLimit.truncated``, ``episode = {"r", "l"}`` when the vector env reports episode
    statistics (so ``model.ep_info_buffer`` fills), and the other keys un-batched.
    ``reset()`` uses the seeds set by :meth:`seed` once, like SB3's ``DummyVecEnv``.
    """

    def __init__(self, venv: VectorEnv) -> None:
        mode = venv.metadata.get("autoreset_mode", getattr(venv, "autoreset_mode", None))
        if mode is None or AutoresetMode(mode) != AutoresetMode.SAME_STEP:
            raise ValueError(
                f"VectorEnvToSB3 needs a vector env in SAME_STEP autoreset mode (SB3's "
                f"semantics), got {mode!r}; create it with "
                "autoreset_mode=AutoresetMode.SAME_STEP"
            )
        self.venv = venv
        super().__init__(venv.num_envs, venv.single_observation_space, venv.single_action_space)
        self._actions: np.ndarray | None = None

    # -- stepping --------------------------------------------------------------------------

    def reset(self) -> VecEnvObs:
        """Reset all envs, with the seeds and options set since the last reset."""
        seed = self._seeds[0] if self._seeds and self._seeds[0] is not None else None
        options = self._options[0] if self._options and self._options[0] else None
        obs, infos = self.venv.reset(seed=seed, options=options)
        self.reset_infos = [unbatch_info(infos, i) for i in range(self.num_envs)]
        self._reset_seeds()
        self._reset_options()
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        """Remember the actions for :meth:`step_wait`."""
        self._actions = actions

    def step_wait(self) -> VecEnvStepReturn:
        """Step the vector env; convert flags and infos to SB3's conventions."""
        obs, rewards, terminated, truncated, infos = self.venv.step(self._actions)
        dones = np.logical_or(terminated, truncated)
        sb3_infos = [
            self._sb3_info(infos, i, terminated[i], truncated[i]) for i in range(len(dones))
        ]
        return obs, np.asarray(rewards, dtype=np.float32), dones, sb3_infos

    def _sb3_info(self, infos: dict[str, Any], i: int, term: bool, trunc: bool) -> dict:
        info = unbatch_info(infos, i)
        final_info = info.pop("final_info", None)
        if final_info is not None:
            # SB3 wants the terminal step's info; vector-level statistics stay on top
            info = {**final_info, **{k: info[k] for k in ("final_obs", "episode") if k in info}}
        info["TimeLimit.truncated"] = bool(trunc and not term)
        if "final_obs" in info:
            info["terminal_observation"] = info.pop("final_obs")
        if "episode" in info:
            ep = info["episode"]
            info["episode"] = {**ep, "r": float(ep["r"]), "l": int(ep["l"])}
        return info

    def close(self) -> None:
        """Close the vector env."""
        self.venv.close()

    # -- per-env access ----------------------------------------------------------------------

    def _targets(self, indices: VecEnvIndices) -> list[Any] | None:
        """The sub-environment object behind each index, when the vector env exposes them."""
        envs = getattr(self.venv, "envs", None)
        if envs is None:
            return None
        slots = getattr(self.venv, "agent_slots", None)
        per_index = [envs[i] for i, _ in slots] if slots is not None else list(envs)
        if len(per_index) != self.num_envs:
            return None
        return [per_index[i] for i in self._get_indices(indices)]

    @staticmethod
    def _apply(targets: list[Any], fn: Callable[[Any], Any]) -> list[Any]:
        """``fn`` once per distinct target (slots may share one sub-env), one result per index."""
        cache: dict[int, Any] = {}
        return [cache[id(t)] if id(t) in cache else cache.setdefault(id(t), fn(t)) for t in targets]

    def _all(self, indices: VecEnvIndices) -> bool:
        return list(self._get_indices(indices)) == list(range(self.num_envs))

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """Attribute ``attr_name`` of the selected envs."""
        if attr_name == "render_mode":  # the vector env's own, which SB3 asks for first
            return [getattr(self.venv, "render_mode", None) for _ in self._get_indices(indices)]
        targets = self._targets(indices)
        if targets is not None:
            return self._apply(targets, lambda env: _get(env, attr_name))
        values = self.venv.get_attr(attr_name)
        return [values[i] for i in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Set ``attr_name`` to ``value`` on the selected envs."""
        targets = self._targets(indices)
        if targets is not None:
            self._apply(targets, lambda env: setattr(env, attr_name, value))
        elif self._all(indices):
            self.venv.set_attr(attr_name, [value] * self.num_envs)
        else:
            raise NotImplementedError("set_attr on a subset needs a vector env exposing .envs")

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs
    ) -> list[Any]:
        """Call ``method_name`` on the selected envs (once per distinct sub-env)."""
        targets = self._targets(indices)
        if targets is not None:
            return self._apply(
                targets, lambda env: _get(env, method_name)(*method_args, **method_kwargs)
            )
        if self._all(indices):
            return list(self.venv.call(method_name, *method_args, **method_kwargs))
        raise NotImplementedError("env_method on a subset needs a vector env exposing .envs")

    def env_is_wrapped(
        self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None
    ) -> list[bool]:
        """Whether the selected envs are wrapped with ``wrapper_class``."""
        targets = self._targets(indices)
        if targets is None:
            return [False for _ in self._get_indices(indices)]
        return [_is_wrapped(env, wrapper_class) for env in targets]

    def get_images(self) -> Sequence[np.ndarray | None]:
        """One RGB frame per env (``None`` each unless ``render_mode == "rgb_array"``)."""
        if self.render_mode != "rgb_array":
            warnings.warn(
                f"get_images needs render_mode='rgb_array', not {self.render_mode!r}",
                stacklevel=2,
            )
            return [None] * self.num_envs
        return self.env_method("render")


def _get(env: Any, name: str) -> Any:
    getter = getattr(env, "get_wrapper_attr", None)
    return getter(name) if callable(getter) else getattr(env, name)


def pettingzoo_to_sb3(env_fn: Callable[[], Any], num_envs: int = 1) -> VectorEnvToSB3:
    """SB3 ``VecEnv`` over ``num_envs`` copies of a PettingZoo ParallelEnv, one slot per agent."""
    from rlbench_suite.wrappers.pz_vector import ParallelEnvToVectorEnv

    venv = ParallelEnvToVectorEnv(env_fn, num_envs, autoreset_mode=AutoresetMode.SAME_STEP)
    return VectorEnvToSB3(venv)
