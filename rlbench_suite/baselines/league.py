"""A self-play league for two-player cards (Duel): ``rlbench train rlbench/Duel-v0 --algo league``.

The learner is SB3 PPO playing the card's ``agent`` (its Gymnasium view). Its opponent in
each episode is drawn from a population: fixed opponents (the ladder bots and random, as
``--policy`` strings) plus snapshots of the learner itself, taken every
``snapshot_every`` steps at a rollout boundary and kept as ONNX files in the run folder
(``league/snapshot-<step>.onnx``, every one written; the population holds the newest
``max_snapshots``), which play stochastically (sampling their action distribution).

Opponents are sampled by prioritized fictitious self-play (PFSP, AlphaStar, Vinyals et al.
2019): opponent ``o`` is drawn with probability proportional to ``(1 - p_o) ** power``, where
``p_o`` is the learner's score against it (win 1, draw 1/2, loss 0) over its recent games,
``window`` at most, with one virtual draw as a prior (``(score + 1/2) / (games + 1)``), so an
opponent never played is tried and one the learner always beats is drawn rarely but never
never (``min_weight``). ``power = 0`` is uniform fictitious self-play.

Every game's result is recorded; ``league.json`` in the run folder keeps, per opponent, the
games, score and last sampling weight. The finished learner is scored by the harness on the
card's protocol (``result.json``: win rate against random for ``rlbench/Duel-v0``) and is
ready for ``rlbench tournament`` and ``rlbench exploit``.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from rlbench_suite.baselines.checkpoints import write_json
from rlbench_suite.core.cards import EnvCard
from rlbench_suite.policies import Policy, make_policy

LEAGUE_DIR = "league"
LEAGUE_FILE = "league.json"


@dataclasses.dataclass
class Member:
    """One opponent of the league and the learner's recent results against it."""

    name: str
    policy: Policy
    spec: str
    results: collections.deque = dataclasses.field(default_factory=collections.deque)
    games: int = 0

    def score(self) -> float:
        """The learner's recent score against this opponent, with one virtual draw."""
        return (sum(self.results) + 0.5) / (len(self.results) + 1)


class League:
    """A population of opponents sampled by PFSP (module docstring)."""

    def __init__(
        self,
        *,
        power: float = 2.0,
        window: int = 50,
        min_weight: float = 0.02,
        max_snapshots: int = 8,
        seed: int = 0,
    ) -> None:
        if power < 0 or window < 1 or not 0 <= min_weight <= 1 or max_snapshots < 1:
            raise ValueError(
                "league settings: power >= 0, window >= 1, 0 <= min_weight <= 1 and "
                f"max_snapshots >= 1, got {power}, {window}, {min_weight}, {max_snapshots}"
            )
        self.power, self.window, self.min_weight = power, window, min_weight
        self.max_snapshots = max_snapshots
        self.members: list[Member] = []
        self.snapshots: list[str] = []
        self.rng = np.random.default_rng(seed)

    def add(self, name: str, policy: Policy, spec: str, *, snapshot: bool = False) -> None:
        """Add an opponent; snapshots beyond ``max_snapshots`` drop the oldest snapshot."""
        if any(m.name == name for m in self.members):
            raise ValueError(f"the league already has an opponent named {name!r}")
        self.members.append(Member(name, policy, spec, collections.deque(maxlen=self.window)))
        if snapshot:
            self.snapshots.append(name)
            if len(self.snapshots) > self.max_snapshots:
                oldest = self.snapshots.pop(0)
                self.members = [m for m in self.members if m.name != oldest]

    def member(self, name: str) -> Member:
        for m in self.members:
            if m.name == name:
                return m
        raise KeyError(f"no opponent named {name!r}; opponents: {[m.name for m in self.members]}")

    def weights(self) -> np.ndarray:
        """PFSP sampling probabilities, in the order of :attr:`members`."""
        if not self.members:
            raise ValueError("the league has no opponents")
        raw = np.array([(1.0 - m.score()) ** self.power for m in self.members])
        raw = np.maximum(raw / raw.sum(), self.min_weight)
        return raw / raw.sum()

    def sample(self) -> Member:
        return self.members[int(self.rng.choice(len(self.members), p=self.weights()))]

    def record(self, name: str, score: float) -> None:
        """The learner scored ``score`` (1 win, 0.5 draw, 0 loss) against ``name``."""
        member = next((m for m in self.members if m.name == name), None)
        if member is not None:  # a snapshot dropped while its game was running is forgotten
            member.results.append(float(score))
            member.games += 1

    def table(self) -> list[dict[str, Any]]:
        weights = self.weights()
        return [
            {"name": m.name, "spec": m.spec, "games": m.games,
             "recent_score": round(m.score(), 4), "weight": round(float(w), 4)}
            for m, w in zip(self.members, weights, strict=True)
        ]  # fmt: skip


