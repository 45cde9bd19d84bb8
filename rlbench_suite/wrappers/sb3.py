"""Stable-Baselines3 on Gymnasium vector environments.

SB3 2.x only vectorizes single environments itself (``DummyVecEnv``, ``SubprocVecEnv``);
:class:`VectorEnvToSB3` lets it train on any Gymnasium ``VectorEnv`` instead, e.g. a
PettingZoo game converted by :class:`~rlbench_suite.wrappers.pz_vector.ParallelEnvToVectorEnv`
(:func:`pettingzoo_to_sb3`). It also serves ``sb3_contrib``'s ``MaskablePPO`` the
suite's ``info["action_mask"]`` masks. This module imports SB3; import it only when needed.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv, VectorEnv
from stable_baselines3.common.vec_env import VecEnv
from stable_baselines3.common.vec_env.base_vec_env import (
    VecEnvIndices,
    VecEnvObs,
    VecEnvStepReturn,
)

from rlbench_suite.wrappers.masks import ACTION_MASK_KEY
from rlbench_suite.wrappers.stats import STATS_KEY

# keys of a vector step's info that belong to the ending episode, not to the next one
_ENDING_KEYS = ("final_obs", "final_info", STATS_KEY, "episode")


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

    Per-env infos are SB3's: on an episode's last step, the terminal step's info (from
    ``final_info``) with ``terminal_observation`` (from ``final_obs``),
    ``TimeLimit.truncated`` and ``episode = {"r", "l"[, "t"]}`` for ``model.ep_info_buffer``,
    taken from the first of: the vector-level ``info["rlbench_episode"]``
    (:data:`~rlbench_suite.wrappers.stats.STATS_KEY`), the terminal step's
    ``final_info["rlbench_episode"]`` (the suite's single-agent wrappers), an ``"episode"``
    key (Gymnasium's ``RecordEpisodeStatistics``, SB3's ``Monitor``). The full statistics
    stay under ``"rlbench_episode"``. The new episode's info goes to ``reset_infos[i]``, as
    in ``DummyVecEnv``. ``reset()`` uses the seeds set by :meth:`seed` once (the first as
    the vector env's int seed).

    :meth:`action_masks` (and ``env_method("action_masks")``, which ``sb3_contrib``'s
    ``get_action_masks`` calls) gives the current ``(num_envs, n)`` bool masks from the
    latest infos' ``"action_mask"``, all True where an env reports none.
    """

    def __init__(self, venv: VectorEnv) -> None:
        mode = venv.metadata.get("autoreset_mode", getattr(venv, "autoreset_mode", None))
        if mode is None or AutoresetMode(mode) != AutoresetMode.SAME_STEP:
            raise ValueError(_autoreset_error(venv, mode))
        self.venv = venv
        super().__init__(venv.num_envs, venv.single_observation_space, venv.single_action_space)
        self._actions: np.ndarray | None = None
        self._masks: np.ndarray | None = None

    # -- stepping --------------------------------------------------------------------------

    def reset(self) -> VecEnvObs:
        """Reset all envs, with the seeds and options set since the last reset."""
        seed = self._seeds[0] if self._seeds and self._seeds[0] is not None else None
        options = self._options[0] if self._options and self._options[0] else None
        obs, infos = self.venv.reset(seed=seed, options=options)
        self.reset_infos = [unbatch_info(infos, i) for i in range(self.num_envs)]
        self._update_masks(infos)
        self._reset_seeds()
        self._reset_options()
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        """Remember the actions for :meth:`step_wait`."""
        self._actions = actions

    def step_wait(self) -> VecEnvStepReturn:
        """Step the vector env; convert flags and infos to SB3's conventions."""
        obs, rewards, terminated, truncated, infos = self.venv.step(self._actions)
        self._update_masks(infos)
        dones = np.logical_or(terminated, truncated)
        sb3_infos = [
            self._sb3_info(infos, i, terminated[i], truncated[i]) for i in range(len(dones))
        ]
        return obs, np.asarray(rewards, dtype=np.float32), dones, sb3_infos

    def _sb3_info(self, infos: dict[str, Any], i: int, term: bool, trunc: bool) -> dict:
        info = unbatch_info(infos, i)
        final_info = info.get("final_info")
        if final_info is not None:
            # the step's own info describes the next episode (autoreset): SB3 keeps it in
            # reset_infos and wants the terminal step's info, plus vector-level statistics
            self.reset_infos[i] = {k: v for k, v in info.items() if k not in _ENDING_KEYS}
            ending = {k: info[k] for k in _ENDING_KEYS if k in info and k != "final_info"}
            info = {**final_info, **ending}
        info["TimeLimit.truncated"] = bool(trunc and not term)
        if "final_obs" in info:
            info["terminal_observation"] = info.pop("final_obs")
        # merged above: a vector-level key wins over the terminal step's one of that name
        stats = info.get(STATS_KEY, info.get("episode"))
        if stats is not None:
            info["episode"] = _sb3_episode(stats)
        return info

    # -- action masks (sb3_contrib's MaskablePPO) ------------------------------------------

    def _update_masks(self, infos: dict[str, Any]) -> None:
        self._masks = None
        if ACTION_MASK_KEY not in infos:
            return
        raw = np.asarray(infos[ACTION_MASK_KEY]).reshape(self.num_envs, -1)
        present = np.asarray(infos.get(f"_{ACTION_MASK_KEY}", np.ones(self.num_envs, bool)))
        masks = np.ones(raw.shape, dtype=np.bool_)
        masks[present] = raw[present].astype(np.bool_)
        self._masks = masks

    def action_masks(self) -> np.ndarray:
        """The current legal-action masks, ``(num_envs, n)`` bool (all True without masks)."""
        if self._masks is not None:
            return self._masks.copy()
        return np.ones((self.num_envs, _mask_width(self.action_space)), dtype=np.bool_)

    def _slot_mask(self, i: int) -> Callable[[], np.ndarray]:
        """``env.action_masks`` of env ``i``, as ``get_attr("action_masks")`` returns it."""
        return lambda: self.action_masks()[i]

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

    def has_attr(self, attr_name: str) -> bool:
        """Whether the envs have ``attr_name`` (``"action_masks"`` always)."""
        try:
            self.get_attr(attr_name)
        except AttributeError:
            return False
        return True

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """Attribute ``attr_name`` of the selected envs."""
        if attr_name == "action_masks":
            return [self._slot_mask(i) for i in self._get_indices(indices)]
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
        else:  # a Gymnasium VectorEnv sets every env at once: keep the others' values
            chosen = set(self._get_indices(indices))
            current = self.venv.get_attr(attr_name) if not self._all(indices) else None
            values = [
                value if current is None or i in chosen else current[i]
                for i in range(self.num_envs)
            ]
            self.venv.set_attr(attr_name, values)

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs
    ) -> list[Any]:
        """Call ``method_name`` on the selected envs (once per distinct sub-env)."""
        if method_name == "action_masks":
            masks = self.action_masks()
            return [masks[i] for i in self._get_indices(indices)]
        targets = self._targets(indices)
        if targets is not None:
            return self._apply(
                targets, lambda env: _get(env, method_name)(*method_args, **method_kwargs)
            )
        if self._all(indices):
            return list(self.venv.call(method_name, *method_args, **method_kwargs))
        raise NotImplementedError(
            f"env_method({method_name!r}) on a subset needs a vector env exposing .envs "
            f"(SyncVectorEnv); {type(self.venv).__name__} has none: call it on all envs "
            "(indices=None)"
        )

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


