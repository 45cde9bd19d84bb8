"""TextChess-v0 and TextChessEndgames-v0: moves, the opponent, rewards, endgames, experts, fuzz."""

from __future__ import annotations

import chess
import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rlbench_suite  # noqa: F401  (registers the ids)
from rlbench_suite.envs.text.chess.env import ChessEndgamesEnv, ChessEnv
from rlbench_suite.envs.text.chess.experts import ChessEndgameExpert, ChessExpert
from rlbench_suite.envs.text.chess.game import ENDGAMES, parse_move, random_endgame
from tests.text_fuzz import commands, step_fuzzed

PROMOTE = "4k3/2P5/8/8/8/8/8/R3K2R w KQ - 0 1"
B_CLASH = "4k3/8/8/8/8/2p5/1P1B4/4K3 w - - 0 1"  # bxc3 (pawn) and Bxc3 (bishop) both legal


@pytest.mark.parametrize(
    "fen, command, san",
    [
        (chess.STARTING_FEN, "e2e4", "e4"),
        (chess.STARTING_FEN, "E2E4", "e4"),
        (chess.STARTING_FEN, "e4", "e4"),
        (chess.STARTING_FEN, "Nf3", "Nf3"),
        (chess.STARTING_FEN, "nf3", "Nf3"),
        (chess.STARTING_FEN, "Ng1-f3", "Nf3"),
        (chess.STARTING_FEN, "1. e4", "e4"),
        (chess.STARTING_FEN, "play  Nc3!", "Nc3"),
        (chess.STARTING_FEN, " \x00e2-e4\t", "e4"),
        (PROMOTE, "c8=Q", "c8=Q+"),
        (PROMOTE, "c8=Q+", "c8=Q+"),
        (PROMOTE, "c8q", "c8=Q+"),
        (PROMOTE, "c7c8n", "c8=N"),
        (PROMOTE, "C7C8R", "c8=R+"),
        (PROMOTE, "O-O", "O-O"),
        (PROMOTE, "0-0-0", "O-O-O"),
        (PROMOTE, "o-o", "O-O"),
        (PROMOTE, "e1g1", "O-O"),
        (PROMOTE, "e1c1", "O-O-O"),
        (B_CLASH, "bxc3", "bxc3"),
        (B_CLASH, "Bxc3", "Bxc3"),
        (B_CLASH, "bc3", "bxc3"),  # lowercase b: the pawn
        (B_CLASH, "BXC3", "Bxc3"),  # uppercase B: the bishop
        (B_CLASH, "b2c3", "bxc3"),
        (B_CLASH, "d2c3", "Bxc3"),
        (B_CLASH, "bb4", "b4"),  # lowercase b: the pawn (python-chess reads "bb4" so too)
        (B_CLASH, "be3", "Be3"),
        (B_CLASH, "bc1", "Bc1"),  # no pawn move reads that way: the bishop
        (chess.STARTING_FEN, "Nf3.", "Nf3"),  # a final full stop is ignored
        (chess.STARTING_FEN, "e4!", "e4"),
        (chess.STARTING_FEN, "Nf3?", "Nf3"),
        (PROMOTE, "c8=Q+.", "c8=Q+"),
        (PROMOTE, "c7c8q.", "c8=Q+"),
        ("6k1/5ppp/8/8/8/8/8/3Q2K1 w - - 0 1", "Qd8#", "Qd8#"),
        ("6k1/5ppp/8/8/8/8/8/3Q2K1 w - - 0 1", "Qd8#.", "Qd8#"),
        ("4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 2", "exd6 e.p.", "exd6"),
    ],
)
def test_moves_read_in_san_and_uci(fen, command, san):
    board = chess.Board(fen)
    move = parse_move(board, command)
    assert isinstance(move, chess.Move), move
    assert board.san(move) == san


@pytest.mark.parametrize(
    "fen, command",
    [(chess.STARTING_FEN, c) for c in ("e5", "e2e5", "Ke2", "--", "0000", "")]
    + [(PROMOTE, "c8"), (PROMOTE, "c7c8"), (PROMOTE, "Kg1")],
)
def test_illegal_moves_are_refused(fen, command):
    assert isinstance(parse_move(chess.Board(fen), command), str)


@pytest.mark.parametrize("command", ["c8", "c7c8", "C8."])
def test_a_promotion_without_a_piece_asks_for_one(command):
    reply = parse_move(chess.Board(PROMOTE), command)
    assert reply == f"{command.rstrip('.')} needs a promotion piece: c8=Q, c8=R, c8=B or c8=N"


