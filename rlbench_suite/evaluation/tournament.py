"""Round-robin tournaments on two-player games, rated by maximum-likelihood Elo.

Ratings are the Bradley-Terry fit with ``ratings.PRIOR_DRAWS`` virtual draw per pairing (a
Jeffreys prior on each pairing's score rate), and their intervals are credible intervals
under that prior (:func:`~rlbench_suite.evaluation.ratings.elo_intervals` with
``method="posterior"``): a player that won every game gets ``[low, inf)``, since its games
bound its rating only from below.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from rlbench_suite.core.catalog import get_card
from rlbench_suite.core.metrics import Estimate
from rlbench_suite.core.protocol import SeedOverlapError
from rlbench_suite.evaluation.ratings import PRIOR_DRAWS, RATING_METHOD, elo_intervals
from rlbench_suite.policies import (
    agent_seed,
    display_name,
    display_names,
    make_policy,
    split_label,
)
from rlbench_suite.registry import make_multiagent
from rlbench_suite.wrappers.masks import split_masked_observation


@dataclass
class Standing:
    """A player's record and rating; ``name`` is its display name (label or short spec)."""

    spec: str
    name: str = ""
    wins: int = 0
    draws: int = 0
    losses: int = 0
    rating: Estimate | None = None
    games: list[tuple[str, float]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.name = self.name or display_name(self.spec)


def play_game(env_id: str, specs: dict[str, str], seed: int) -> dict[str, float]:
    """One game of a two-player card: agent -> its return. ``specs`` map agents to policies."""
    env = make_multiagent(env_id, "aec")
    try:
        policies = {a: make_policy(spec, env=env, agent=a) for a, spec in specs.items()}
        env.reset(seed=seed)
        for agent in env.possible_agents:  # a stream per game and seat
            policies[agent].reset(agent_seed(seed, agent))
        totals = dict.fromkeys(env.possible_agents, 0.0)
        for agent in env.agent_iter():
            obs, reward, terminated, truncated, info = env.last()
            totals[agent] += float(reward)
            if terminated or truncated:
                action = None
            else:
                obs, info = split_masked_observation(obs, dict(info))
                action = policies[agent].act(obs, info)
            env.step(action)
        return totals
    finally:
        env.close()


def game_score(own: float, other: float, draw_within: float | None = None) -> float:
    """The first player's score in a game (1 won, 0.5 drawn, 0 lost) from the two returns:
    the higher return wins, except that on a card with an ``[outcome]`` rule a game whose
    returns are both within its ``draw_within`` of 0 is drawn (Duel's double knock-out leaves
    a few hundredths of chip damage between the two)."""
    if draw_within is not None and abs(own) <= draw_within and abs(other) <= draw_within:
        return 0.5
    return 1.0 if own > other else 0.0 if own < other else 0.5


def round_robin(
    env_id: str, specs: list[str], games: int = 10, first_seed: int | None = None,
    reps: int = 1000, random_state: int = 0, on_game: Callable[[], None] | None = None,
) -> list[Standing]:  # fmt: skip
    """Every pair of policies plays ``games`` games, seats alternating; Elo with intervals.

    ``specs`` are ``--policy`` strings, optionally labelled (``EasyBot=module:...``); each
    standing is named by :func:`~rlbench_suite.policies.display_names`. Game ``g`` of a
    pairing uses seed ``first_seed + g`` (default: from the card's first evaluation seed), so
    a tournament is reproducible; seeds a policy was trained or tuned on are refused. Returns
    the standings, best rating first.
    """
    card = get_card(env_id)
    if card.api == "gymnasium":
        raise ValueError(f"{card.id} is single-agent; a tournament needs a two-player game")
    entries = [s.strip() for s in specs]
    # one player, however written: "random" and "random=random" are both random named random
    player = {e: (display_name(e), split_label(e)[1]) for e in entries}
    counts = Counter(player[e] for e in entries)
    repeated = [e for e in entries if counts[player[e]] > 1]
    if repeated:
        raise ValueError(f"--policy {repeated[0]!r} is given {counts[player[repeated[0]]]} "
                         "times; each player is one entry (to rate a policy beside itself, "
                         "label the copies: A=SPEC, B=SPEC)")  # fmt: skip
    if len(entries) < 2:
        raise ValueError("a tournament needs at least two players: give --policy twice or more "
                         "(the same spec twice as two labelled copies, A=SPEC and B=SPEC)")
    names = display_names(entries)
    spec_of = {entry: split_label(entry)[1] for entry in entries}
    env = make_multiagent(card.id, "aec")
    seats = list(env.possible_agents)
    env.close()
    if len(seats) != 2:
        raise ValueError(f"{card.id} has {len(seats)} agents; tournaments are for two players")
    first_seed = card.evaluation.first_seed if first_seed is None else first_seed
    seeds = set(range(first_seed, first_seed + games))
    for spec in dict.fromkeys(spec_of.values()):
        env = make_multiagent(card.id, "aec")
        identity = make_policy(spec, env=env, agent=seats[0]).identity
        env.close()
        used = seeds & (set(identity.train_seeds) | set(identity.tuning_seeds))
        if used:
            raise SeedOverlapError(
                f"game seeds {sorted(used)[:10]} were training or tuning seeds of {spec!r}; "
                "pass another --first-seed"
            )
    draw_within = card.outcome.draw_within if card.outcome is not None else None
    standings = {e: Standing(spec_of[e], name) for e, name in zip(entries, names, strict=True)}
    matches = []
    for a, b in itertools.combinations(standings, 2):
        for g in range(games):
            first, second = (a, b) if g % 2 == 0 else (b, a)
            players = {seats[0]: spec_of[first], seats[1]: spec_of[second]}
            totals = play_game(card.id, players, first_seed + g)
            score = game_score(totals[seats[0]], totals[seats[1]], draw_within)
            matches.append((first, second, score))
            for entry, result in ((first, score), (second, 1.0 - score)):
                record = standings[entry]
                record.wins += result == 1.0
                record.draws += result == 0.5
                record.losses += result == 0.0
            if on_game is not None:
                on_game()
    ratings = elo_intervals(matches, reps=reps, random_state=random_state,
                            prior_draws=PRIOR_DRAWS, method=RATING_METHOD)  # fmt: skip
    for entry, estimate in ratings.items():
        standings[entry].rating = estimate
    return sorted(standings.values(), key=lambda s: -s.rating.point if s.rating else 0.0)
