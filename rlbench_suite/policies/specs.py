"""``--policy`` strings: :func:`make_policy`, and the baselines they can name."""

from __future__ import annotations

import copy
import difflib
from pathlib import Path
from typing import Any

from rlbench_suite.core.cards import WrapperRef
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
from rlbench_suite.resources import content_dir

BASELINE_FILES = ("policy.onnx", "policy.zip")
TRAINED = "policies"
"""Trained baselines live in ``baselines/policies/<env-name>/<algo>/seed-<S>/`` (as
``rlbench train`` writes a run) and are named ``<env-name>/<algo>/seed-<S>``."""


def available_baselines() -> list[str]:
    """Names of the baselines in the content: ``NAME`` for ``baselines/NAME/policy.{onnx,zip}``,
    ``<env-name>/<algo>/seed-<S>`` for the trained ones under ``baselines/policies/``."""
    try:
        root = content_dir("baselines")
    except FileNotFoundError:
        return []
    found = {
        p.parent.relative_to(root).as_posix().removeprefix(f"{TRAINED}/")
        for name in BASELINE_FILES
        for p in root.rglob(name)
        if p.is_file() and p.parent != root
    }
    return sorted(found)


def _baseline_folders(root: Path, name: str) -> list[Path]:
    """Where baseline ``name`` may be: ``root/name``, the trained ``root/policies/name``, and
    for ``<env-name>/<algo>`` its seeds' folders, lowest seed first."""
    trained = root / TRAINED / name
    seeds = sorted(
        (p for p in trained.glob("seed-*") if p.name.removeprefix("seed-").isdigit()),
        key=lambda p: int(p.name.removeprefix("seed-")),
    )
    return [root / name, trained, *seeds]


def resolve_baseline(name: str) -> Path:
    """The artifact of baseline ``name``: ``baselines/<name>/policy.onnx``, else ``policy.zip``.

    ``name`` may have ``/`` (``ppo/CartPole-v1``). Trained baselines are
    ``<env-name>/<algo>/seed-<S>`` (``baselines/policies/<env-name>/<algo>/seed-<S>/``), or
    ``<env-name>/<algo>`` for the lowest seed there. The ONNX file is preferred: it runs
    without executing code. Its sidecar is ``policy.onnx.meta.json`` (or ``.zip.meta.json``).
    """
    parts = Path(name).parts
    if not name or Path(name).is_absolute() or ".." in parts:
        raise ValueError(f"invalid baseline name {name!r}: expected a relative name like 'ppo-x'")
    try:
        folders = _baseline_folders(content_dir("baselines"), name)
    except FileNotFoundError:
        folders = []
    for folder in folders:
        for file in BASELINE_FILES:
            if (folder / file).is_file():
                return folder / file
    known = available_baselines()
    close = difflib.get_close_matches(name, known, n=3)
    raise ValueError(
        f"unknown baseline {name!r}; available: {_grouped(known) or 'none yet'}"
        + (f"; did you mean: {', '.join(close)}" if close else "")
    )


def _grouped(names: list[str]) -> str:
    """Baseline names with their seeds gathered: ``CartPole-v1/ppo/seed-{0,1,2}``."""
    seeds: dict[str, list[str]] = {}
    for name in names:
        base, sep, seed = name.rpartition("/seed-")
        seeds.setdefault(base if sep else name, []).append(seed if sep else "")
    return ", ".join(
        f"{base}/seed-{{{','.join(found)}}}" if any(found) else base
        for base, found in seeds.items()
    )


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


def _check_observation_shape(path: Path, expected: tuple, space: Any) -> None:
    """A clear error when a model's input does not fit the environment it is to act in."""
    given = tuple(space.shape or ())
    if all(isinstance(n, int) for n in expected) and expected != given:
        raise ValueError(
            f"{path} expects observations of shape {expected} but the environment gives "
            f"{given} ({space}). A model trained through the suite's wrappers must record them "
            "in its sidecar: save it with rlbench_suite.baselines.artifacts.save_policy "
            "(docs/evaluation.md, 'Policies trained through wrappers')"
        )


def declared_wrappers(source: Any) -> list[WrapperRef]:
    """The wrappers a policy acts through: from the sidecar of a spec's artifact, or from a
    policy object's identity; empty when none are recorded."""
    if isinstance(source, str):
        path = artifact_of(source)
        metadata = load_metadata(path) if path is not None and path.is_file() else None
        return list(metadata.wrappers) if metadata else []
    identity = getattr(source, "identity", None)
    return list(getattr(identity, "wrappers", None) or [])


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
            _check_observation_shape(path, expected, env_spaces(env, agent)[0])
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
