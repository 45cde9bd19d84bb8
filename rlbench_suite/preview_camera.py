"""The camera a picture of a MuJoCo environment is taken with, and MuJoCo's log file kept
out of the working directory (``rlbench_suite.previews``' helpers)."""

from __future__ import annotations

import functools
import importlib.util
import warnings

import gymnasium as gym

from rlbench_suite.core.cards import EnvCard

TRACKING_CAMERA = "track"
"""The camera of Gymnasium's MuJoCo locomotion models that follows the body; their default
free camera stays put while the ant or the cheetah leaves the picture."""


@functools.cache
def _model_cameras(card_id: str) -> tuple[str, ...]:
    import mujoco

    quiet_mujoco_log()
    env = gym.make(card_id)
    try:
        model = env.unwrapped.model
        return tuple(mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_CAMERA, i)
                     for i in range(model.ncam))  # fmt: skip
    finally:
        env.close()


def tracking_camera(card: EnvCard) -> str | None:
    """The model camera a picture of ``card`` is taken with: :data:`TRACKING_CAMERA` for a
    Gymnasium MuJoCo env whose model has it (a Gymnasium ``camera_name``), else None."""
    if not card.entry_point.startswith("gymnasium.envs.mujoco."):
        return None
    return TRACKING_CAMERA if TRACKING_CAMERA in _model_cameras(card.id) else None


def quiet_mujoco_log() -> None:
    """MuJoCo's warnings (a deprecated attribute in Gymnasium's half_cheetah.xml, at every
    load) become Python warnings, shown once each, instead of lines appended to a
    ``MUJOCO_LOG.TXT`` in the working directory. Nothing happens without MuJoCo."""
    if importlib.util.find_spec("mujoco") is None:
        return
    import mujoco

    mujoco.set_mju_user_warning(_mujoco_warning)


def _mujoco_warning(message: str) -> None:
    warnings.warn(f"MuJoCo: {message}", RuntimeWarning, stacklevel=2)
