"""Write the suite's dataset cards (``datasets/<EnvName>/<kind>.toml``) before their builds.

    .venv/bin/python scripts/dataset_cards.py [ENV_ID...]  # write the missing cards (of those)
    rlbench datasets build ID --write                    # then build each and record hashes

"Medium" data is the expert acting with probability epsilon of a uniformly random action, the
epsilon chosen (by a short sweep) so the data scores about a third of the expert's normalized
score; where behaviour cloning undoes that mix (:data:`CHECKPOINTS`: the cloned expert-plus-
noise policy scores about as the expert), it is D4RL's medium instead: a policy trained partway,
acting with its own exploration noise (:func:`checkpoint_policy`). "medium-expert" mixes medium
and expert episodes half and half (D4RL's recipe); an expert of :data:`EXPERT_NOISE` acts with
Gaussian action noise in every kind, as D4RL's stochastic experts do.
"Medium-replay" is every episode a training run collected from scratch until its policy reached
the medium level (D4RL's recipe; :data:`REPLAY`, ``rlbench_suite.datasets.replay``): the budget
planned is the zoo run's (``baselines/zoo.yaml``; its schedules depend on it) and the run stops at
the first step (after 0) at which that run's learning curve (same algorithm and seed),
``baselines/results/<Env>/<algo>/seed-<S>/curve.csv``, reaches the medium card's mean return.
A run with no zoo run of its own (:data:`PILOTS`: CoopNav's joint data comes from parameter
sharing, every agent the shared policy, while its zoo run trains agent_0 among scripted
partners) is first run once as a pilot with every game recorded (:func:`pilot_curve`); its
curve, the mean return of the episodes each rollout collected, is committed beside the card
and read the same way, so the stop is the end of the first rollout whose data reaches medium.
Reference returns come from the env card where its primary metric is the return; otherwise
(QuadHover: success rate) or the data is joint (CoopNav: every agent's, the return the
agents' mean) they are measured here over the reference seeds.

On a Text action space (TextAdventureEasy) a uniformly random string is almost never a
command, so "random" (the data and the reference) is RandomAdmissible, a uniform pick among
``info["admissible_commands"]``, and so are medium's epsilon steps (the builder's rule).
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path

import tomlkit

import rlbench_suite
from rlbench_suite.core.catalog import get_card
from rlbench_suite.core.dataset_cards import load_dataset_card
from rlbench_suite.core.seeds import DATASET_SEEDS, REFERENCE_EPISODES, REFERENCE_FIRST_SEED
from rlbench_suite.datasets.builder import TEXT_RANDOM_POLICY
from rlbench_suite.datasets.joint import is_joint

EPS_TEXT = 0.97
EPS_COOP = 0.83
ROOT = Path(__file__).resolve().parents[1] / "datasets"
# env id -> (expert policy, medium epsilon, episodes per dataset)
SOURCES = {
    "rlbench/CartPole-v1": ("baseline:CartPole-v1/ppo/seed-0", 0.4, 100),
    "rlbench/Acrobot-v1": ("baseline:Acrobot-v1/ppo/seed-0", 0.85, 100),
    "rlbench/Pendulum-v1": ("baseline:Pendulum-v1/sac/seed-0", 0.7, 100),
    "rlbench/InvertedPendulum-v5": ("baseline:InvertedPendulum-v5/ppo/seed-0", 0.07, 50),
    "rlbench/QuadHover-v0": ("module:rlbench_suite.envs.robotics.quad.experts:QuadPIDPolicy",
                             0.33, 50),
    "rlbench/MiniGrid-DoorKey-5x5-v0": ("baseline:MiniGrid-DoorKey-5x5-v0/ppo/seed-2", 0.9, 100),
    "rlbench/TextAdventureEasy-v0": (
        "module:rlbench_suite.envs.text.adventure.experts:TextAdventureExpert", EPS_TEXT, 200),
    "rlbench/ArmPush-v0": ("module:rlbench_suite.envs.robotics.arm.experts:ArmPushScripted",
                           0.6, 200),
    "rlbench/CoopNav-v0": ("module:rlbench_suite.envs.multiagent.coop_nav.agents:GreedyLandmarks",
                           EPS_COOP, 200),
    "rlbench/Ant-v5": ("baseline:Ant-v5/fast_ppo/seed-0", 0.3, 50),
    "rlbench/Swimmer-v5": ("baseline:Swimmer-v5/fast_ppo/seed-0", 0.875, 50),
    "rlbench/Hopper-v5": ("baseline:Hopper-v5/fast_ppo/seed-0", 0.17, 50),
}  # fmt: skip
NOTES = {
    "rlbench/ArmPush-v0": "Train split only: gym.make('rlbench/ArmPush-v0') with no kwargs "
                          "samples train variations (split='train' is the env's default; the "
                          "test split's block and goal cells never appear in this data).",
    "rlbench/CoopNav-v0": "Joint data of the Parallel env (3 agents): every agent's observation, "
                          "action and reward per step (a group per agent); every agent plays "
                          "the policy, epsilon applies to each agent's action on its own; the "
                          "return is the mean over agents, and the references are measured so "
                          "(a random team, the scripted team), not the card's agent_0 ones.",
}  # fmt: skip
"""Said in a card's description and ``source.notes`` (how the env was configured)."""
CHECKPOINTS = {"rlbench/QuadHover-v0": ("fast_ppo", 0, True),
               "rlbench/Ant-v5": ("fast_ppo", 0, False)}
