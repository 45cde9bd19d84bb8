"""Checkpoints: save and restore everything a training run needs to go on where it stopped.

A checkpoint is a folder ``checkpoints/step-<N>/`` (``N``: environment steps done) with

- ``model.zip``: SB3's own save: policy and optimizer state, the step counter, update count,
  schedules, the last observation and episode starts, the episode-info buffer;
- ``replay_buffer.pkl``: the replay buffer (off-policy algorithms only);
- ``env.pkl``: the training ``VecEnv`` pickled with cloudpickle (each environment's state and
  ``np_random``, and ``VecNormalize``'s statistics where used); absent where the environment's
  state does not survive pickling (:func:`pickle_env`), and then the resumed run starts new
  episodes, reset with the run's training seeds (it goes on, but not bit-identically);
- ``rng.pkl``: the Python, NumPy and torch generators' states and the model's action space
  RNG (off-policy warm-up samples it);
- ``state.json``: the step count, the wall time so far, and the trainer's own state
  (the next evaluation and checkpoint steps).

It is written to a temporary folder and renamed into place, so a run killed while saving
leaves the previous checkpoint whole. Only the newest :data:`KEEP` are kept.
"""

from __future__ import annotations

import json
import pickle
import random
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from rlbench_suite.policies.sb3 import without_log_folder

