"""The chess games' core: reading moves, a small alpha-beta engine, results and endgames.

Built on python-chess (``import chess``). :func:`parse_move` reads a move in SAN or UCI,
tolerant of case (the one real clash, ``bxc3`` the b-pawn vs ``Bxc3`` the bishop, is settled
by the case typed: a lowercase ``b`` prefers the pawn, an uppercase ``B`` the bishop), of a
final full stop, exclamation or question mark (``Nf3.``) and of an ``e.p.`` mark; a
promotion typed without its piece (``e8``, ``e7e8``) gets a reply naming the choices.
:func:`is_resignation` reads ``resign`` and ``I resign``.
:func:`best_move` is a negamax alpha-beta search over material and piece-square tables
(Tomasz Michniewski's "Simplified Evaluation Function") with a mop-up term for lone-king
endgames, optional quiescence on captures, and seeded random choice among the moves within
``margin`` centipawns of the best. :func:`game_result` applies the automatic end rules, and
:func:`random_endgame` draws seeded winning endgame positions.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

import chess
import numpy as np

MATE = 100_000
INF = 10 * MATE
VALUES = {chess.PAWN: 100, chess.KNIGHT: 320, chess.BISHOP: 330, chess.ROOK: 500, chess.QUEEN: 900}
VALUES[chess.KING] = 0

# Piece-square tables, White's view, listed from a8 (index 0) to h1 (index 63).
_PST_ROWS = {
    chess.PAWN: "0 0 0 0 0 0 0 0 50 50 50 50 50 50 50 50 10 10 20 30 30 20 10 10 5 5 10 25 25 10 "
    "5 5 0 0 0 20 20 0 0 0 5 -5 -10 0 0 -10 -5 5 5 10 10 -20 -20 10 10 5 0 0 0 0 0 0 0 0",
    chess.KNIGHT: "-50 -40 -30 -30 -30 -30 -40 -50 -40 -20 0 0 0 0 -20 -40 -30 0 10 15 15 10 0 "
    "-30 -30 5 15 20 20 15 5 -30 -30 0 15 20 20 15 0 -30 -30 5 10 15 15 10 5 -30 -40 -20 0 5 "
    "5 0 -20 -40 -50 -40 -30 -30 -30 -30 -40 -50",
    chess.BISHOP: "-20 -10 -10 -10 -10 -10 -10 -20 -10 0 0 0 0 0 0 -10 -10 0 5 10 10 5 0 -10 "
    "-10 5 5 10 10 5 5 -10 -10 0 10 10 10 10 0 -10 -10 10 10 10 10 10 10 -10 -10 5 0 0 0 0 5 "
    "-10 -20 -10 -10 -10 -10 -10 -10 -20",
    chess.ROOK: "0 0 0 0 0 0 0 0 5 10 10 10 10 10 10 5 -5 0 0 0 0 0 0 -5 -5 0 0 0 0 0 0 -5 -5 0 "
    "0 0 0 0 0 -5 -5 0 0 0 0 0 0 -5 -5 0 0 0 0 0 0 -5 0 0 0 5 5 0 0 0",
    chess.QUEEN: "-20 -10 -10 -5 -5 -10 -10 -20 -10 0 0 0 0 0 0 -10 -10 0 5 5 5 5 0 -10 -5 0 5 "
    "5 5 5 0 -5 0 0 5 5 5 5 0 -5 -10 5 5 5 5 5 0 -10 -10 0 5 0 0 0 0 -10 -20 -10 -10 -5 -5 "
    "-10 -10 -20",
    chess.KING: "-30 -40 -40 -50 -50 -40 -40 -30 -30 -40 -40 -50 -50 -40 -40 -30 -30 -40 -40 "
    "-50 -50 -40 -40 -30 -30 -40 -40 -50 -50 -40 -40 -30 -20 -30 -30 -40 -40 -30 -30 -20 -10 "
    "-20 -20 -20 -20 -20 -20 -10 20 20 0 0 0 0 20 20 20 30 10 0 0 10 30 20",
}
_KING_END = (
    "-50 -40 -30 -20 -20 -30 -40 -50 -30 -20 -10 0 0 -10 -20 -30 -30 -10 20 30 30 20 -10 -30 "
    "-30 -10 30 40 40 30 -10 -30 -30 -10 30 40 40 30 -10 -30 -30 -10 20 30 30 20 -10 -30 -30 "
    "-30 0 0 0 0 -30 -30 -50 -30 -30 -30 -30 -30 -30 -50"
)
PST = {pt: tuple(int(v) for v in row.split()) for pt, row in _PST_ROWS.items()}
KING_END = tuple(int(v) for v in _KING_END.split())
assert all(len(t) == 64 for t in (*PST.values(), KING_END))


def _center_distance(square: int) -> int:
    """Manhattan distance from ``square`` to the nearest of the four centre squares."""
    f, r = chess.square_file(square), chess.square_rank(square)
    return max(3 - f, f - 4) + max(3 - r, r - 4)


_PIECES = (chess.PAWN, chess.KNIGHT, chess.BISHOP, chess.ROOK, chess.QUEEN)
_TABLES = {
    (color, pt): tuple(VALUES.get(pt, 0) + table[sq ^ (56 if color else 0)] for sq in range(64))
    for color in chess.COLORS
    for pt, table in [*((p, PST[p]) for p in _PIECES), (chess.KING, PST[chess.KING]), (0, KING_END)]
}
"""Value plus placement of a piece on each square (key piece type 0: the endgame king)."""


def evaluate(board: chess.Board) -> int:
    """A static score in centipawns for the side to move (positive: better for it)."""
    totals, officers = [0, 0], [0, 0]  # indexed by colour (Black 0, White 1)
    bitboards = (board.pawns, board.knights, board.bishops, board.rooks, board.queens)
    for color in chess.COLORS:
        own = board.occupied_co[color]
        for pt, bb in zip(_PIECES, bitboards, strict=True):
            mask = bb & own
            if mask:
                table = _TABLES[(color, pt)]
                totals[color] += sum(table[sq] for sq in chess.scan_forward(mask))
                if pt != chess.PAWN:
                    officers[color] += VALUES[pt] * chess.popcount(mask)
    king_table = 0 if officers[0] + officers[1] <= 1300 else chess.KING
    kings = [board.king(chess.BLACK), board.king(chess.WHITE)]
    for color in chess.COLORS:
        if kings[color] is not None:
            totals[color] += _TABLES[(color, king_table)][kings[color]]
    for strong in chess.COLORS:  # mop-up: drive a lone king to the edge, bring the king close
        ks, kw = kings[strong], kings[not strong]
        if ks is None or kw is None or officers[strong] < VALUES[chess.ROOK]:
            continue
        if board.occupied_co[not strong] == chess.BB_SQUARES[kw]:
            near = abs(chess.square_file(ks) - chess.square_file(kw))
            near += abs(chess.square_rank(ks) - chess.square_rank(kw))
            totals[strong] += 10 * _center_distance(kw) + 4 * (14 - near) + 200
    score = totals[chess.WHITE] - totals[chess.BLACK]
    return score if board.turn == chess.WHITE else -score


def _order_key(board: chess.Board, move: chess.Move) -> int:
    """Captures first (most valuable victim, least valuable attacker), then promotions."""
    key = 0
    if board.is_capture(move):
        victim = board.piece_type_at(move.to_square) or chess.PAWN  # en passant
        attacker = board.piece_type_at(move.from_square) or chess.PAWN
        key -= 10 * VALUES[victim] - VALUES[attacker] + 10_000
    if move.promotion:
        key -= VALUES[move.promotion]
    return key


def ordered_moves(board: chess.Board, moves: Iterable[chess.Move] | None = None) -> list:
    """``moves`` (default: the legal moves) sorted for alpha-beta, ties in UCI order."""
    listed = sorted(board.legal_moves if moves is None else moves, key=chess.Move.uci)
    return sorted(listed, key=lambda m: _order_key(board, m))


def _terminal(board: chess.Board) -> int | None:
    """0 for a drawn position (repeated, fifty moves, insufficient material), else None."""
    if board.is_repetition(2) or board.halfmove_clock >= 100 or board.is_insufficient_material():
        return 0
    return None


def _leaf_end(board: chess.Board, ply: int) -> int | None:
    """The score of a mate, or of a stalemate of a side left with only king and pawns."""
    if board.is_check():
        return None if any(board.generate_legal_moves()) else -(MATE - ply)
    own = board.occupied_co[board.turn]
    if own & ~(board.pawns | board.kings) or any(board.generate_legal_moves()):
        return None
    return 0


def _quiesce(board: chess.Board, alpha: int, beta: int, ply: int, depth: int) -> int:
    """Stand pat or capture on (``depth`` more plies at most)."""
    ended = _leaf_end(board, ply)
    if ended is not None:
        return ended
    stand = evaluate(board)
    if stand >= beta or depth <= 0:
        return stand
    alpha = max(alpha, stand)
    captures = list(board.generate_legal_captures())
    seventh = chess.BB_RANK_7 if board.turn == chess.WHITE else chess.BB_RANK_2
    runners = board.pawns & board.occupied_co[board.turn] & seventh
    if runners:
        captures += [m for m in board.generate_legal_moves(runners) if not board.is_capture(m)]
    for move in ordered_moves(board, captures):
        board.push(move)
        score = -_quiesce(board, -beta, -alpha, ply + 1, depth - 1)
        board.pop()
        if score >= beta:
            return score
        alpha = max(alpha, score)
    return alpha


def _search(board: chess.Board, depth: int, alpha: int, beta: int, ply: int, qdepth: int) -> int:
    """Negamax alpha-beta (fail-soft) from the side to move's view."""
    drawn = _terminal(board)
    if drawn is not None:
        return drawn
    if depth <= 0:
        if qdepth > 0:
            return _quiesce(board, alpha, beta, ply, qdepth)
        ended = _leaf_end(board, ply)
        return evaluate(board) if ended is None else ended
    moves = ordered_moves(board)
    if not moves:
        return -(MATE - ply) if board.is_check() else 0
    best = -INF
    for move in moves:
        board.push(move)
        score = -_search(board, depth - 1, -beta, -alpha, ply + 1, qdepth)
        board.pop()
        if score > best:
            best = score
            alpha = max(alpha, score)
            if alpha >= beta:
                break
    return best


