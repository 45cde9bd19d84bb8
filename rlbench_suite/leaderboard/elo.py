"""Tournament Elo of the competitive cards (tagged ``competitive``: the Duel family), rated
from the games the leaderboard stores.

A competitive card's results are games of the policy playing the card's ``agent`` against
the card's fixed opponent: its ``opponents`` (random when not given) on a multi-agent card,
the built-in opponent its ``kwargs`` pick on a single-player ladder card. The cards of one
game (one entry-point module) make one tournament. Its players are each method (its runs
under each card's current protocol, one per policy artifact as the ranking counts them,
kept by the same filters as the ranking: verification level, budget, family), each
card's fixed opponent, and the policies of the cards' measured references (random and the
expert), whose reference episodes are games too. Each episode is one game, won (1), drawn (1/2)
or lost (0) by the card's outcome rule (``core.scoring.OutcomeRule``: a win is a success, a
draw an episode not won whose return is about 0); a measured reference records its draws.
Ratings are ``evaluation.ratings``' Bradley-Terry fit of all games at once with its tournament
settings (one virtual draw per pairing; 95% credible intervals), anchored with the random
reference policy at 1000.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Callable
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from rlbench_suite.core.cards import COMPETITIVE_TAG, EnvCard
from rlbench_suite.core.metrics import Estimate
from rlbench_suite.core.scoring import DRAW, LOSS, WIN
from rlbench_suite.evaluation.ratings import PRIOR_DRAWS, RATING_METHOD, RATING_NOTE, elo_intervals
from rlbench_suite.leaderboard.models import Environment, Result
from rlbench_suite.leaderboard.queries import env_card, env_runs
from rlbench_suite.leaderboard.ranking import Run, distinct_runs

TAG = COMPETITIVE_TAG
ANCHOR = ("reference", "random")
INITIAL = 1000.0
REPS = 1000
SEED = 0
Player = tuple[str, str]
"""A player, ``(kind, name)``, where kind is ``method``, ``reference`` or ``opponent``, so no
method name can pass for a reference or an opponent."""
Pairing = tuple[Player, Player, int, int, int]
"""(player, opponent, games won by the player, games drawn, games)."""
RunFilter = Callable[[list[Run]], list[Run]]
"""A ranking filter of runs (``views.Filters.apply``)."""


def game_of(card: EnvCard) -> str | None:
    """The game a competitive card is played in (its entry point's module); None otherwise."""
    if TAG not in card.tags or card.primary_metric != "win_rate" or card.outcome is None:
        return None
    return card.entry_point.split(":")[0]


def opponent_of(card: EnvCard) -> Player:
    """The player the card's agent faces in every episode."""
    if card.is_multiagent:
        return ("opponent", card.opponents or "random")
    settings = ", ".join(f"{k}={v}" for k, v in sorted(card.kwargs.items()))
    return ("opponent", f"built-in ({settings})" if settings else f"built-in of {card.id}")


def _reference_pairings(card: EnvCard) -> list[Pairing]:
    pairings = []
    for ref in (card.reference.random, card.reference.expert):
        if ref is not None and ref.method == "measured" and ref.episodes:
            wins = round(ref.value * ref.episodes)
            name = ref.policy.rsplit(":", 1)[-1].rsplit(".", 1)[-1]  # its spec's last name
            pairing = (("reference", name), opponent_of(card), wins, ref.draws or 0, ref.episodes)
            pairings.append(pairing)
    return pairings


def _result_pairings(
    session: Session, env: Environment, card: EnvCard, keep: RunFilter | None
) -> list[Pairing]:
    chosen = env_runs(session, env)
    runs = {r.result_id: r.method for r in distinct_runs(keep(chosen) if keep else chosen)}
    rule = card.outcome
    if not runs or rule is None:
        return []
    wins: Counter[str] = Counter()
    draws: Counter[str] = Counter()
    games: Counter[str] = Counter()
    query = select(Result.id, Result.document).where(Result.id.in_(runs))
    for result_id, document in session.execute(query):
        scores = rule.scores(document["returns"], document["successes"])
        wins[runs[result_id]] += int((scores == WIN).sum())
        draws[runs[result_id]] += int((scores == DRAW).sum())
        games[runs[result_id]] += len(scores)
    return [
        (("method", m), opponent_of(card), wins[m], draws[m], games[m]) for m in sorted(games)
    ]


@functools.lru_cache(maxsize=64)
def _ratings(pairings: tuple[Pairing, ...]) -> dict[Player, Estimate]:
    matches = [
        (player, opponent, WIN if k < wins else DRAW if k < wins + draws else LOSS)
        for player, opponent, wins, draws, n in pairings
        for k in range(n)
    ]
    players = {p for pairing in pairings for p in pairing[:2]}
    return elo_intervals(
        matches,
        reps=REPS,
        random_state=SEED,
        initial=INITIAL,
        anchor=ANCHOR if ANCHOR in players else None,
        prior_draws=PRIOR_DRAWS,
        method=RATING_METHOD,
    )


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def tournament(
    session: Session, env: Environment, keep: RunFilter | None = None
) -> dict[str, Any] | None:
    """The tournament Elo table of ``env``'s game (unbounded interval ends are None); None
    when ``env`` is not competitive. ``keep``: the ranking's filter of the runs (the
    verification level, budget and family the page or request chose; default: every run),
    so the table rates the games the ranking beside it counts."""
    game = game_of(env_card(env))
    if game is None:
        return None
    envs = sorted(
        (e for e in session.scalars(select(Environment).where(Environment.active))
         if game_of(env_card(e)) == game),
        key=lambda e: e.id,
    )  # fmt: skip
    pairings: list[Pairing] = []
    for other in envs:
        card = env_card(other)
        pairings += _reference_pairings(card) + _result_pairings(session, other, card, keep)
    table: dict[str, Any] = {
        "game": game,
        "envs": [e.id for e in envs],
        "anchor": f"{ANCHOR[1]} ({ANCHOR[0]})",
        "initial": INITIAL,
        "note": RATING_NOTE,
        "method_games": sum(n for p, *_, n in pairings if p[0] == "method"),
        "players": [],
        "problem": None,
    }
    if not pairings:
        table["problem"] = "no games are stored yet: no results and no measured references"
        return table
    try:
        ratings = _ratings(tuple(pairings))
    except ValueError as exc:
        table["problem"] = f"the stored games do not rate every player: {exc}"
        return table
    record: dict[Player, Counter[str]] = {}
    for player, opponent, wins, draws, n in pairings:
        for who, won in ((player, wins), (opponent, n - wins - draws)):
            counts = record.setdefault(who, Counter())
            counts.update(wins=won, draws=draws, games=n)
    for (kind, name), estimate in sorted(ratings.items(), key=lambda kv: -kv[1].point):
        table["players"].append(
            {
                "name": name,
                "kind": kind,
                "wins": record[(kind, name)]["wins"],
                "draws": record[(kind, name)]["draws"],
                "games": record[(kind, name)]["games"],
                "elo": {
                    "point": estimate.point,
                    "low": _finite(estimate.low),
                    "high": _finite(estimate.high),
                },
            }
        )
    return table
