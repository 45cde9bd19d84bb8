"""Write the suite's dataset cards (``datasets/<EnvName>/<kind>.toml``) before their builds.

    .venv/bin/python scripts/dataset_cards.py            # write the missing cards
    rlbench datasets build ID --write                    # then build each and record hashes

"Medium" data is the expert acting with probability epsilon of a uniformly random action, the
epsilon chosen (by a short sweep) so the data scores about a third of the expert's normalized
score; "medium-expert" mixes medium and expert episodes half and half (D4RL's recipe).
Reference returns come from the env card where its primary metric is the return; otherwise
(QuadHover: success rate) they are measured here over the reference seeds.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import tomlkit

import rlbench_suite
from rlbench_suite.core.catalog import get_card
from rlbench_suite.core.dataset_cards import load_dataset_card
from rlbench_suite.core.seeds import DATASET_SEEDS, REFERENCE_EPISODES, REFERENCE_FIRST_SEED

ROOT = Path(__file__).resolve().parents[1] / "datasets"
# env id -> (expert policy, medium epsilon, episodes per dataset)
SOURCES = {
    "rlbench/CartPole-v1": ("baseline:CartPole-v1/ppo/seed-0", 0.4, 100),
    "rlbench/Acrobot-v1": ("baseline:Acrobot-v1/ppo/seed-0", 0.85, 100),
    "rlbench/Pendulum-v1": ("baseline:Pendulum-v1/sac/seed-0", 0.7, 100),
    "rlbench/InvertedPendulum-v5": ("baseline:InvertedPendulum-v5/ppo/seed-0", 0.07, 50),
    "rlbench/QuadHover-v0": ("module:rlbench_suite.envs.robotics.quad.experts:QuadPIDPolicy",
                             0.33, 50),
}  # fmt: skip
KINDS = ("random", "medium", "expert", "medium-expert")
SEED_BLOCK = 1_000_000
"""Each card's episodes use their own block of DATASET_SEEDS (card n: start + n * block)."""


def _references(env_id: str, expert: str) -> dict:
    card = get_card(env_id)
    if card.primary_metric == "return" and card.reference.random and card.reference.expert:
        return {k: getattr(card.reference, k).model_dump(exclude_none=True)
                for k in ("random", "expert")}
    from rlbench_suite.datasets.builder import measure_returns

    seeds = list(range(REFERENCE_FIRST_SEED, REFERENCE_FIRST_SEED + REFERENCE_EPISODES))
    out = {}
    for kind, policy in (("random", "random"), ("expert", expert)):
        returns = measure_returns(env_id, policy, seeds)
        out[kind] = {"value": round(float(returns.mean()), 6),
                     "std": round(float(returns.std()), 6), "policy": policy,
                     "episodes": len(seeds), "seeds": seeds,
                     "suite_version": rlbench_suite.__version__,
                     "measured": dt.date.today(),
                     "command": f"rlbench_suite.datasets.builder.measure_returns({env_id!r}, "
                                f"{policy!r}, seeds {seeds[0]}..{seeds[-1]})"}
    return out


def _policies(kind: str, expert: str, epsilon: float, episodes: int) -> list[dict]:
    medium = {"policy": expert, "episodes": episodes, "epsilon": epsilon}
    return {
        "random": [{"policy": "random", "episodes": episodes}],
        "medium": [medium],
        "expert": [{"policy": expert, "episodes": episodes}],
        "medium-expert": [{**medium, "episodes": episodes // 2},
                          {"policy": expert, "episodes": episodes - episodes // 2}],
    }[kind]


def main() -> None:
    block = 0
    for env_id, (expert, epsilon, episodes) in SOURCES.items():
        env_name = env_id.split("/")[1].rsplit("-v", 1)[0]
        references = None
        for kind in KINDS:
            block += 1
            dataset_id = f"rlbench/{env_name}-{kind}-v0"
            path = ROOT / env_name / f"{kind}.toml"
            if path.exists():
                continue
            references = references or _references(env_id, expert)
            doc = tomlkit.document()
            doc["id"] = dataset_id
            doc["env_id"] = env_id
            doc["kind"] = kind
            policies = _policies(kind, expert, epsilon, episodes)
            doc["description"] = (
                f"{kind.capitalize()} data of {env_id}: "
                + "; ".join(f"{p['episodes']} episodes of {p['policy']}"
                            + (f" taking a uniformly random action with probability "
                               f"{p['epsilon']}" if p.get("epsilon") else "")
                            for p in policies) + "."
            )  # fmt: skip
            doc["remotes"] = []
            source = tomlkit.table()
            source["policies"] = [tomlkit.inline_table() for _ in policies]
            for table, policy in zip(source["policies"], policies, strict=True):
                table.update(policy)
            doc["source"] = source
            doc["build"] = {"command": f"rlbench datasets build {dataset_id}",
                            "seed": DATASET_SEEDS.start + block * SEED_BLOCK}
            doc["reference"] = references
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(tomlkit.dumps(doc), encoding="utf-8")
            load_dataset_card(path)  # validates
            print(f"wrote {path}")


if __name__ == "__main__":
    main()