def _autoreset_error(venv: VectorEnv, mode: Any) -> str:
    """Why ``venv`` in autoreset ``mode`` cannot be adapted, and how to make it in SAME_STEP."""
    inner = venv.unwrapped
    what = type(inner).__name__
    got = (
        f"{what} is in {AutoresetMode(mode).name} mode"
        if mode is not None
        else f"{what} does not say its autoreset mode (no metadata['autoreset_mode'])"
    )
    spec = getattr(venv, "spec", None)
    env_id = f'"{spec.id}"' if spec is not None else "id"
    if isinstance(inner, SyncVectorEnv | AsyncVectorEnv):
        kind = "sync" if isinstance(inner, SyncVectorEnv) else "async"
        how = (
            f'gym.make_vec({env_id}, num_envs, vectorization_mode="{kind}", '
            'vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP})'
        )
    else:
        how = (
            f'gym.make_vec({env_id}, num_envs, vectorization_mode="vector_entry_point", '
            f"autoreset_mode=AutoresetMode.SAME_STEP), or {what}(..., "
            "autoreset_mode=AutoresetMode.SAME_STEP)"
        )
    return (
        "VectorEnvToSB3 needs a vector env in SAME_STEP autoreset mode (SB3's semantics: the "
        f"step that ends an episode already returns the next episode's first observation); {got}. "
        f"Make it in SAME_STEP mode (from gymnasium.vector import AutoresetMode): {how}. "
        "See docs/wrappers.md."
    )


def _sb3_episode(stats: dict[str, Any]) -> dict[str, Any]:
    """``{"r", "l"[, "t"]}`` as Python numbers, SB3's ``Monitor`` format."""
    episode = {"r": float(stats["r"]), "l": int(stats["l"])}
    if "t" in stats:
        episode["t"] = float(stats["t"])
    return episode


def _mask_width(space: gym.Space) -> int:
    """The length of a flat action mask for ``space`` (as ``MaskablePPO`` expects)."""
    if isinstance(space, spaces.Discrete):
        return int(space.n)
    if isinstance(space, spaces.MultiDiscrete):
        return int(np.sum(space.nvec))
    if isinstance(space, spaces.MultiBinary):
        return 2 * int(np.prod(space.shape))
    raise TypeError(f"action masks need a Discrete, MultiDiscrete or MultiBinary space: {space}")


def _get(env: Any, name: str) -> Any:
    getter = getattr(env, "get_wrapper_attr", None)
    return getter(name) if callable(getter) else getattr(env, name)


def pettingzoo_to_sb3(env_fn: Callable[[], Any], num_envs: int = 1) -> VectorEnvToSB3:
    """SB3 ``VecEnv`` over ``num_envs`` copies of a PettingZoo ParallelEnv, one slot per agent.

    Warning: SB3 trains on every transition it collects, including the black-death padding
    of agents that left before their game ended (zero observations, reward 0,
    ``info["active"] == False``, no ``done`` when the padding gives way to the next
    episode; see :mod:`rlbench_suite.wrappers.pz_vector`) as ordinary experience: they
    dilute the batch and teach the value of an all-zero observation. Where agents often
    leave early, prefer a learner that drops inactive transitions.
    """
    from rlbench_suite.wrappers.pz_vector import ParallelEnvToVectorEnv

    venv = ParallelEnvToVectorEnv(env_fn, num_envs, autoreset_mode=AutoresetMode.SAME_STEP)
    return VectorEnvToSB3(venv)
