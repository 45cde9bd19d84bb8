"""QuadHover's committed offline policies flown on both backends: PyBullet (``gym.make``, where
``rlbench eval`` and the committed results score them) and the batched NumPy backend
(``gym.make_vec``, where ``fast_ppo`` trains and the medium-replay data was recorded).

    python scripts/quad_backend_gap.py medium-replay medium expert

Each policy ``baselines/policies/QuadHover-<kind>-v0/<algo>/seed-<n>`` plays its result's own
evaluation seeds (``baselines/results/.../result.json``: the same seeds, deterministic) on the
NumPy backend, one vector env of one drone per seed; the script prints its mean normalized
score beside the committed PyBullet one and the mean episode lengths. Nothing is written.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import gymnasium as gym
import numpy as np

import rlbench_suite  # noqa: F401  (registers the ids)
from rlbench_suite.core.dataset_cards import get_dataset_card
from rlbench_suite.policies.onnx import OnnxPolicy

BASELINES = Path(__file__).resolve().parents[1] / "baselines"
ALGOS = ("bc", "td3bc", "iql", "cql")


def fly_numpy(policy: OnnxPolicy, seeds: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Returns and lengths of ``policy`` over ``seeds`` on the batched NumPy backend."""
    env = gym.make_vec("rlbench/QuadHover-v0", num_envs=len(seeds))
    obs, _ = env.reset(seed=seeds)
    returns, lengths = np.zeros(len(seeds)), np.zeros(len(seeds), dtype=int)
    done = np.zeros(len(seeds), dtype=bool)
    while not done.all():  # the vector env resets finished drones; their steps are not counted
        action = policy.session.run(None, {"obs": obs.astype(np.float32)})[0]
        obs, reward, terminated, truncated, _ = env.step(action)
        returns += np.where(done, 0.0, reward)
        lengths += ~done
        done |= terminated | truncated
    env.close()
    return returns, lengths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kinds", nargs="+", help="dataset kinds, e.g. medium-replay medium")
    args = parser.parse_args()
    print("| data | algorithm | PyBullet (committed) | NumPy backend "
          "| mean length PyBullet / NumPy |")
    print("| --- | --- | --- | --- | --- |")
    for kind in args.kinds:
        card = get_dataset_card(f"rlbench/QuadHover-{kind}-v0")
        name = f"QuadHover-{kind}-v0"
        for algo in ALGOS:
            pybullet, numpy_scores, length_pb, length_np = [], [], [], []
            for run in sorted((BASELINES / "results" / name / algo).glob("seed-*")):
                result = json.loads((run / "result.json").read_text())
                policy = OnnxPolicy(BASELINES / "policies" / name / algo / run.name / "policy.onnx")
                returns, lengths = fly_numpy(policy, result["protocol"]["seeds"])
                pybullet.append(result["normalized_score"]["point"])
                numpy_scores.append(float(np.mean(card.normalized_score(returns))))
                length_pb.append(np.mean(result["lengths"]))
                length_np.append(lengths.mean())
            print(f"| {kind} | {algo} | {np.mean(pybullet):.1f} | {np.mean(numpy_scores):.1f} | "
                  f"{np.mean(length_pb):.0f} / {np.mean(length_np):.0f} |", flush=True)


if __name__ == "__main__":
    main()
