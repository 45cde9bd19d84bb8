"""Chess and chess endgames against a built-in engine, as text games (LMRL-Gym's chess tasks).

:class:`ChessEnv` plays a full game from the standard position; :class:`ChessEndgamesEnv`
starts from a seeded winning endgame (:func:`~rlbench_suite.envs.text.chess.game.random_endgame`)
with the agent on the stronger side, to move. The opponent is
:func:`~rlbench_suite.envs.text.chess.game.best_move` at a fixed depth (2 plies by default:
its move and the agent's reply) with a seeded random pick among the moves within 10
centipawns of the best, so reset's seed fixes the whole game for a given sequence of commands.

Observations (a ``Text`` space over :data:`~rlbench_suite.envs.text.text_io.CHARSET`, at most
:data:`MAX_OBSERVATION_LENGTH` characters) are lines: the rules, ``Reply: ...`` (the answer
to the last command, with the opponent's answer in SAN), the board as ASCII (upper case
White, lower case Black, ``.`` empty, rank and file labels), ``FEN: ...``, ``To move: ...``
and ``Moves: 1. e4 e5 ...`` (the game so far, clipped on the left).

Commands (at most :data:`~rlbench_suite.envs.text.text_io.MAX_COMMAND_LENGTH` characters): a
move in SAN or UCI (see :func:`~rlbench_suite.envs.text.chess.game.parse_move`; a final
full stop, exclamation or question mark is ignored), or ``resign`` / ``I resign``. An
illegal, ambiguous or unreadable command (a promotion without its piece, ``e8``, is told which
pieces it may take) gets a reply listing the legal moves, zero reward, and no move is made; a
longer command raises ValueError naming the limit.
"""

from __future__ import annotations

import abc
from typing import Any

import chess
import gymnasium as gym

from rlbench_suite.envs.text.chess.game import (
    ENDGAMES,
    best_move,
    game_result,
    is_resignation,
    parse_move,
    random_endgame,
    san_table,
)
from rlbench_suite.envs.text.text_io import (
    MAX_COMMAND_LENGTH,
    clip_observation,
    read_command,
    text_space,
)

MAX_OBSERVATION_LENGTH = 2048
"""Room for the rules, a reply listing every legal move, the board, the FEN and the moves."""
MAX_REPLY, MAX_MOVES = 800, 400
OPPONENT_MARGIN = 10
COLORS = ("white", "black", "random")
NAMES = {chess.WHITE: "White", chess.BLACK: "Black"}


def draw_board(board: chess.Board) -> str:
    """python-chess's ASCII board with rank numbers and file letters."""
    rows = str(board).splitlines()
    lines = [f"{8 - i} {row}" for i, row in enumerate(rows)]
    return "\n".join([*lines, "  a b c d e f g h"])


def move_token(board: chess.Board, move: chess.Move, first: bool) -> str:
    """``move`` (about to be played on ``board``) in SAN with its move number where due."""
    if board.turn == chess.WHITE:
        return f"{board.fullmove_number}. {board.san(move)}"
    return f"{board.fullmove_number}... {board.san(move)}" if first else board.san(move)


def clip_moves(tokens: list[str]) -> str:
    """The game so far (``1. e4 e5 2. Nf3``), clipped on the left."""
    text = " ".join(tokens) or "(none)"
    return text if len(text) <= MAX_MOVES else "..." + text[-(MAX_MOVES - 3) :]