"""env id -> (algo, seed, noisy) of the zoo run whose policy partway is the medium policy
(:func:`checkpoint_policy`), acting with its own exploration noise where ``noisy``: where the
expert with epsilon-random actions was cloned back to nearly the expert (QuadHover: BC 77 on
data at 31 normalized; Ant: BC 104 on data at 33), above TD3+BC and IQL. Ant's policy plays
deterministically: with its own noise (std about 0.3 a dimension) it fell after about 400
steps, data at 10.6 normalized, not medium."""
EXPERT_NOISE = {"rlbench/QuadHover-v0": 0.2}
"""env id -> the std of the Gaussian noise the expert acts with in the data (a scripted expert
with no noise of its own): QuadHover's PID, noise-free, gave data so narrow that every offline
algorithm crashed (0.3 to 6.9 normalized); with std 0.2 its data scores about 85."""
CHECKPOINT_ROOT = ROOT.parent / "baselines" / "checkpoints"
RANDOM_EPISODES = {"rlbench/Ant-v5": 400, "rlbench/Hopper-v5": 2500}
"""Random data's episodes where random episodes end far sooner than the expert's (Ant's in about
130 steps, Hopper's in about 20): enough for about as many steps as the expert data."""
RANDOM = {"rlbench/TextAdventureEasy-v0": TEXT_RANDOM_POLICY}
"""The "random" policy where a uniform action sample is useless (module doc)."""
KINDS = ("random", "medium", "expert", "medium-expert")
SEED_BLOCK = 1_000_000
REPLAY = {
    "rlbench/CartPole-v1": ("ppo", 0, 8),
    "rlbench/Acrobot-v1": ("ppo", 0, 16),
    "rlbench/Pendulum-v1": ("sac", 0, 1),
    "rlbench/InvertedPendulum-v5": ("ppo", 0, 1),
    "rlbench/QuadHover-v0": ("fast_ppo", 0, 32),
    "rlbench/MiniGrid-DoorKey-5x5-v0": ("ppo", 0, 8),
    "rlbench/TextAdventureEasy-v0": ("maskable_ppo", 0, 4),
    "rlbench/Ant-v5": ("fast_ppo", 0, 1),
    "rlbench/Hopper-v5": ("fast_ppo", 0, 8),
    "rlbench/Swimmer-v5": ("fast_ppo", 0, 8),
    "rlbench/ArmPush-v0": ("ppo", 0, 8),
    "rlbench/CoopNav-v0": ("shared_ppo", 0, 4),
}  # fmt: skip
"""env id -> (algo, seed, recorded envs) of the medium-replay training run (module doc): the
zoo's runs (all their envs where that stays small; QuadHover's fast_ppo steps 2048 at once;
ArmPush's on its train split, as the zoo trains it); CoopNav's a pilot's (:data:`PILOTS`), 4
of its 64 games (about 7 MB a game); Ant's run reaches medium after about a million steps, so
one of its 8 envs (about 30 MB)."""
PILOTS = {"rlbench/CoopNav-v0": 8_000_000}
"""env id -> the planned budget of a medium-replay run with no zoo run to read the stop from
(module doc). CoopNav's shared_ppo entry plans 2M steps, where the team's data is still at
about -24 (the medium data: -20.4); its learning rate is constant, so the budget planned
changes nothing before the stop."""
REPLAY_NOTES = {
    "rlbench/QuadHover-v0": "fast_ppo trains on the card's batched NumPy backend "
                            "(QuadHoverVectorEnv), so this data is what that backend emitted, "
                            "not PyBullet (same spaces; the other QuadHover kinds are PyBullet).",
    "rlbench/CoopNav-v0": "Joint data of the Parallel env (3 agents), as the other CoopNav "
                          "kinds: every agent's observation, action and reward per step (a "
                          "group per agent), the return the mean over agents and the "
                          "references the team's. The run is parameter sharing on the card's "
                          "batched backend (CoopNavVectorEnv, the same games as the Parallel "
                          "env: slot g * 3 + i is agent_i of game g), every agent the shared "
                          "policy: the team learning together. Game g is first reset with "
                          "seed + g, later by autoreset; stop counts agent steps (192 a "
                          "cycle of the 64 games).",
    "rlbench/TextAdventureEasy-v0": "Recorded under the training wrappers (AdmissibleActions-v1, "
                                    "HashedBagOfWords-v0): observations and commands as strings, "
                                    "as the env emitted and received them.",
}  # fmt: skip
"""Said in a medium-replay card's description and ``source.notes``."""
RESULTS = ROOT.parent / "baselines" / "results"
"""Each card's episodes use their own block of DATASET_SEEDS (card n: start + n * block)."""


