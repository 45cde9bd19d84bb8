"""Policies: the :class:`Policy` protocol, policy identities and the policy adapters.

This package is the public import place; import every name from here. Its modules:

- :mod:`~rlbench_suite.policies.core`: the protocol, :class:`PolicyIdentity`, sidecar
  metadata (``<artifact>.meta.json``, format in that module's docstring), the random and
  callable adapters, and the policy and agent seeds;
- :mod:`~rlbench_suite.policies.sb3`: :class:`SB3Policy` and SB3 algorithm detection;
- :mod:`~rlbench_suite.policies.onnx`: :class:`OnnxPolicy` (the ONNX convention is in that
  module's docstring) and :func:`export_sb3_to_onnx`;
- :mod:`~rlbench_suite.policies.module`: :class:`ModulePolicy` (``module:attr`` targets);
- :mod:`~rlbench_suite.policies.joint`: :class:`JointPolicy` (one policy per agent);
- :mod:`~rlbench_suite.policies.language`: :class:`LanguageModelPolicy` (a language-model agent
  for the text games over a user-supplied ``generate(prompt) -> str``);
- :mod:`~rlbench_suite.policies.specs`: :func:`make_policy` and the baselines;
- :mod:`~rlbench_suite.policies.names`: :func:`display_names`, the short, distinct names
  every table and figure gives policies (``LABEL=SPEC`` labels, a spec's telling tail).

All but ``core`` and ``names`` are loaded lazily, on first use of one of their names, so
importing this package never imports torch, stable-baselines3 or onnxruntime.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from rlbench_suite.core.seeds import agent_seed, policy_seed
from rlbench_suite.policies.core import (
    POLICY_SCHEMES,
    POLICY_SPECS,
    POLICY_SPECS_TEXT,
    CallablePolicy,
    Policy,
    PolicyIdentity,
    PolicyKind,
    PolicyMetadata,
    PolicyMetadataError,
    RandomPolicy,
    as_policy,
    file_sha256,
    identity_of,
    load_metadata,
    metadata_path,
)
from rlbench_suite.policies.core import (
    Seed as Seed,
)
from rlbench_suite.policies.core import (
    artifact_identity as artifact_identity,
)
from rlbench_suite.policies.names import display_name, display_names, split_label

if TYPE_CHECKING:
    from rlbench_suite.policies.joint import JointPolicy
    from rlbench_suite.policies.language import LanguageModelPolicy
    from rlbench_suite.policies.module import ModulePolicy
    from rlbench_suite.policies.onnx import OnnxPolicy, export_sb3_to_onnx
    from rlbench_suite.policies.sb3 import SB3Policy
    from rlbench_suite.policies.specs import available_baselines, make_policy, resolve_baseline

__all__ = [
    "POLICY_SCHEMES",
    "POLICY_SPECS",
    "POLICY_SPECS_TEXT",
    "CallablePolicy",
    "JointPolicy",
    "LanguageModelPolicy",
    "ModulePolicy",
    "OnnxPolicy",
    "Policy",
    "PolicyIdentity",
    "PolicyKind",
    "PolicyMetadata",
    "PolicyMetadataError",
    "RandomPolicy",
    "SB3Policy",
    "agent_seed",
    "as_policy",
    "available_baselines",
    "display_name",
    "display_names",
    "export_sb3_to_onnx",
    "file_sha256",
    "identity_of",
    "load_metadata",
    "make_policy",
    "metadata_path",
    "policy_seed",
    "resolve_baseline",
    "split_label",
]

_LAZY = {
    "JointPolicy": "joint",
    "LanguageModelPolicy": "language",
    "ModulePolicy": "module",
    "OnnxPolicy": "onnx",
    "SB3Policy": "sb3",
    "available_baselines": "specs",
    "export_sb3_to_onnx": "onnx",
    "make_policy": "specs",
    "resolve_baseline": "specs",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is not None:
        return getattr(importlib.import_module(f"{__name__}.{module}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