def best_move(
    board: chess.Board,
    depth: int,
    rng: np.random.Generator | None = None,
    margin: int = 0,
    qdepth: int = 0,
) -> chess.Move:
    """The side to move's choice: a ``depth``-ply search (then ``qdepth`` plies of captures).

    With ``rng``, a uniform pick among the moves scoring within ``margin`` centipawns of the
    best (never when a mate is in sight); without, the first best move in search order.
    """
    moves = ordered_moves(board)
    if not moves:
        raise ValueError(f"no legal moves in {board.fen()}")
    scores, best = [], -INF
    for move in moves:
        board.push(move)
        score = -_search(board, depth - 1, -INF, -(best - margin - 1), 1, qdepth)
        board.pop()
        scores.append(score)
        best = max(best, score)
    keep = margin if abs(best) < MATE // 2 else 0
    near = [m for m, s in zip(moves, scores, strict=True) if s >= best - keep]
    if rng is None or len(near) == 1:
        return near[0]
    return near[int(rng.integers(len(near)))]


def game_result(board: chess.Board) -> str | None:
    """``"1-0"``, ``"0-1"``, ``"1/2-1/2"`` or None while the game goes on.

    Checkmate wins; stalemate, insufficient material, a threefold repetition and fifty moves
    (100 plies) without a capture or pawn move are draws, all applied automatically.
    """
    if board.is_checkmate():
        return "0-1" if board.turn == chess.WHITE else "1-0"
    if (
        board.is_stalemate()
        or board.is_insufficient_material()
        or board.halfmove_clock >= 100
        or board.is_repetition(3)
    ):
        return "1/2-1/2"
    return None


