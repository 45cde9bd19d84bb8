"""``--policy`` strings: :func:`make_policy`, and the baselines they can name."""

from __future__ import annotations

import copy
import difflib
from pathlib import Path
from typing import Any

from rlbench_suite.core.baseline_files import (  # noqa: F401 (re-exported)
    BASELINE_FILES,
    TRAINED,
    available_baselines,
    resolve_baseline,
)
from rlbench_suite.core.cards import WrapperRef
from rlbench_suite.core.wrapper_names import policy_wrappers
from rlbench_suite.policies.core import (
    POLICY_SCHEMES,
    POLICY_SPECS_TEXT,
    Policy,
    RandomPolicy,
    env_spaces,
    load_metadata,
)
from rlbench_suite.policies.module import ModulePolicy
from rlbench_suite.policies.onnx import OnnxPolicy
from rlbench_suite.policies.sb3 import SB3Policy


def artifact_of(spec: str) -> Path | None:
    """The file an ``sb3:``, ``onnx:`` or ``baseline:`` spec names (SB3's ``.zip`` added where
    SB3 would add it); None for other specs. The file need not exist."""
    scheme, sep, rest = spec.strip().partition(":")
    if scheme not in ("sb3", "onnx", "baseline") or not sep:
        return None
    if not rest:
        raise ValueError(
            f"policy spec {spec!r} names no {'NAME' if scheme == 'baseline' else 'PATH'}"
        )
    if scheme == "baseline":
        return resolve_baseline(rest)
    path = Path(rest).expanduser()
    zipped = path.with_name(path.name + ".zip")
    return zipped if scheme == "sb3" and not path.is_file() and zipped.is_file() else path


def _check_observation_shape(path: Path, expected: tuple, space: Any, env: Any) -> None:
    """A clear error when a model's input does not fit the environment it is to act in: the
    env its sidecar says it was trained on, where that is another, else how to record
    wrappers."""
    given = tuple(space.shape or ())
    if not all(isinstance(n, int) for n in expected) or expected == given:
        return
    message = (f"{path} expects observations of shape {expected} but the environment gives "
               f"{given} ({space})")  # fmt: skip
    metadata = load_metadata(path)
    trained_on = metadata.env_id if metadata is not None else None
    here = getattr(getattr(env, "spec", None), "id", None)
    if trained_on and here and trained_on != here:
        raise ValueError(f"{message}: it was trained on {trained_on} (its sidecar), not "
                         f"{here}; evaluate it there, or choose a policy of {here}")  # fmt: skip
    raise ValueError(f"{message}. A model trained through the suite's wrappers must record them "
                     "in its sidecar: save it with rlbench_suite.baselines.artifacts.save_policy "
                     "(docs/evaluation.md, 'Policies trained through wrappers')")  # fmt: skip


def declared_wrappers(source: Any) -> list[WrapperRef]:
    """The wrappers a policy acts through: from the sidecar of a spec's artifact, or from a
    policy object's identity; empty when none are recorded. Training-only wrappers are left
    out and one that would touch the score is refused (:func:`policy_wrappers`)."""
    if isinstance(source, str):
        path = artifact_of(source)
        metadata = load_metadata(path) if path is not None and path.is_file() else None
        return policy_wrappers(metadata.wrappers) if metadata else []
    identity = getattr(source, "identity", None)
    return policy_wrappers(getattr(identity, "wrappers", None) or [])


def make_policy(
    spec: str,
    env: Any = None,
    seed: int | None = None,
    *,
    deterministic: bool = True,
    algo: str | None = None,
    agent: str | None = None,
) -> Policy:
    """The policy named by a ``--policy`` string (see :data:`~rlbench_suite.policies.POLICY_SPECS`).

    The spec names *which* policy; how it acts is given by keyword: ``deterministic``
    (SB3, ONNX and baselines; usually the evaluation protocol's flag) and ``algo`` (SB3 only,
    overriding detection). ``env`` (a Gymnasium env, or a PettingZoo env with ``agent``)
    provides the spaces that ``random`` and ``module:`` classes need. ``seed``, if given,
    is passed to ``reset``. The policy's ``identity.spec`` is ``spec``.
    """
    text = spec.strip()
    scheme, sep, rest = text.partition(":")
    if algo is not None and scheme != "sb3":
        raise ValueError(f"algo= applies to 'sb3:PATH' specs only, got {spec!r}")
    policy: Any
    if text == "random":
        if env is None:
            raise ValueError("policy 'random' needs an env (for its action space)")
        _, action_space = env_spaces(env, agent)
        policy = RandomPolicy(copy.deepcopy(action_space), seed=seed)
    elif scheme in ("sb3", "onnx", "baseline") and sep:
        path = artifact_of(text)
        assert path is not None
        if not path.is_file():
            raise FileNotFoundError(f"policy file not found: {path} (from spec {spec!r})")
        if path.suffix == ".zip" if scheme == "baseline" else scheme == "sb3":
            policy = SB3Policy(path, deterministic=deterministic, algo=algo)
            expected = tuple(policy.model.observation_space.shape or ())
        else:
            space = env_spaces(env, agent)[1] if env is not None else None
            policy = OnnxPolicy(path, deterministic=deterministic, action_space=space)
            expected = policy.obs_shape
        if env is not None:
            _check_observation_shape(path, expected, env_spaces(env, agent)[0], env)
        if scheme == "baseline":
            policy.identity = policy.identity.model_copy(update={"kind": "baseline", "name": rest})
    elif sep and rest:
        target = rest if scheme == "module" else text
        try:
            policy = ModulePolicy(target, env, seed, agent=agent)
        except ValueError as exc:
            close = difflib.get_close_matches(scheme, POLICY_SCHEMES, n=1)
            hint = f"; did you mean '{close[0]}:'?" if close and scheme != "module" else ""
            raise ValueError(
                f"policy spec {spec!r}: {exc}; accepted: {POLICY_SPECS_TEXT}{hint}"
            ) from None
    else:
        close = difflib.get_close_matches(text, POLICY_SCHEMES, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"unknown policy spec {spec!r}; accepted: {POLICY_SPECS_TEXT}{hint}")
    policy.identity = policy.identity.model_copy(update={"spec": spec})
    if seed is not None:
        policy.reset(seed)
    return policy
