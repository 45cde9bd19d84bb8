"""Scripted chess experts that read the position (the FEN) from the observation.

Both use :func:`~rlbench_suite.envs.text.chess.game.best_move`, the engine the environments'
opponent plays at 2 plies without quiescence, but search further: :class:`ChessExpert`
searches 2 plies and then up to 4 plies of captures and promotions, so it sees the exchanges
the opponent cuts off (3 plies once at most four pieces are left); :class:`ChessEndgameExpert`
searches 3 plies (4 with at most four pieces on the board), where the evaluation's mop-up
term drives the lone king to the edge and brings the own king close.
Each keeps the game's history by matching every new FEN against its own last move and the
opponent's legal answers, so the search sees (and avoids) repeated positions.
"""

from __future__ import annotations

import re
from typing import Any

import chess  # python-chess: absolute imports, so this module does not shadow it

from rlbench_suite.envs.text.chess.game import best_move

_FEN = re.compile(r"^FEN: (\S+ [wb] \S+ \S+ \d+ \d+)$", re.MULTILINE)


class ChessExpert:
    """Alpha-beta, ``depth`` plies plus ``qdepth`` plies of captures, deterministic."""

    depth, qdepth, endgame_depth = 2, 4, 3
    """Plies searched; plies of captures after them; plies once at most four pieces are left."""

    def __init__(self, observation_space: Any = None, action_space: Any = None, seed: Any = None):
        self.board: chess.Board | None = None

    def reset(self, seed: int | None = None) -> None:
        """Forget the game (the next FEN starts a new history)."""
        self.board = None

    def act(self, observation: str, info: dict[str, Any] | None = None) -> str:
        fen = (info or {}).get("fen")
        if not fen:
            found = _FEN.search(observation)
            if not found:
                return "resign"
            fen = found.group(1)
        board = self._sync(fen)
        if board.is_game_over():
            return "resign"
        depth = self.endgame_depth if len(board.piece_map()) <= 4 else self.depth
        move = best_move(board, depth, qdepth=self.qdepth)
        self.board = board.copy()
        self.board.push(move)
        return move.uci()

    def _sync(self, fen: str) -> chess.Board:
        """The position ``fen`` with the game's history when it follows from the last one."""
        board = self.board
        if board is not None:
            if board.fen() == fen:
                return board
            for move in board.legal_moves:
                board.push(move)
                if board.fen() == fen:
                    return board
                board.pop()
        try:
            return chess.Board(fen)
        except ValueError:
            return chess.Board()


class ChessEndgameExpert(ChessExpert):
    """The same search tuned for mating a lone king: deeper once few pieces are left."""

    depth, qdepth, endgame_depth = 3, 2, 4