def _references(env_id: str, expert: str, random: str) -> dict:
    card = get_card(env_id)
    joint = is_joint(env_id)  # joint data: team references, measured
    if not joint and card.primary_metric == "return" and card.reference.random \
            and card.reference.expert:
        return {k: getattr(card.reference, k).model_dump(exclude_none=True)
                for k in ("random", "expert")}
    from rlbench_suite.datasets.builder import measure_returns

    seeds = list(range(REFERENCE_FIRST_SEED, REFERENCE_FIRST_SEED + REFERENCE_EPISODES))
    out = {}
    for kind, policy in (("random", random), ("expert", expert)):
        returns = measure_returns(env_id, policy, seeds)
        out[kind] = {"value": round(float(returns.mean()), 6),
                     "std": round(float(returns.std()), 6), "policy": policy,
                     "episodes": len(seeds), "seeds": seeds,
                     "suite_version": rlbench_suite.__version__,
                     "measured": dt.date.today(),
                     "command": f"rlbench_suite.datasets.builder.measure_returns({env_id!r}, "
                                f"{policy!r}, seeds {seeds[0]}..{seeds[-1]})"}
    return out


def _policies(env_id: str, kind: str, expert: str, epsilon: float, episodes: int,
              random: str, random_episodes: int) -> list[dict]:  # fmt: skip
    noisy = {"noise_std": EXPERT_NOISE[env_id]} if env_id in EXPERT_NOISE else {}
    medium = {"policy": expert, "episodes": episodes, "epsilon": epsilon, **noisy}
    if env_id in CHECKPOINTS:
        name, std = checkpoint_policy(env_id)
        medium = {"policy": f"baseline:{name}", "episodes": episodes}
        if CHECKPOINTS[env_id][2]:
            medium["noise_std"] = std
    return {
        "random": [{"policy": random, "episodes": random_episodes}],
        "medium": [medium],
        "expert": [{"policy": expert, "episodes": episodes, **noisy}],
        "medium-expert": [{**medium, "episodes": episodes // 2},
                          {"policy": expert, "episodes": episodes - episodes // 2, **noisy}],
    }[kind]


def _describe(policy: dict, explore: str) -> str:
    """One source policy in a card's description."""
    text = f"{policy['episodes']} episodes of {policy['policy']}"
    if policy.get("noise_std"):
        std = policy["noise_std"]
        text += (" acting with Gaussian action noise of std "
                 + (f"{std:g}" if isinstance(std, float) else f"{[round(v, 3) for v in std]}"
                    + " (its own, from training)"))  # fmt: skip
    if policy.get("epsilon"):
        text += f" taking {explore} with probability {policy['epsilon']}"
    return text


def checkpoint_policy(env_id: str) -> tuple[str, list[float]]:
    """The medium policy of ``env_id`` (:data:`CHECKPOINTS`): ``(baseline name, its own action
    std)``, made on the first call. The zoo run (same algorithm, seed and planned budget) is
    repeated from scratch to where its committed learning curve first reaches a third of the
    expert's normalized score (the medium card's references); of the policies at that curve
    point and the one before (:func:`crossing_candidates`), the one whose mean return over
    :data:`CANDIDATE_EPISODES` evaluation episodes is nearer the level is kept (a curve point
    is 5 episodes: Ant's 1208.6 was 871.9 over 20). It is exported to
    ``baselines/checkpoints/<Env>/<algo>/seed-<S>/step-<N>/`` (ONNX, its deterministic action,
    and a sidecar with the run, the stop, both candidates' returns, the CPU and fast_ppo's
    ``exp(log_std)``, the noise a card may play it with). Training repeats bit for bit only on
    a CPU like the one it ran on; the committed ONNX is what the card names, and its rollouts
    rebuild anywhere."""
    from rlbench_suite.core.baseline_files import resolve_baseline

    algo, seed, _ = CHECKPOINTS[env_id]
    if algo != "fast_ppo":
        raise SystemExit(f"{env_id}: checkpoint policies are fast_ppo's (its std is one per "
                         f"dimension, not the observation's), not {algo}'s")  # fmt: skip
    env_file = env_id.split("/")[1]
    existing = sorted((CHECKPOINT_ROOT / env_file / algo / f"seed-{seed}").glob("step-*"))
    if existing:
        name = existing[0].relative_to(ROOT.parent / "baselines").as_posix()
        meta = json.loads((resolve_baseline(name).parent / "policy.onnx.meta.json").read_text())
        return name, meta["extra"]["action_std"]
    return _train_checkpoint(env_id, algo, seed)


CANDIDATE_EPISODES = 20
"""Evaluation episodes (the env card's first evaluation seeds) a candidate medium policy is
measured over."""


def _train_checkpoint(env_id: str, algo: str, seed: int) -> tuple[str, list[float]]:
    import copy
    import tempfile

    from rlbench_suite.baselines import fast_ppo
    from rlbench_suite.core.provenance import cpu_platform
    from rlbench_suite.datasets.builder import measure_returns
    from rlbench_suite.datasets.replay import record_training
    from rlbench_suite.policies.core import PolicyMetadata, write_metadata

    env_name = env_id.split("/")[1].rsplit("-v", 1)[0]
    references = _references(env_id, SOURCES[env_id][0], RANDOM.get(env_id, "random"))
    random, expert = references["random"]["value"], references["expert"]["value"]
    level = random + (expert - random) / 3
    curve = RESULTS / env_id.split("/")[1] / algo / f"seed-{seed}" / "curve.csv"
    run = json.loads((curve.parent / "run.json").read_text(encoding="utf-8"))
    candidates = crossing_candidates(curve, level)
    stop = candidates[-1][0]
    training = {"algo": algo, "hyperparams": env_id, "seed": seed, "budget": run["budget"],
                "stop": stop, "recorded_envs": 1}  # fmt: skip
    agents = {}

    def keep(steps: int, agent) -> None:
        if any(steps == step for step, _ in candidates):
            agents[steps] = copy.deepcopy(agent)

    record_training(_run_card(references, env_id, training),
                    on_model=keep)  # fmt: skip
    seeds = list(get_card(env_id).evaluation.seeds[:CANDIDATE_EPISODES])
    measured = []
    with tempfile.TemporaryDirectory() as tmp:
        for step, reached in candidates:
            onnx = fast_ppo.export_onnx(agents[step], Path(tmp) / f"step-{step}.onnx")
            returns = measure_returns(env_id, f"onnx:{onnx}", seeds)
            measured.append({"step": step, "curve_return": round(reached, 6),
                             "measured_return": round(float(returns.mean()), 6)})  # fmt: skip
            print(f"candidate {step}: curve {reached:g}, {len(seeds)} episodes "
                  f"{returns.mean():g} (level {level:g})")
    chosen = min(measured, key=lambda c: (abs(c["measured_return"] - level), c["step"]))
    step, agent = chosen["step"], agents[chosen["step"]]
    std = [round(float(v), 6) for v in agent.log_std.detach().exp()]
    name = f"checkpoints/{env_id.split('/')[1]}/{algo}/seed-{seed}/step-{step}"
    path = ROOT.parent / "baselines" / name / "policy.onnx"
    path.parent.mkdir(parents=True, exist_ok=True)
    fast_ppo.export_onnx(agent, path)
    command = (f"rlbench train {env_id} --algo {algo} --seed {seed} --budget {run['budget']}, "
               f"stopped after the update that reaches step {step}")  # fmt: skip
    write_metadata(path, PolicyMetadata(
        name=f"{algo}-{env_name}-seed-{seed}-step-{step}", algo=algo, env_id=env_id,
        train_seeds=run["train_seeds"], training_budget_steps=step,
        extra={"run": command, "planned_budget": run["budget"], "stop": step,
               "curve": curve.relative_to(ROOT.parent).as_posix(),
               "medium_level": round(level, 6), "candidates": measured,
               "measured_episodes": len(seeds), "action_std": std, "cpu": cpu_platform()},
    ))  # fmt: skip
    print(f"wrote {path} (of {[c['step'] for c in measured]}, the nearer the medium level "
          f"{level:g}; action std {std})")
    return name, std


def main(only: list[str]) -> None:
    unknown = sorted(set(only) - set(SOURCES))
    if unknown:
        raise SystemExit(f"unknown env ids {unknown}; accepted: {', '.join(SOURCES)}")
    block = 0
    for env_id, (expert, epsilon, episodes) in SOURCES.items():
        if only and env_id not in only:
            block += len(KINDS)
            continue
        env_name = env_id.split("/")[1].rsplit("-v", 1)[0]
        references = None
        for kind in KINDS:
            block += 1
            dataset_id = f"rlbench/{env_name}-{kind}-v0"
            path = ROOT / env_name / f"{kind}.toml"
            if path.exists():
                continue
            random = RANDOM.get(env_id, "random")
            explore = (
                "a uniformly random action"
                if random == "random"
                else "a uniform pick among info['admissible_commands'] (RandomAdmissible)"
            )
            references = references or _references(env_id, expert, random)
            doc = tomlkit.document()
            doc["id"] = dataset_id
            doc["env_id"] = env_id
            doc["kind"] = kind
            policies = _policies(env_id, kind, expert, epsilon, episodes, random,
                                 RANDOM_EPISODES.get(env_id, episodes))
            doc["description"] = (f"{kind.capitalize()} data of {env_id}: "
                                  + "; ".join(_describe(p, explore) for p in policies) + ".")
            if env_id in NOTES:
                doc["description"] += " " + NOTES[env_id]
            doc["remotes"] = []
            source = tomlkit.table()
            source["policies"] = [tomlkit.inline_table() for _ in policies]
            for table, policy in zip(source["policies"], policies, strict=True):
                table.update(policy)
            if env_id in NOTES:
                source["notes"] = NOTES[env_id]
            doc["source"] = source
            doc["build"] = {"command": f"rlbench datasets build {dataset_id}",
                            "seed": DATASET_SEEDS.start + block * SEED_BLOCK}
            doc["reference"] = references
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(tomlkit.dumps(doc), encoding="utf-8")
            load_dataset_card(path)  # validates
            print(f"wrote {path}")


def replay_budget(curve: Path, level: float) -> tuple[int, float]:
    """``(step, mean return)`` of the first row of ``curve`` after step 0 whose mean return
    reaches ``level`` (step 0 is the untrained policy: nothing collected yet)."""
    import csv

    with curve.open(encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if int(row["step"]) > 0 and float(row["mean_return"]) >= level:
                return int(row["step"]), float(row["mean_return"])
    raise SystemExit(f"{curve} never reaches the medium level {level}")


def crossing_candidates(curve: Path, level: float) -> list[tuple[int, float]]:
    """``(step, mean return)`` of the rows of ``curve`` around where the run first reaches
    ``level``: the row before the first one at or above it (if after step 0), then that one."""
    import csv

    with curve.open(encoding="utf-8") as f:
        rows = [(int(r["step"]), float(r["mean_return"])) for r in csv.DictReader(f)]
    rows = [r for r in rows if r[0] > 0]
    first = next((i for i, r in enumerate(rows) if r[1] >= level), None)
    if first is None:
        raise SystemExit(f"{curve} never reaches the medium level {level}")
    return rows[max(first - 1, 0) : first + 1]


def _run_card(references: dict, env_id: str, training: dict):
    """A medium-replay card of ``env_id`` for ``training`` on ``references`` (the pilot's
    before its stop, or a medium policy's run)."""
    from rlbench_suite.core.dataset_cards import DatasetCard

    env_name = env_id.split("/")[1].rsplit("-v", 1)[0]
    return DatasetCard.model_validate({
        "id": f"rlbench/{env_name}-medium-replay-v0", "env_id": env_id, "kind": "medium-replay",
        "description": "The pilot of a medium-replay run.", "source": {"training": training},
        "build": {"command": "pilot"}, "reference": references,
    })  # fmt: skip


def pilot_curve(medium, env_id: str, algo: str, seed: int, budget: int, path: Path) -> None:
    """Run the medium-replay run once with every env (game) recorded, for the whole rollouts
    of ``budget``, and write ``path``: per rollout, the mean return of the episodes that
    ended in it (of joint data the agents' mean), their std and count (:data:`PILOTS`)."""
    import csv

    import numpy as np

    from rlbench_suite.baselines.algorithms import get_algorithm
    from rlbench_suite.baselines.hyperparams import load_hyperparams
    from rlbench_suite.datasets.joint import make_joint_env
    from rlbench_suite.datasets.replay import record_training

    entry = load_hyperparams(get_algorithm(algo), env_id)
    game = make_joint_env(env_id) if is_joint(env_id) else None
    agents = 1 if game is None else len(game.possible_agents)
    rollout = entry.entry.n_envs * agents * int(entry.algo_kwargs["n_steps"])
    training = {"algo": algo, "hyperparams": env_id, "seed": seed, "budget": budget,
                "stop": budget // rollout * rollout, "recorded_envs": entry.entry.n_envs}
    rows = []

    def on_rollout(steps: int, episodes: list) -> None:
        returns = np.array([e.total_return for e in episodes])
        rows.append({"step": steps, "episodes": len(returns),
                     "mean_return": round(float(returns.mean()), 6),
                     "std_return": round(float(returns.std()), 6)})  # fmt: skip
        print(rows[-1], flush=True)

    record_training(_run_card(medium.reference.model_dump(), env_id, training),
                    on_rollout=on_rollout)  # fmt: skip
    with path.open("w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, ["step", "episodes", "mean_return", "std_return"])
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {path}")


def replay_cards(only: list[str]) -> None:
    """Write the missing medium-replay cards (of ``only``, else of every :data:`REPLAY` env)."""
    from rlbench_suite.baselines.algorithms import get_algorithm
    from rlbench_suite.baselines.hyperparams import load_hyperparams

    for env_id, (algo, seed, recorded) in REPLAY.items():
        if only and env_id not in only:
            continue
        env_name = env_id.split("/")[1].rsplit("-v", 1)[0]
        path = ROOT / env_name / "medium-replay.toml"
        if path.exists():
            continue
        medium = load_dataset_card(ROOT / env_name / "medium.toml")
        if medium.mean_return is None:
            raise SystemExit(f"build {medium.id} first: its mean return sets the replay budget")
        if env_id in PILOTS:
            budget = PILOTS[env_id]
            curve = ROOT / env_name / "medium-replay-curve.csv"
            if not curve.exists():
                pilot_curve(medium, env_id, algo, seed, budget, curve)
        else:
            curve = RESULTS / env_id.split("/")[1] / algo / f"seed-{seed}" / "curve.csv"
            budget = json.loads((curve.parent / "run.json").read_text(encoding="utf-8"))["budget"]
        stop, reached = replay_budget(curve, medium.mean_return)
        n_envs = load_hyperparams(get_algorithm(algo), env_id).entry.n_envs
        dataset_id = f"rlbench/{env_name}-medium-replay-v0"
        envs = "games" if is_joint(env_id) else "envs"
        which = (f"all {n_envs} {envs}" if recorded == n_envs
                 else f"the first {recorded} of {n_envs} {envs}")  # fmt: skip
        command = f"`rlbench train {env_id} --algo {algo} --seed {seed} --budget {budget}`"
        if env_id in PILOTS:
            where = (f"the end of the first rollout whose episodes (all {n_envs} {envs}) reach "
                     f"the medium data's mean return {medium.mean_return:g} ({reached:g}) in a "
                     f"pilot of the same run ({curve.relative_to(ROOT.parent).as_posix()}: per "
                     "rollout, the mean return of the episodes that ended in it)")  # fmt: skip
        else:
            where = (f"where that run's learning curve in the zoo first reaches the medium "
                     f"data's mean return {medium.mean_return:g} ({reached:g})")  # fmt: skip
        doc = tomlkit.document()
        doc["id"] = dataset_id
        doc["env_id"] = env_id
        doc["kind"] = "medium-replay"
        doc["description"] = (
            f"Medium-replay data of {env_id}: every episode that {which} completed while "
            f"{command} trained from scratch, stopped at {stop} "
            f"{'agent steps' if is_joint(env_id) else 'steps'}, {where}."
        )
        # joint data: the replay note replaces the policies' joint-data note
        sources = (REPLAY_NOTES,) if is_joint(env_id) else (REPLAY_NOTES, NOTES)
        notes = " ".join(n[env_id] for n in sources if env_id in n)
        if notes:
            doc["description"] += " " + notes
        doc["remotes"] = []
        training = tomlkit.table()
        training.update({"algo": algo, "hyperparams": env_id, "seed": seed,
                         "budget": budget, "stop": stop, "recorded_envs": recorded,
                         "curve": curve.relative_to(ROOT.parent).as_posix(),
                         "curve_return": round(reached, 6)})  # fmt: skip
        source = tomlkit.table()
        if notes:
            source["notes"] = notes
        source["training"] = training
        doc["source"] = source
        doc["build"] = {"command": f"rlbench datasets build {dataset_id}"}
        doc["reference"] = medium.reference.model_dump(exclude_none=True)
        path.write_text(tomlkit.dumps(doc), encoding="utf-8")
        load_dataset_card(path)  # validates
        print(f"wrote {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
    replay_cards(sys.argv[1:])