def test_a_move_with_a_full_stop_is_played():
    env = ChessEnv()
    env.reset(seed=0)
    obs, _, _, _, info = env.step("Nf3.")
    assert info["valid"] and "You play Nf3." in obs


def test_illegal_command_gets_a_reply_zero_reward_and_no_move():
    env = ChessEnv()
    obs, info = env.reset(seed=0)
    for command in ("e5", "resign please", "\u2603", "Qxf7#"):
        obs, reward, terminated, truncated, info2 = env.step(command)
        assert (reward, terminated, truncated, info2["valid"]) == (0.0, False, False, False)
        assert info2["fen"] == info["fen"] and "legal moves: Na3, Nc3, Nf3, Nh3, a3, a4" in obs
        assert env.observation_space.contains(obs)
    assert info["admissible_commands"] == sorted(info["admissible_commands"])
    assert len(info["admissible_commands"]) == 20


def test_observation_shows_the_game():
    env = ChessEnv()
    env.reset(seed=3)
    obs, reward, _, _, info = env.step("e4")
    assert reward == 0.0 and info["valid"] and info["agent_moves"] == 1
    assert "You play e4. Opponent plays " in obs and "Moves: 1. e4 " in obs
    assert f"FEN: {info['fen']}" in obs and "To move: White (you)" in obs
    assert "  a b c d e f g h" in obs and "4 . . . . P . . ." in obs


def _replies(seed: int, color: str = "white") -> list[str]:
    env = ChessEnv(agent_color=color)
    obs, _ = env.reset(seed=seed)
    seen = [obs]
    for _ in range(4):
        seen.append(env.step(sorted(env.board.legal_moves, key=str)[0].uci())[0])
    return seen


def test_opponent_is_seeded():
    assert _replies(5) == _replies(5)
    assert len({tuple(_replies(seed)) for seed in range(8)}) >= 3


def test_agent_color():
    env = ChessEnv(agent_color="black")
    obs, info = env.reset(seed=1)
    assert info["agent_color"] == "black" and env.board.turn == chess.BLACK
    assert len(env.board.move_stack) == 1 and "Opponent plays" in obs
    env = ChessEnv(agent_color="random")
    colors = {env.reset(seed=seed)[1]["agent_color"] for seed in range(10)}
    assert colors == {"white", "black"}
    with pytest.raises(ValueError, match="accepted: white, black, random"):
        ChessEnv(agent_color="red")


def _at(fen: str, cls: type = ChessEnv, **kwargs) -> ChessEnv:
    env = cls(**kwargs)
    env.reset(seed=0)
    env.board = chess.Board(fen)
    env.agent = env.board.turn
    return env


def test_mate_wins():
    env = _at("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")
    obs, reward, terminated, _, info = env.step("Ra8#")
    assert (reward, terminated, info["success"], info["score"], info["result"]) == (
        1.0,
        True,
        True,
        1.0,
        "1-0",
    )
    assert "Checkmate: you win!" in obs and info["admissible_commands"] == []
    assert env.step("Kf1")[1:3] == (0.0, True)  # stepping on after the end


def test_being_mated_loses():
    env = _at("rnbqkbnr/pppp1ppp/8/4p3/8/5P2/PPPPP1PP/RNBQKBNR w KQkq - 0 2")
    obs, reward, terminated, _, info = env.step("g4")
    assert "Opponent plays Qh4#" in obs and "Checkmate: you lose." in obs
    assert (reward, terminated, info["success"], info["score"], info["result"]) == (
        -1.0,
        True,
        False,
        0.0,
        "0-1",
    )


def test_stalemate_draws_and_resign_loses():
    env = _at("k7/8/1K6/8/8/8/8/2Q5 w - - 0 1")
    obs, reward, terminated, _, info = env.step("Qc7")
    assert (reward, terminated, info["score"], info["result"]) == (0.0, True, 0.5, "1/2-1/2")
    assert "Draw." in obs
    env = _at(chess.STARTING_FEN)
    _, reward, terminated, _, info = env.step("Resign")
    assert (reward, terminated, info["result"], info["score"]) == (-1.0, True, "0-1", 0.0)
    for command in ("Resign.", "I resign", "i resign!"):
        env = _at(chess.STARTING_FEN)
        obs, reward, terminated, _, info = env.step(command)
        assert (reward, terminated, info["result"]) == (-1.0, True, "0-1"), command
        assert "Reply: You resign." in obs


