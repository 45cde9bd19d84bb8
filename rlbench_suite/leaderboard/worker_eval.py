"""The verification worker's child process: evaluate one ONNX policy with the harness.

``python -m rlbench_suite.leaderboard.worker_eval POLICY.onnx ENV_ID OUT.json`` plays the
card's protocol through ``onnx:`` (onnxruntime only: no pickles, no submitter's Python) on
one worker and writes the Result. The parent sets its CPU, memory and wall-time limits.
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    policy, env_id, out = argv
    from rlbench_suite.evaluation import evaluate

    evaluate(env_id, f"onnx:{policy}", workers=1, out=out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
