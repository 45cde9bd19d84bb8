"""2x2 games: the 144 strict ordinal games of the Robinson-Goforth topology, and named classics.

A game's payoffs are ``payoffs[player][row_action][column_action]`` (player 0 chooses the
row, player 1 the column). In a strict ordinal game each player ranks the four outcomes 1
(worst) to 4 (best) without ties: 24 x 24 = 576 payoff pairs. Robinson and Goforth identify
games that differ only in the labels of the strategies (swapping the rows, the columns, or
both); this group of order 4 acts freely (a nontrivial relabelling moves every cell, so it
moves a player's 4), so there are 576 / 4 = 144 games. Swapping the players' roles is *not*
an identification: a game and its player-swapped twin are distinct unless the game is
symmetric (12 games are; the other 132 form 66 twin pairs).

Canonical form and index (the suite's own, stable): of a game's four relabellings the
canonical one puts the row player's 4 in the top-left cell; games are indexed 0..143 in
lexicographic order of their canonical ``(row payoffs, column payoffs)`` read row-major, and
named ``"g000"``..``"g143"``. The classics' ordinal classes carry their names
(``Game.classic``). Named *cardinal* games (:data:`NAMED_GAMES`) are the conventional
payoffs of the classics, and matching pennies (zero-sum, so not strict ordinal).
"""

from __future__ import annotations

import difflib
import functools
import itertools
from dataclasses import dataclass

import numpy as np

Payoffs = tuple[tuple[tuple[float, float], tuple[float, float]], ...]
NUM_GAMES = 144


@dataclass(frozen=True)
class Game:
    """A 2x2 game: ``payoffs[player][row_action][column_action]``."""

    name: str
    payoffs: Payoffs
    title: str = ""
    index: int | None = None  # its class in the ordinal topology; None if not strict ordinal
    classic: str | None = None  # the classic an ordinal class is (e.g. "prisoners_dilemma")
    actions: tuple[str, str] = ("0", "1")

    @property
    def matrix(self) -> np.ndarray:
        """The payoffs as a float array of shape (2 players, 2 row actions, 2 column actions)."""
        return np.array(self.payoffs, dtype=np.float64)

    @property
    def symmetric(self) -> bool:
        """Whether swapping the players gives the same game up to relabelling strategies."""
        return is_symmetric(self.matrix)


def relabellings(matrix: np.ndarray) -> list[np.ndarray]:
    """The four relabellings of a game: identity, row swap, column swap, both."""
    m = np.asarray(matrix)
    return [m, m[:, ::-1, :], m[:, :, ::-1], m[:, ::-1, ::-1]]


def swap_players(matrix: np.ndarray) -> np.ndarray:
    """The game with the players' roles exchanged (the old column player now picks rows)."""
    return np.asarray(matrix)[::-1].transpose(0, 2, 1)


def is_symmetric(matrix: np.ndarray) -> bool:
    """True if the player-swapped game equals the game up to relabelling strategies."""
    swapped = swap_players(matrix)
    return any(np.array_equal(swapped, g) for g in relabellings(matrix))


def ordinal_ranks(matrix: np.ndarray) -> np.ndarray:
    """Each player's ranks 1..4 of the outcomes; ValueError if a player has tied payoffs."""
    m = np.asarray(matrix, dtype=np.float64).reshape(2, 4)
    for player, row in enumerate(m):
        if len(set(row.tolist())) != 4:
            raise ValueError(
                f"player {player}'s payoffs {row.tolist()} have ties; the ordinal topology "
                "needs four distinct payoffs per player"
            )
    return (np.argsort(np.argsort(m, axis=1), axis=1) + 1).reshape(2, 2, 2)


def canonical(matrix: np.ndarray) -> tuple[int, ...]:
    """The canonical form of a strict ordinal game: the relabelling with the row player's 4
    top-left, flattened (row player's payoffs, then the column player's)."""
    ranks = ordinal_ranks(matrix)
    (form,) = [g for g in relabellings(ranks) if g[0, 0, 0] == 4]
    return tuple(int(v) for v in form.ravel())


@functools.cache
def _canonical_forms() -> tuple[tuple[int, ...], ...]:
    forms = set()
    for row in itertools.permutations(range(1, 5)):
        for col in itertools.permutations(range(1, 5)):
            forms.add(canonical(np.array(row + col).reshape(2, 2, 2)))
    return tuple(sorted(forms))


@functools.cache
def _index_of_form() -> dict[tuple[int, ...], int]:
    return {form: i for i, form in enumerate(_canonical_forms())}


def ordinal_index(matrix: np.ndarray) -> int:
    """The topology index (0..143) of the ordinal class of a game with no per-player ties."""
    return _index_of_form()[canonical(matrix)]


def _ordinal(row: tuple[tuple[int, int], tuple[int, int]]) -> np.ndarray:
    """The symmetric game whose row player's payoffs are ``row`` (the column player's are
    its transpose)."""
    a = np.array(row)
    return np.stack([a, a.T])