@pytest.mark.parametrize("kind", [*ENDGAMES, "mixed"])
def test_endgames_are_legal_winning_setups(kind):
    rng, kinds = np.random.default_rng(0), set()
    for _ in range(40):
        board = random_endgame(rng, kind)
        strong = board.turn
        assert board.is_valid() and not board.is_game_over() and not board.is_check()
        pieces = sorted(p.symbol().upper() for p in board.piece_map().values())
        assert len(pieces) == 3 and pieces.count("K") == 2
        (extra,) = [p for p in board.piece_map().values() if p.piece_type != chess.KING]
        assert extra.color == strong
        kinds.add(f"K{extra.symbol().upper()}K")
        for move in board.legal_moves:
            board.push(move)
            assert not board.is_checkmate()
            board.pop()
    assert kinds == (set(ENDGAMES) if kind == "mixed" else {kind})


def test_an_endgame_draw_scores_zero():
    env = _at("k7/8/1K6/8/8/8/8/2Q5 w - - 0 1", ChessEndgamesEnv)
    _, reward, terminated, _, info = env.step("Qc7")
    assert (reward, terminated, info["score"], info["success"]) == (0.0, True, 0.0, False)


def test_endgame_env_reports_its_endgame():
    env = ChessEndgamesEnv(endgame="KRK")
    obs, info = env.reset(seed=4)
    assert info["endgame"] == "KRK" and "Chess endgame KRK" in obs
    assert env.board.turn == env.agent and info["agent_color"] == ("white", "black")[not env.agent]
    with pytest.raises(ValueError, match="accepted: KQK, KRK, KPK, mixed"):
        ChessEndgamesEnv(endgame="KBNK")


def _play(env_id: str, expert: type, seed: int, **kwargs) -> tuple[dict, int]:
    env = gym.make(env_id, **kwargs)
    policy = expert(env.observation_space, env.action_space)
    obs, info = env.reset(seed=seed)
    policy.reset(seed)
    steps, done = 0, False
    while not done:
        obs, _, terminated, truncated, info = env.step(policy.act(obs, info))
        steps, done = steps + 1, terminated or truncated
    return info, steps


def test_chess_expert_beats_the_opponent():
    # measured: 100% wins over seeds 10000-10099 (see the card); two short games here
    for seed in (1, 6):
        info, steps = _play("rlbench/TextChess-v0", ChessExpert, seed)
        assert info["success"] and steps < 60


@pytest.mark.parametrize("kind", ENDGAMES)
def test_endgame_expert_mates_in_time(kind):
    for seed in (0, 1):
        info, steps = _play("rlbench/TextChessEndgames-v0", ChessEndgameExpert, seed, endgame=kind)
        assert info["success"] and info["endgame"] == kind and steps <= 40


def test_long_rollouts_are_deterministic():
    def rollout() -> list:
        env = gym.make("rlbench/TextChessEndgames-v0")
        rng, out = np.random.default_rng(0), []
        info = env.reset(seed=11)[1]
        for _ in range(120):
            legal = info["admissible_commands"]
            step = env.step(legal[int(rng.integers(len(legal)))] if legal else "e4")
            out.append(step[:4])
            info = env.reset()[1] if step[2] or step[3] else step[4]
        return out

    assert rollout() == rollout()


def _legal_command(env: ChessEnv):
    """A strategy for a legal move of ``env``'s current position, in SAN or UCI."""

    def pick(i: int) -> str:
        moves = sorted(env.board.legal_moves, key=str) or [chess.Move.null()]
        move = moves[i % len(moves)]
        return move.uci() if i % 2 else env.board.san(move)

    return st.integers(0, 10**6).map(pick)


_CHESS, _ENDGAMES = ChessEnv(opponent_depth=1), ChessEndgamesEnv(opponent_depth=1)
_CHESS.reset(seed=0)
_ENDGAMES.reset(seed=0)


@settings(max_examples=10_000, deadline=None)
@given(commands(_legal_command(_CHESS)))
def test_fuzzed_commands_never_raise_chess(text):
    step_fuzzed(_CHESS, text, rewards=(-1.0, 0.0, 1.0))


@settings(max_examples=10_000, deadline=None)
@given(commands(_legal_command(_ENDGAMES)))
def test_fuzzed_commands_never_raise_endgames(text):
    step_fuzzed(_ENDGAMES, text, rewards=(-1.0, 0.0, 1.0))
