"""The camera a picture of a MuJoCo environment is taken with (``rlbench_suite.previews``'
helper; MuJoCo's log is routed by ``rlbench_suite.mujoco_log`` for every path)."""

from __future__ import annotations

import functools

import gymnasium as gym

from rlbench_suite.core.cards import EnvCard

TRACKING_CAMERA = "track"
"""The camera of Gymnasium's MuJoCo locomotion models that follows the body; their default
free camera stays put while the ant or the cheetah leaves the picture."""


@functools.cache
def _model_cameras(card_id: str) -> tuple[str, ...]:
    import mujoco

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
