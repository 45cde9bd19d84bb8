"""Saving a trained policy so that the harness can evaluate it as it was trained.

:func:`save_policy` writes the model (an SB3 ``.zip``, or ONNX through
:func:`~rlbench_suite.policies.export_sb3_to_onnx` for a ``.onnx`` path) and its sidecar
``<file>.meta.json``: the card's id, the algorithm, the training seeds and budget, and the
suite wrappers the model was trained through, which ``rlbench eval ID --policy sb3:FILE``
then rebuilds on the card's environment. Use it in place of ``model.save``::

    env = HashedBagOfWords(AdmissibleActions(gym.make("rlbench/TextAdventureEasy-v0")))
    model = PPO("MlpPolicy", env).learn(20_000)
    save_policy(model, "adventure.zip", env, train_seeds=[0])
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rlbench_suite.policies.core import PolicyMetadata, write_metadata
from rlbench_suite.registry import added_wrappers


def env_spec(env: Any) -> Any:
    """The Gymnasium spec of a Gymnasium env or of the first env of an SB3 ``VecEnv``."""
    if hasattr(env, "get_attr") and hasattr(env, "num_envs"):  # an SB3 VecEnv
        return env.get_attr("spec", [0])[0]
    return env.spec


def save_policy(
    model: Any,
    path: str | Path,
    env: Any,
    *,
    name: str | None = None,
    train_seeds: Iterable[int] = (),
    tuning_seeds: Iterable[int] = (),
    training_budget_steps: int | None = None,
    extra: dict[str, Any] | None = None,
) -> Path:
    """Save ``model`` (trained on ``env``) at ``path`` with its sidecar; returns the file.

    A ``.onnx`` path exports the policy to ONNX (it then runs without unpickling anything);
    any other path is SB3's own ``.zip``. ``env`` is the Gymnasium env (or SB3 ``VecEnv``)
    the model was trained on, made with ``gym.make(card_id)`` and wrapped in the suite's
    wrappers, which are recorded.
    """
    spec = env_spec(env)
    metadata = PolicyMetadata(
        name=name,
        algo=type(model).__name__,
        env_id=spec.id if spec is not None else None,
        train_seeds=list(train_seeds),
        tuning_seeds=list(tuning_seeds),
        training_budget_steps=training_budget_steps,
        wrappers=added_wrappers(spec),
        extra=dict(extra or {}),
    )
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".onnx":
        from rlbench_suite.policies import export_sb3_to_onnx

        export_sb3_to_onnx(model, path)
    else:
        path = path if path.suffix == ".zip" else path.with_name(path.name + ".zip")
        model.save(path)
    write_metadata(path, metadata)
    return path
