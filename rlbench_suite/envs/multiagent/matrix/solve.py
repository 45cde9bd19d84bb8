"""Exact solutions of 2x2 games: best responses, Nash equilibria and exploitability.

A mixed strategy is given as the probability of action 0 (a float in [0, 1]) or as a
probability vector of length 2. Everything is closed-form (no iterative solver).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rlbench_suite.envs.multiagent.matrix.topology import Game, get_game

Strategy = float | Sequence[float] | np.ndarray


def as_mixed(strategy: Strategy) -> np.ndarray:
    """``strategy`` as a probability vector of length 2; ValueError if it is not one."""
    arr = np.asarray(strategy, dtype=np.float64)
    vec = np.array([arr, 1.0 - arr]) if arr.ndim == 0 else arr
    if vec.shape != (2,) or np.any(vec < 0) or not np.isclose(vec.sum(), 1.0):
        raise ValueError(
            f"a mixed strategy is P(action 0) in [0, 1] or two probabilities summing to 1, "
            f"got {strategy!r}"
        )
    return vec


def action_values(game: str | int | Game, p_row: Strategy, p_col: Strategy) -> np.ndarray:
    """Each player's expected payoff of each own action against the other's strategy:
    shape (2 players, 2 actions)."""
    a, b = get_game(game).matrix
    x, y = as_mixed(p_row), as_mixed(p_col)
    return np.stack([a @ y, x @ b])


def expected_payoffs(game: str | int | Game, p_row: Strategy, p_col: Strategy) -> np.ndarray:
    """Both players' expected payoffs under the mixed profile, shape (2,)."""
    values = action_values(game, p_row, p_col)
    return np.array([as_mixed(p_row) @ values[0], as_mixed(p_col) @ values[1]])


def exploitability(game: str | int | Game, p_row: Strategy, p_col: Strategy) -> float:
    """The summed best-response gains ``sum_i max_a u_i(a, s_-i) - u_i(s)`` (>= 0; 0 exactly at
    the Nash equilibria)."""
    values = action_values(game, p_row, p_col)
    gains = values.max(axis=1) - expected_payoffs(game, p_row, p_col)
    return float(np.maximum(gains, 0.0).sum())


def best_response(game: str | int | Game, player: int, opponent: Strategy) -> int:
    """The pure best response of ``player`` (0 row, 1 column) to the opponent's strategy; ties
    go to action 0."""
    if player not in (0, 1):
        raise ValueError(f"player must be 0 (row) or 1 (column), got {player!r}")
    profile = (0.5, opponent) if player == 0 else (opponent, 0.5)
    return int(np.argmax(action_values(game, *profile)[player]))


def nash_equilibria(game: str | int | Game) -> list[tuple[float, float]]:
    """The pure equilibria (in cell order) and the fully mixed one where it exists, each as
    ``(P(row plays 0), P(column plays 0))``.

    For games with payoff ties (not generic) continua of partially mixed equilibria are
    not listed; every strict ordinal game and the named games are generic enough.
    """
    a, b = get_game(game).matrix
    found: list[tuple[float, float]] = []
    for r in (0, 1):
        for c in (0, 1):
            if a[r, c] >= a[1 - r, c] and b[r, c] >= b[r, 1 - c]:
                found.append((1.0 - r, 1.0 - c))
    # the row player mixes so that the column player is indifferent, and vice versa
    row_den = b[0, 0] - b[0, 1] - b[1, 0] + b[1, 1]
    col_den = a[0, 0] - a[1, 0] - a[0, 1] + a[1, 1]
    if row_den != 0 and col_den != 0:
        x = (b[1, 1] - b[1, 0]) / row_den
        y = (a[1, 1] - a[0, 1]) / col_den
        if 0 < x < 1 and 0 < y < 1:
            found.append((float(x), float(y)))
    return found


def uniform_opponent_references(
    game: str | int | Game, rounds: int = 1, player: int = 0
) -> dict[str, tuple[float, float]]:
    """Exact reference scores of ``player`` against a uniformly random opponent over
    ``rounds`` independent rounds: ``{"random": (mean, std), "expert": (mean, std)}`` of the
    episode return, for uniformly random play and for the pure best response to the uniform
    opponent (ties to action 0, as :func:`best_response`). Against a uniform opponent no
    history helps, so the best response every round is the best policy there is."""
    payoff = get_game(game).matrix[player]
    own = payoff if player == 0 else payoff.T  # rows: own action, columns: the opponent's
    best = own[best_response(game, player, 0.5)]
    return {
        "random": (float(rounds * own.mean()), float(np.sqrt(rounds * own.var()))),
        "expert": (float(rounds * best.mean()), float(np.sqrt(rounds * best.var()))),
    }