# The classics' ordinal forms (symmetric, action 0 first): Robinson & Goforth's rankings.
ORDINAL_CLASSICS: dict[str, np.ndarray] = {
    # cooperate/defect: T=4 > R=3 > P=2 > S=1
    "prisoners_dilemma": _ordinal(((3, 1), (4, 2))),
    # stag/hare: stag together 4 > hare while the other hunts stag 3 > both hare 2 > alone 1
    "stag_hunt": _ordinal(((4, 1), (3, 2))),
    # swerve/straight: win 4 > both swerve 3 > swerve alone 2 > crash 1
    "chicken": _ordinal(((3, 2), (4, 1))),
    # own favourite/other's: together at own favourite 4, at the other's 3, alone at own
    # favourite 2, alone at the other's 1
    "battle_of_the_sexes": _ordinal(((2, 4), (3, 1))),
}
CLASSIC_TITLES = {
    "prisoners_dilemma": "Prisoner's Dilemma",
    "stag_hunt": "Stag Hunt",
    "chicken": "Chicken",
    "battle_of_the_sexes": "Battle of the Sexes",
    "matching_pennies": "Matching Pennies",
}


def _as_payoffs(matrix: np.ndarray) -> Payoffs:
    return tuple(tuple(tuple(r) for r in p.tolist()) for p in np.asarray(matrix))  # type: ignore[return-value]


@functools.cache
def all_games() -> tuple[Game, ...]:
    """The 144 ordinal games in index order (canonical payoffs, ranks 1..4)."""
    classics = {ordinal_index(m): name for name, m in ORDINAL_CLASSICS.items()}
    games = []
    for i, form in enumerate(_canonical_forms()):
        classic = classics.get(i)
        games.append(
            Game(
                name=f"g{i:03d}",
                payoffs=_as_payoffs(np.array(form).reshape(2, 2, 2)),
                title=CLASSIC_TITLES[classic] + " (ordinal)" if classic else "",
                index=i,
                classic=classic,
            )
        )
    return tuple(games)


def _named(
    name: str, row: list[list[float]], col: list[list[float]], actions: tuple[str, str]
) -> Game:
    matrix = np.array([row, col], dtype=np.float64)
    try:
        index: int | None = ordinal_index(matrix)
    except ValueError:  # ties: not a strict ordinal game
        index = None
    return Game(name, _as_payoffs(matrix), CLASSIC_TITLES[name], index, None, actions)


# Conventional cardinal payoffs; the first four rank like their ORDINAL_CLASSICS form.
NAMED_GAMES: dict[str, Game] = {
    g.name: g
    for g in (
        _named("prisoners_dilemma", [[3, 0], [5, 1]], [[3, 5], [0, 1]], ("cooperate", "defect")),
        _named("stag_hunt", [[4, 0], [3, 2]], [[4, 3], [0, 2]], ("stag", "hare")),
        _named("chicken", [[0, -1], [1, -10]], [[0, 1], [-1, -10]], ("swerve", "straight")),
        # actions name the event (X is player_0's favourite, Y player_1's); miscoordinated, a
        # player gets 1 alone at its own favourite and 0 alone at the other's
        _named("battle_of_the_sexes", [[3, 1], [0, 2]], [[2, 1], [0, 3]], ("X", "Y")),
        _named("matching_pennies", [[1, -1], [-1, 1]], [[-1, 1], [1, -1]], ("heads", "tails")),
    )
}


def game_names() -> list[str]:
    """Every name :func:`get_game` accepts: the named games, then "g000".."g143"."""
    return [*NAMED_GAMES, *(g.name for g in all_games())]


def get_game(game: str | int | Game) -> Game:
    """A game by name ("prisoners_dilemma", "g017"), topology index (0..143), or as is.

    ``"<classic>_ordinal"`` (e.g. ``"stag_hunt_ordinal"``) names a classic's ordinal class.
    """
    if isinstance(game, Game):
        return game
    if isinstance(game, (int, np.integer)) and not isinstance(game, bool):
        if not 0 <= game < NUM_GAMES:
            raise ValueError(f"game index {game} out of range; accepted: 0..{NUM_GAMES - 1}")
        return all_games()[int(game)]
    if not isinstance(game, str):
        raise ValueError(
            f"game must be a name, an index 0..{NUM_GAMES - 1} or a Game, got {game!r}"
        )
    if game in NAMED_GAMES:
        return NAMED_GAMES[game]
    by_name = {g.name: g for g in all_games()}
    by_name.update({f"{g.classic}_ordinal": g for g in all_games() if g.classic})
    if game in by_name:
        return by_name[game]
    close = difflib.get_close_matches(game, list(by_name) + list(NAMED_GAMES), n=3)
    hint = f"; did you mean: {', '.join(close)}" if close else ""
    raise ValueError(
        f"unknown game {game!r}{hint}. Accepted: {', '.join(NAMED_GAMES)}, "
        f"{', '.join(f'{c}_ordinal' for c in ORDINAL_CLASSICS)}, g000..g{NUM_GAMES - 1:03d} "
        f"or an index 0..{NUM_GAMES - 1}"
    )
