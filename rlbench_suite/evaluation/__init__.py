"""The evaluation harness: protocols, runners, metrics, results.

``evaluate(env_id, policy, protocol)`` plays a protocol's seeded episodes (in this
process, on a local process pool, or on Ray) and returns a :class:`Result` with per-episode
data, aggregates with confidence intervals, the policy's identity and the run's provenance.
Importing this package imports no simulator.
"""

from rlbench_suite.evaluation.protocol import EvalProtocol, SeedOverlapError, default_protocol
from rlbench_suite.evaluation.result import EpisodeRecord, Result, ResultError, load_result
from rlbench_suite.evaluation.runner import evaluate

__all__ = [
    "EpisodeRecord",
    "EvalProtocol",
    "Result",
    "ResultError",
    "SeedOverlapError",
    "default_protocol",
    "evaluate",
    "load_result",
]
