"""Score a trained cooperative policy beside partners other than the card's (zero-shot play).

    python scripts/partner_scores.py RUN_DIR [--episodes N] [--partner SPEC ...]
                                     [--fixed AGENT=SPEC ...]

RUN_DIR is an ``rlbench train`` run folder (``policy.onnx`` and ``run.json``). The policy
plays the card's ``agent`` on the card's evaluation seeds (the first N, default the
protocol's count) beside each partner: by default, for ``rlbench/Kitchen-v0``, the
``HELD_OUT_PARTNERS`` and ``TRAINING_PARTNERS`` of ``kitchen.agents``; and always beside
itself (``self-play``: every other agent is the same ONNX policy, except those given with
``--fixed``, e.g. PredatorPrey's scripted prey, as in training). Prints a table and writes
``partners.json`` into RUN_DIR. The card's own score stays ``result.json`` (the harness).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np

import rlbench_suite
from rlbench_suite.core.metrics import interval_estimates
from rlbench_suite.evaluation.episodes import play_episode
from rlbench_suite.policies import make_policy


def default_partners(env_id: str) -> dict[str, list[str]]:
    if env_id == "rlbench/Kitchen-v0":
        from rlbench_suite.envs.multiagent.kitchen.agents import zsc_partners

        return {"held_out": list(zsc_partners("held_out")), "train": list(zsc_partners("train"))}
    return {}


def score(card, policy_spec: str, partner, seeds: list[int]) -> dict:
    """Mean return and success of ``policy_spec`` as the card's agent beside ``partner`` (a
    ``--policy`` string for every other agent, or a dict of them by agent)."""
    env = gym.make(card.id, opponents=partner)
    policy = make_policy(policy_spec, env)
    try:
        records = [play_episode(env, policy, s, i) for i, s in enumerate(seeds)]
    finally:
        env.close()
    returns = np.array([r.r for r in records])
    mean = interval_estimates(returns, "mean", reps=1000, random_state=0)["mean"]
    successes = [r.success for r in records if r.success is not None]
    return {
        "partner": partner if isinstance(partner, str) else "self-play",
        "episodes": len(records),
        "mean_return": round(float(mean.point), 3),
        "ci": [round(float(mean.low), 3), round(float(mean.high), 3)],
        "success_rate": float(np.mean(successes)) if successes else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--episodes", type=int, default=None)
    parser.add_argument("--partner", action="append", default=[])
    parser.add_argument("--fixed", action="append", default=[], metavar="AGENT=SPEC")
    args = parser.parse_args(argv)
    run = json.loads((args.run_dir / "run.json").read_text())
    card = rlbench_suite.get_card(run["env_id"])
    spec = f"onnx:{args.run_dir / 'policy.onnx'}"
    count = args.episodes or card.evaluation.episodes
    seeds = card.evaluation.seeds[:count]
    groups = {"given": args.partner} if args.partner else default_partners(card.id)
    game = rlbench_suite.make_multiagent(card.id, "parallel")
    itself = {a: spec for a in game.possible_agents if a != card.agent}
    game.close()
    itself.update(dict(f.split("=", 1) for f in args.fixed))
    groups["self_play"] = [itself]
    report = {"env_id": card.id, "policy": spec, "seeds": [seeds[0], seeds[-1]], "groups": {}}
    for group, partners in groups.items():
        rows = [score(card, spec, p, seeds) for p in partners]
        report["groups"][group] = rows
        for row in rows:
            name = row["partner"].rsplit(":", 1)[-1] if group != "self_play" else "itself"
            print(f"{group:10s} {name:12s} return {row['mean_return']:8.2f} "
                  f"{row['ci']}  success {row['success_rate']}")  # fmt: skip
        if rows:
            mean = float(np.mean([r["mean_return"] for r in rows]))
            report["groups"][group + "_mean_return"] = round(mean, 3)
    (args.run_dir / "partners.json").write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