class LeagueOpponent:
    """A :class:`~rlbench_suite.policies.Policy` that is a new league member every episode."""

    def __init__(self, league: League) -> None:
        self.league = league
        self.current: Member | None = None

    def reset(self, seed: int | None = None) -> None:
        self.current = self.league.sample()
        self.current.policy.reset(seed)

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        assert self.current is not None, "reset() first"
        return self.current.policy.act(observation, info)


class RecordResults(gym.Wrapper):
    """Records each finished episode's result against the league opponent it was played with."""

    def __init__(self, env: gym.Env, opponent: LeagueOpponent) -> None:
        super().__init__(env)
        self.opponent = opponent

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = self.env.step(action)
        if (terminated or truncated) and self.opponent.current is not None:
            self.league_result(info)
        return obs, reward, terminated, truncated, info

    def league_result(self, info: dict[str, Any]) -> None:
        win = info.get("win")  # Duel: 1 won, 0 draw, -1 lost
        score = (float(win) + 1) / 2 if win is not None else float(bool(info.get("won")))
        self.opponent.league.record(self.opponent.current.name, score)  # type: ignore[union-attr]


def make_league(card: EnvCard, settings: Any, seed: int) -> League:
    """The league of ``settings`` (hyperparams.LeagueSettings) with its fixed opponents."""
    if not card.is_multiagent:
        raise ValueError(f"{card.id} is single-agent; a league needs a two-player card")
    league = League(
        power=settings.power,
        window=settings.window,
        min_weight=settings.min_weight,
        max_snapshots=settings.max_snapshots,
        seed=seed,
    )
    from rlbench_suite import make_multiagent
    from rlbench_suite.policies import display_names

    env = make_multiagent(card.id, "parallel")
    other = next(a for a in env.possible_agents if a != card.agent)
    names = display_names(list(settings.opponents))
    for spec, name in zip(settings.opponents, names, strict=True):
        league.add(name, make_policy(spec, env, agent=other), spec)
    env.close()
    return league


def league_vector_env(card: EnvCard, n_envs: int, league: League, **vector_kwargs: Any) -> Any:
    """``n_envs`` Gymnasium views of ``card`` whose opponents are drawn from ``league``."""

    def one() -> gym.Env:
        opponent = LeagueOpponent(league)
        return RecordResults(gym.make(card.id, opponents=opponent), opponent)

    return gym.vector.SyncVectorEnv([one] * n_envs, **vector_kwargs)


def save_league(run_dir: Path, league: League, step: int) -> None:
    (run_dir / LEAGUE_DIR).mkdir(parents=True, exist_ok=True)
    write_json(
        run_dir / LEAGUE_DIR / LEAGUE_FILE,
        {"step": step, "snapshots": list(league.snapshots), "opponents": league.table()},
    )


def league_callback(run_dir: Path, league: League, snapshot_every: int) -> Any:
    """The SB3 callback that snapshots the learner into ``league`` every ``snapshot_every``
    steps (at rollout boundaries) and writes ``league/league.json``."""
    from stable_baselines3.common.callbacks import BaseCallback

    from rlbench_suite.policies.onnx import export_sb3_to_onnx

    class SnapshotCallback(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.next_snapshot = snapshot_every

        def _on_rollout_start(self) -> None:
            step = int(self.model.num_timesteps)
            if step < self.next_snapshot:
                return
            self.next_snapshot = (step // snapshot_every + 1) * snapshot_every
            folder = run_dir / LEAGUE_DIR
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"snapshot-{step}.onnx"
            export_sb3_to_onnx(self.model, path)
            policy = make_policy(f"onnx:{path}", deterministic=False)
            league.add(f"snapshot-{step}", policy, f"onnx:{path}", snapshot=True)
            save_league(run_dir, league, step)

        def _on_step(self) -> bool:
            return True

        def _on_training_end(self) -> None:
            save_league(run_dir, league, int(self.model.num_timesteps))

    return SnapshotCallback()


def snapshot_specs(run_dir: Path, last: int | None = None) -> Sequence[str]:
    """The ``onnx:`` specs of the snapshots kept in a run folder, oldest first."""
    files = sorted(
        (run_dir / LEAGUE_DIR).glob("snapshot-*.onnx"), key=lambda p: int(p.stem.split("-")[1])
    )
    return [f"onnx:{p}" for p in files[-last if last else 0 :]]