# ----------------------------------------------------------------------------- reading moves
_PREFIX = re.compile(r"^(?:(?:play|move)\s+)?(?:\d+\s*\.+\s*)?", re.IGNORECASE)
_DROP = str.maketrans({c: None for c in "x+#=-:!? "})
_TRAIL = re.compile(r"(?:\s*e\.p\.?)?[\s.!?]*$", re.IGNORECASE)
"""An en-passant mark and a final full stop, exclamation or question mark ("Nf3.")."""
_RESIGN = re.compile(r"^(?:i\s+)?resign[.!]*$", re.IGNORECASE)


def is_resignation(command: str) -> bool:
    """Whether ``command`` resigns: "resign" or "I resign", maybe with a full stop."""
    return bool(_RESIGN.match(clean_command(command)))


def clean_command(action: str) -> str:
    """``action`` with control and space characters as single spaces, case kept."""
    kept = "".join(" " if unicodedata.category(c).startswith(("C", "Z")) else c for c in action)
    return " ".join(kept.split())


def _key(text: str) -> str:
    """A case- and punctuation-free form: ``Nxf3+`` -> ``nf3``, ``0-0`` -> ``oo``."""
    text = text.lower().replace("e.p.", "").replace("0", "o")
    return text.translate(_DROP)


def san_table(board: chess.Board) -> dict[chess.Move, str]:
    """Every legal move and its SAN, in UCI order."""
    return {m: board.san(m) for m in sorted(board.legal_moves, key=chess.Move.uci)}


def legal_sans(board: chess.Board) -> list[str]:
    """The legal moves in SAN, sorted."""
    return sorted(san_table(board).values())


_MOVE_CHARS = frozenset("abcdefgh12345678qrbnko")