class ChessGameEnv(gym.Env[str, str], abc.ABC):
    """Shared game flow: the agent's move, the opponent's answer, rewards and observations."""

    metadata: dict[str, Any] = {"render_modes": []}
    draw_score = 0.5
    """``info["score"]`` of a drawn game (a win scores 1, a loss or an unfinished game 0)."""

    def __init__(self, opponent_depth: int = 2) -> None:
        if not isinstance(opponent_depth, int) or not 1 <= opponent_depth <= 4:
            raise ValueError(f"opponent_depth is an int from 1 to 4, got {opponent_depth!r}")
        self.opponent_depth = opponent_depth
        self.observation_space = text_space(MAX_OBSERVATION_LENGTH)
        self.action_space = text_space(MAX_COMMAND_LENGTH)
        self.board = chess.Board()
        self.agent = chess.WHITE
        self.result: str | None = None
        self.agent_moves = 0
        self.moves: list[str] = []
        self._cache: tuple[str, dict[chess.Move, str]] = ("", {})

    @abc.abstractmethod
    def _setup(self) -> None:
        """Set up the board and the agent's colour for a new game (after seeding)."""

    @abc.abstractmethod
    def _rules(self) -> str:
        """The first line of every observation: the game's rules in one sentence."""

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self._setup()
        self.result, self.agent_moves, self.moves = None, 0, []
        reply = f"New game: you play {NAMES[self.agent]}."
        if self.board.turn != self.agent:
            reply += " " + self._opponent_moves()
        return self._observe(reply), self._info(valid=False)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        command = read_command(action)
        if self.result is not None:
            return self._observe("The game is over."), 0.0, True, False, self._info(False)
        if is_resignation(command):
            self.result = "0-1" if self.agent == chess.WHITE else "1-0"
            return self._observe("You resign."), -1.0, True, False, self._info(valid=True)
        raw = action.decode("utf-8", errors="replace") if isinstance(action, bytes) else action
        move = parse_move(self.board, raw, self._sans())
        if isinstance(move, str):
            reply = f"{move}; legal moves: {', '.join(sorted(self._sans().values()))}."
            if len(reply) > MAX_REPLY:
                reply = reply[: MAX_REPLY - 3] + "..."
            return self._observe(reply), 0.0, False, False, self._info(valid=False)
        reply = f"You play {self.board.san(move)}."
        self._push(move)
        self.agent_moves += 1
        self.result = game_result(self.board)
        if self.result is None:
            reply += " " + self._opponent_moves()
        reward = self._reward()
        if self.result is not None:
            reply += " " + self._ending()
        return self._observe(reply), reward, self.result is not None, False, self._info(True)

    def _opponent_moves(self) -> str:
        move = best_move(self.board, self.opponent_depth, self.np_random, OPPONENT_MARGIN)
        text = f"Opponent plays {self.board.san(move)}."
        self._push(move)
        self.result = game_result(self.board)
        return text

    def _sans(self) -> dict[chess.Move, str]:
        """The current position's legal moves in SAN (computed once per position)."""
        fen = self.board.fen()
        if self._cache[0] != fen:
            self._cache = (fen, san_table(self.board))
        return self._cache[1]

    def _push(self, move: chess.Move) -> None:
        self.moves.append(move_token(self.board, move, first=not self.moves))
        self.board.push(move)

    def _reward(self) -> float:
        if self.result is None or self.result == "1/2-1/2":
            return 0.0
        return 1.0 if self.won else -1.0

    def _ending(self) -> str:
        if self.result == "1/2-1/2":
            return "Draw."
        return "Checkmate: you win!" if self.won else "Checkmate: you lose."

    @property
    def won(self) -> bool:
        """Whether the agent has won (checkmated the opponent)."""
        return self.result == ("1-0" if self.agent == chess.WHITE else "0-1")

    def _observe(self, reply: str) -> str:
        side = NAMES[self.board.turn] + (" (you)" if self.board.turn == self.agent else "")
        if self.result is not None:
            side = f"nobody, the game is over ({self.result})"
        lines = [
            self._rules(),
            f"Reply: {reply}",
            draw_board(self.board),
            f"FEN: {self.board.fen()}",
            f"To move: {side}",
            f"Moves: {clip_moves(self.moves)}",
        ]
        return clip_observation("\n".join(lines), MAX_OBSERVATION_LENGTH)

    def _info(self, valid: bool) -> dict[str, Any]:
        over = self.result is not None
        return {
            "success": self.won,
            "score": 1.0 if self.won else self.draw_score if self.result == "1/2-1/2" else 0.0,
            "max_score": 1.0,
            "admissible_commands": [] if over else sorted(self._sans().values()),
            "fen": self.board.fen(),
            "result": self.result or "*",
            "valid": valid,
            "agent_moves": self.agent_moves,
            "agent_color": NAMES[self.agent].lower(),
        }


class ChessEnv(ChessGameEnv):
    """A full game from the standard position against the depth-``opponent_depth`` engine."""

    def __init__(self, agent_color: str = "white", opponent_depth: int = 2) -> None:
        if agent_color not in COLORS:
            raise ValueError(f"unknown agent_color {agent_color!r}; accepted: {', '.join(COLORS)}")
        super().__init__(opponent_depth)
        self.agent_color = agent_color

    def _setup(self) -> None:
        self.board = chess.Board()
        if self.agent_color == "random":
            self.agent = bool(self.np_random.integers(2))
        else:
            self.agent = self.agent_color == "white"

    def _rules(self) -> str:
        return (
            f"Chess: you play {NAMES[self.agent]} against a {self.opponent_depth}-ply search "
            "engine. Checkmate to win. Commands: a move in SAN (Nf3, exd5, O-O, e8=Q) or UCI "
            "(g1f3, e7e8q), or resign."
        )


class ChessEndgamesEnv(ChessGameEnv):
    """Mate a lone king from a seeded winning endgame (KQK, KRK, KPK or mixed).

    A draw (the piece lost, stalemate) scores 0 here: the agent started from a won position.
    """

    draw_score = 0.0

    def __init__(self, endgame: str = "mixed", opponent_depth: int = 2) -> None:
        if endgame not in (*ENDGAMES, "mixed"):
            raise ValueError(f"unknown endgame {endgame!r}; accepted: {', '.join(ENDGAMES)}, mixed")
        super().__init__(opponent_depth)
        self.endgame = endgame
        self.kind = ENDGAMES[0]

    def _setup(self) -> None:
        self.board = random_endgame(self.np_random, self.endgame)
        self.agent = self.board.turn
        pieces = {p.piece_type for p in self.board.piece_map().values()} - {chess.KING}
        self.kind = "K" + chess.piece_symbol(pieces.pop()).upper() + "K"

    def _rules(self) -> str:
        return (
            f"Chess endgame {self.kind}: you play {NAMES[self.agent]}, the stronger side, "
            "against a defending engine. Checkmate to win. Commands: a move in SAN (Qd7, Kxe2, "
            "e8=Q) or UCI (d1d7, e7e8q), or resign."
        )

    def _info(self, valid: bool) -> dict[str, Any]:
        return {**super()._info(valid), "endgame": self.kind}
