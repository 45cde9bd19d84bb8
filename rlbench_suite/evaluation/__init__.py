"""The evaluation harness: runners, episode logs, analysis.

``evaluate(env, policy, protocol)`` plays a protocol's seeded episodes (in this process, on
a local process pool, or on Ray) and returns a :class:`Result` with per-episode data,
aggregates with confidence intervals, the policy's identity and the run's provenance. The
contracts it produces (protocol, result, scoring, statistics) live in
:mod:`rlbench_suite.core`; they are re-exported here for convenience. Importing this package
imports no simulator, and the harness itself (gymnasium, the policies) only on first use of
``evaluate``, ``default_protocol`` or ``EvaluationError``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from rlbench_suite.core.protocol import EvalProtocol, SeedOverlapError
from rlbench_suite.core.result import EpisodeRecord, Result, ResultError, load_result

if TYPE_CHECKING:
    from rlbench_suite.evaluation.protocols import default_protocol
    from rlbench_suite.evaluation.runner import evaluate
    from rlbench_suite.evaluation.workers import EvaluationError

__all__ = [
    "EpisodeRecord",
    "EvalProtocol",
    "EvaluationError",
    "Result",
    "ResultError",
    "SeedOverlapError",
    "default_protocol",
    "evaluate",
    "load_result",
]

_LAZY = {"default_protocol": "protocols", "evaluate": "runner", "EvaluationError": "workers"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is not None:
        return getattr(importlib.import_module(f"{__name__}.{module}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