def parse_move(
    board: chess.Board, action: str, sans: dict[chess.Move, str] | None = None
) -> chess.Move | str:
    """The legal move ``action`` names (SAN or UCI, see the module docstring), else the reason.

    Exact SAN is tried first; then a case- and punctuation-insensitive match against every
    legal move's SAN, long algebraic (``Ng1-f3``) and UCI forms. ``sans`` is the position's
    :func:`san_table`, when the caller has it.
    """
    text = _TRAIL.sub("", _PREFIX.sub("", clean_command(action)).strip())
    shown = text if len(text) <= 40 else text[:37] + "..."
    key = _key(text)
    if not key or not _MOVE_CHARS.issuperset(key) or len(key) > 8:
        return f"Unreadable move {shown!r}" if text else "Empty command"
    sans = san_table(board) if sans is None else sans
    if " " not in text:
        try:
            move = board.parse_san(text)
        except ValueError:
            move = None
        if move is not None and move in sans:
            return move
    found = []
    for move, san in sans.items():
        piece = board.piece_type_at(move.from_square) or chess.PAWN
        lan = ("" if piece == chess.PAWN else chess.piece_symbol(piece)) + move.uci()
        if key in (move.uci(), _key(san), lan):
            found.append(move)
    if len(found) > 1:  # bxc3: a lowercase b prefers the pawn, an uppercase B the bishop
        wanted = chess.PAWN if text[0] == "b" else chess.BISHOP if text[0] == "B" else None
        found = [m for m in found if board.piece_type_at(m.from_square) == wanted] or found
    if len(found) == 1:
        return found[0]
    if found:
        options = ", ".join(sorted(sans[m] for m in found))
        return f"Ambiguous move {shown!r} (could be {options})"
    promotions = sorted(
        (
            m
            for m in sans
            if m.promotion and key + chess.piece_symbol(m.promotion) in (m.uci(), _key(sans[m]))
        ),
        key=lambda m: "qrbn".index(chess.piece_symbol(m.promotion or chess.QUEEN)),
    )
    if promotions:
        names = [sans[m].rstrip("+#") for m in promotions]
        return f"{shown} needs a promotion piece: {', '.join(names[:-1])} or {names[-1]}"
    return f"Illegal move {shown!r}"


# ----------------------------------------------------------------------------- endgames
ENDGAMES = ("KQK", "KRK", "KPK")
_PIECE = {"KQK": chess.QUEEN, "KRK": chess.ROOK, "KPK": chess.PAWN}


def _kpk_wins(pawn: int, strong_king: int, weak_king: int) -> bool:
    """A sufficient rule for a won king-and-pawn ending, the stronger side (White) to move.

    The pawn (files b-g, ranks 2-6) runs home outside the defending king's reach (rule of
    the square with a move to spare), or the attacking king stands on a key square while the
    defending king does not touch the pawn.
    """
    f, r = chess.square_file(pawn), chess.square_rank(pawn)
    if not (1 <= f <= 6 and 1 <= r <= 5):
        return False
    ahead = [chess.square(f, rank) for rank in range(r + 1, 8)]
    if strong_king in ahead or weak_king in ahead[:1]:
        return False
    pawn_moves = 7 - r - (r == 1)
    if chess.square_distance(weak_king, chess.square(f, 7)) >= pawn_moves + 2:
        return True
    key_ranks = (r + 2,) if r <= 3 else (r + 1, r + 2)
    key_squares = {chess.square(kf, kr) for kf in (f - 1, f, f + 1) for kr in key_ranks if kr < 8}
    return strong_king in key_squares and chess.square_distance(weak_king, pawn) >= 2


def random_endgame(rng: np.random.Generator, kind: str = "mixed") -> chess.Board:
    """A seeded, legal endgame (``KQK``, ``KRK``, ``KPK`` or ``mixed``) that the stronger side,
    to move, can win: not over, the weaker king not in check, no mate in one, no piece hanging
    to the lone king, and for KPK a win by :func:`_kpk_wins`."""
    if kind == "mixed":
        kind = ENDGAMES[int(rng.integers(len(ENDGAMES)))]
    if kind not in _PIECE:
        raise ValueError(f"unknown endgame {kind!r}; accepted: {', '.join(ENDGAMES)}, mixed")
    strong = bool(rng.integers(2))
    while True:
        sk, wk, piece = (int(s) for s in rng.choice(64, size=3, replace=False))
        if kind == "KPK" and not _kpk_wins(piece, sk, wk):
            continue
        if strong == chess.BLACK:  # mirror a White position for Black
            sk, wk, piece = (chess.square_mirror(s) for s in (sk, wk, piece))
        board = chess.Board(None)
        board.set_piece_at(sk, chess.Piece(chess.KING, strong))
        board.set_piece_at(wk, chess.Piece(chess.KING, not strong))
        board.set_piece_at(piece, chess.Piece(_PIECE[kind], strong))
        board.turn = strong
        if not board.is_valid() or board.is_game_over() or board.is_check():
            continue
        defended = board.is_attacked_by(strong, piece)
        if chess.square_distance(wk, piece) == 1 and not defended:
            continue
        if any(_mates(board, m) for m in board.legal_moves):
            continue
        return board


def _mates(board: chess.Board, move: chess.Move) -> bool:
    board.push(move)
    try:
        return board.is_checkmate()
    finally:
        board.pop()