KEEP = 2
"""How many checkpoints a run keeps (the newest)."""
STATE_FILE = "state.json"


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` as JSON, atomically (a temporary file renamed into place)."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
    tmp.replace(path)


def checkpoint_dir(run_dir: Path) -> Path:
    return run_dir / "checkpoints"


def list_checkpoints(run_dir: Path) -> list[Path]:
    """The complete checkpoints of a run, oldest first."""
    folder = checkpoint_dir(run_dir)
    if not folder.is_dir():
        return []
    found = [p for p in folder.glob("step-*") if (p / STATE_FILE).is_file()]
    return sorted(found, key=lambda p: int(p.name.removeprefix("step-")))


def latest_checkpoint(run_dir: Path) -> Path | None:
    found = list_checkpoints(run_dir)
    return found[-1] if found else None


def rng_states(model: Any) -> dict[str, Any]:
    """The states of every random generator training draws from."""
    import torch

    return {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
        "action_space": model.action_space.np_random.bit_generator.state,
        "sde": [_sde_noise(dist) for dist in _sde_distributions(model)],
    }


def _sde_distributions(model: Any) -> list[Any]:
    """gSDE noise distributions of the policy (PPO/A2C's own, SAC's actor's)."""
    owners = (model.policy, getattr(model.policy, "actor", None))
    dists = [getattr(owner, "action_dist", None) for owner in owners]
    return [d for d in dists if d is not None and hasattr(d, "exploration_mat")]


def _sde_noise(dist: Any) -> dict[str, Any]:
    """The current noise matrices (used to sample actions only, so detached copies do)."""
    keys = ("exploration_mat", "exploration_matrices")
    return {k: _detached(getattr(dist, k, None)) for k in keys}


def _detached(value: Any) -> Any:
    return value.detach().clone() if value is not None else None


def set_rng_states(model: Any, states: dict[str, Any]) -> None:
    import torch

    random.setstate(states["python"])
    np.random.set_state(states["numpy"])
    torch.set_rng_state(states["torch"])
    model.action_space.np_random.bit_generator.state = states["action_space"]
    for dist, noise in zip(_sde_distributions(model), states["sde"], strict=True):
        for key, value in noise.items():
            setattr(dist, key, _detached(value))


def save_checkpoint(run_dir: Path, model: Any, state: dict[str, Any]) -> Path:
    """Write a checkpoint of the SB3 ``model`` at its current step; return its folder."""

    def write(folder: Path) -> bool:
        model.save(folder / "model.zip")
        if getattr(model, "replay_buffer", None) is not None:
            model.save_replay_buffer(folder / "replay_buffer.pkl")
        env_pickled = pickle_env(model.get_env(), folder / "env.pkl")
        with open(folder / "rng.pkl", "wb") as f:
            pickle.dump(rng_states(model), f)
        return env_pickled

    return write_checkpoint(run_dir, int(model.num_timesteps), write, state)


def write_checkpoint(
    run_dir: Path, step: int, write: Callable[[Path], bool], state: dict[str, Any]
) -> Path:
    """Write ``checkpoints/step-<step>/``: ``write(folder)`` puts the algorithm's files there
    and says whether the env's state was saved; then ``state.json``. Written to a temporary
    folder renamed into place; only the newest :data:`KEEP` checkpoints are kept."""
    folder = checkpoint_dir(run_dir)
    final = folder / f"step-{step}"
    tmp = folder / f".tmp-step-{step}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    env_pickled = write(tmp)
    state = {**state, "step": step, "env_pickled": env_pickled}
    (tmp / STATE_FILE).write_text(json.dumps(state, indent=2), encoding="utf-8")
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    for old in list_checkpoints(run_dir)[:-KEEP]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def read_state(checkpoint: Path) -> dict[str, Any]:
    return json.loads((checkpoint / STATE_FILE).read_text(encoding="utf-8"))


def restore_checkpoint(
    checkpoint: Path, algo_class: type, make_env: Callable[[], Any], device: str
) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """The model, the trainer state and the RNG states saved in ``checkpoint``.

    The RNG states are set on return; ``learn`` draws again before the first rollout
    boundary where gSDE is used (new noise matrices), so the trainer sets them once more
    there. ``make_env`` builds a fresh training env where the saved one did not pickle.
    """
    state = read_state(checkpoint)
    env_file = checkpoint / "env.pkl"
    if env_file.is_file():
        with open(env_file, "rb") as f:
            env = env_from_state(pickle.load(f))  # written by this run
    else:
        env = make_env()
    model = without_log_folder(algo_class.load(
        checkpoint / "model.zip", env=env, device=device, force_reset=not env_file.is_file()
    ))
    if env_file.is_file():  # load() seeded the env for a next reset that will not come
        _forget_pending_seeds(model.get_env())
    # else the new env is reset with the run's training seeds again (seed .. seed + n - 1)
    if (checkpoint / "replay_buffer.pkl").is_file():
        model.load_replay_buffer(checkpoint / "replay_buffer.pkl")
    with open(checkpoint / "rng.pkl", "rb") as f:
        rngs = pickle.load(f)
    set_rng_states(model, rngs)
    return model, state, rngs


def pickle_env(env: Any, path: Path) -> bool:
    """Write the env's state to ``path``; False (and no file) where it would not survive.

    Besides envs that do not pickle at all (simulator handles, locks), Gymnasium's
    ``EzPickle`` envs (Box2D, MuJoCo, PettingZoo games) pickle as their constructor
    arguments only and come back as new, un-reset envs: those are not written either.
    """
    import io

    import cloudpickle
    from gymnasium.utils import EzPickle

    class Pickler(cloudpickle.Pickler):
        lossy: list[str] = []

        def reducer_override(self, obj: Any) -> Any:
            if isinstance(obj, EzPickle):
                self.lossy.append(type(obj).__name__)
            return super().reducer_override(obj)

    buffer = io.BytesIO()
    pickler = Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
    try:
        pickler.dump(_env_state(env))
    except Exception:
        return False
    if pickler.lossy:
        return False
    path.write_bytes(buffer.getvalue())
    return True


def _env_state(env: Any) -> dict[str, Any]:
    """What to pickle of the training env: ``VecNormalize`` leaves out its venv and returns."""
    from stable_baselines3.common.vec_env import VecNormalize

    if isinstance(env, VecNormalize):
        return {"venv": env.venv, "normalize": env, "returns": env.returns}
    return {"venv": env}


def env_from_state(state: dict[str, Any]) -> Any:
    """The env :func:`pickle_env` wrote (its unpickled contents)."""
    normalize = state.get("normalize")
    if normalize is None:
        return state["venv"]
    normalize.set_venv(state["venv"])
    normalize.returns = state["returns"]
    return normalize


def _forget_pending_seeds(env: Any) -> None:
    while env is not None:
        reset_seeds = getattr(env, "_reset_seeds", None)
        if callable(reset_seeds):
            reset_seeds()
        env = getattr(env, "venv", None)
