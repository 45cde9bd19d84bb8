"""``--policy`` strings: :func:`make_policy`, and the baselines they can name."""

from __future__ import annotations

import copy
import difflib
from pathlib import Path
from typing import Any

from rlbench_suite.policies.core import Policy, RandomPolicy, env_spaces
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
        f"unknown baseline {name!r}; available: {', '.join(known) or 'none yet'}"
        + (f"; did you mean: {', '.join(close)}" if close else "")
    )


POLICY_SPECS = (
    "random",
    "sb3:PATH",
    "onnx:PATH",
    "module:package.module:attr (or package.module:attr)",
    "baseline:NAME",
)
"""The accepted ``--policy`` strings."""

_SCHEMES = ("random", "sb3", "onnx", "module", "baseline")


def make_policy(
    spec: str,
    env: Any = None,
    seed: int | None = None,
    *,
    deterministic: bool = True,
    algo: str | None = None,
    agent: str | None = None,
) -> Policy:
    """The policy named by a ``--policy`` string (see :data:`POLICY_SPECS`).

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
    accepted = ", ".join(POLICY_SPECS)
    policy: Any
    if text == "random":
        if env is None:
            raise ValueError("policy 'random' needs an env (for its action space)")
        _, action_space = env_spaces(env, agent)
        policy = RandomPolicy(copy.deepcopy(action_space), seed=seed)
    elif scheme in ("sb3", "onnx", "baseline") and sep:
        if not rest:
            raise ValueError(
                f"policy spec {spec!r} names no {'NAME' if scheme == 'baseline' else 'PATH'}"
            )
        kind = scheme
        path = Path(rest).expanduser() if scheme != "baseline" else resolve_baseline(rest)
        if kind == "baseline":
            kind = "sb3" if path.suffix == ".zip" else "onnx"
        if kind == "sb3":
            if not path.is_file() and not path.with_name(path.name + ".zip").is_file():
                raise FileNotFoundError(f"policy file not found: {path} (from spec {spec!r})")
            policy = SB3Policy(path, deterministic=deterministic, algo=algo)
        else:
            if not path.is_file():
                raise FileNotFoundError(f"policy file not found: {path} (from spec {spec!r})")
            space = env_spaces(env, agent)[1] if env is not None else None
            policy = OnnxPolicy(path, deterministic=deterministic, action_space=space)
        if scheme == "baseline":
            policy.identity = policy.identity.model_copy(update={"kind": "baseline", "name": rest})
    elif sep and rest:
        target = rest if scheme == "module" else text
        try:
            policy = ModulePolicy(target, env, seed, agent=agent)
        except ValueError as exc:
            close = difflib.get_close_matches(scheme, _SCHEMES, n=1)
            hint = f"; did you mean '{close[0]}:'?" if close and scheme != "module" else ""
            raise ValueError(f"policy spec {spec!r}: {exc}; accepted: {accepted}{hint}") from None
    else:
        close = difflib.get_close_matches(text, _SCHEMES, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"unknown policy spec {spec!r}; accepted: {accepted}{hint}")
    policy.identity = policy.identity.model_copy(update={"spec": spec})
    if seed is not None:
        policy.reset(seed)
    return policy
