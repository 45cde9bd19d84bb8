"""2x2 matrix games: the ordinal topology, play, exact solutions, the batched backend, policies."""

from __future__ import annotations

import itertools
import shutil
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("pettingzoo")
from gymnasium.vector import AutoresetMode
from pettingzoo.test import parallel_api_test

from rlbench_suite.envs.multiagent.matrix.agents import (
    BestResponsePolicy,
    NashPolicy,
    PrisonersDilemmaBestResponse,
    TitForTat,
)
from rlbench_suite.envs.multiagent.matrix.game import AGENTS, MatrixGameEnv
from rlbench_suite.envs.multiagent.matrix.solve import (
    expected_payoffs,
    exploitability,
    nash_equilibria,
)
from rlbench_suite.envs.multiagent.matrix.topology import (
    NAMED_GAMES,
    ORDINAL_CLASSICS,
    all_games,
    canonical,
    get_game,
    is_symmetric,
    ordinal_index,
    relabellings,
    swap_players,
)
from tests.conftest import REPO, load_script

MATRIX_CARDS = REPO / "scripts" / "matrix_cards.py"


def all_ordinal_payoffs() -> list[np.ndarray]:
    perms = list(itertools.permutations(range(1, 5)))
    return [np.array(r + c).reshape(2, 2, 2) for r in perms for c in perms]


# --- the topology -------------------------------------------------------------------------


def test_there_are_144_distinct_canonical_games() -> None:
    games = all_games()
    assert len(games) == 144
    assert [g.index for g in games] == list(range(144))
    assert [g.name for g in games] == [f"g{i:03d}" for i in range(144)]
    assert len({g.payoffs for g in games}) == 144
    for g in games:
        assert canonical(g.matrix) == tuple(g.matrix.ravel().astype(int))  # canonical is a fixpoint


def test_every_ordinal_payoff_pair_is_in_exactly_one_class_of_four_relabellings() -> None:
    classes: dict[int, list[np.ndarray]] = {}
    for m in all_ordinal_payoffs():
        classes.setdefault(ordinal_index(m), []).append(m)
    assert sorted(classes) == list(range(144))
    for members in classes.values():
        assert len(members) == 4
        first = members[0]
        for m in members:  # related by row/column swaps
            assert any(np.array_equal(m, g) for g in relabellings(first))
        # the relabelling group acts freely: no fixed points, four distinct members
        assert len({m.tobytes() for m in relabellings(first)}) == 4


def test_player_swap_gives_12_symmetric_games_and_66_twin_pairs() -> None:
    games = all_games()
    twins = {g.index: ordinal_index(swap_players(g.matrix)) for g in games}
    symmetric = [i for i, j in twins.items() if i == j]
    assert len(symmetric) == 12
    assert [g.index for g in games if g.symmetric] == symmetric
    assert all(twins[twins[i]] == i for i in twins)  # an involution
    assert (144 - len(symmetric)) // 2 == 66


def test_classics_are_symmetric_ordinal_classes_of_their_cardinal_forms() -> None:
    for name, form in ORDINAL_CLASSICS.items():
        ordinal = get_game(f"{name}_ordinal")
        assert ordinal.classic == name and ordinal.symmetric
        assert ordinal.index == ordinal_index(form) == NAMED_GAMES[name].index
    assert NAMED_GAMES["matching_pennies"].index is None  # ties: not strict ordinal
    assert len({get_game(f"{n}_ordinal").index for n in ORDINAL_CLASSICS}) == 4


def test_game_lookup_and_errors() -> None:
    assert get_game(17) is get_game("g017")
    assert get_game("chicken").actions == ("swerve", "straight")
    with pytest.raises(ValueError, match="did you mean: prisoners_dilemma"):
        get_game("prisoner_dilemma")
    with pytest.raises(ValueError, match=r"0\.\.143"):
        get_game(144)
    with pytest.raises(ValueError, match="rounds must be an integer >= 1"):
        MatrixGameEnv(rounds=0)
    with pytest.raises(ValueError, match="history must be an integer >= 0"):
        MatrixGameEnv(history=-1)
    with pytest.raises(ValueError, match="ties"):
        ordinal_index(NAMED_GAMES["matching_pennies"].matrix)
    assert is_symmetric(NAMED_GAMES["prisoners_dilemma"].matrix)


# --- play -------------------------------------------------------------------------------


def test_one_shot_rewards_are_the_payoffs() -> None:
    for game in ("prisoners_dilemma", "battle_of_the_sexes", "g101"):
        matrix = get_game(game).matrix
        for a0, a1 in itertools.product((0, 1), repeat=2):
            env = MatrixGameEnv(game)
            env.reset(seed=0)
            _, rewards, terms, truncs, _ = env.step({"player_0": a0, "player_1": a1})
            assert rewards == {"player_0": matrix[0, a0, a1], "player_1": matrix[1, a0, a1]}
            assert all(terms.values()) and not any(truncs.values()) and env.agents == []


def test_repeated_play_observes_history_from_each_perspective() -> None:
    env = MatrixGameEnv("prisoners_dilemma", rounds=3, history=2)
    obs, _ = env.reset(seed=0)
    assert obs["player_0"].shape == (9,) and obs["player_0"][-1] == 1.0
    assert not obs["player_0"][:8].any()
    env.step({"player_0": 1, "player_1": 0})  # player_0 defects on a cooperator
    obs, rewards, terms, _, _ = env.step({"player_0": 0, "player_1": 0})
    assert rewards == {"player_0": 3.0, "player_1": 3.0} and not any(terms.values())
    # most recent first: (own 0, other 0), then (own 1, other 0) / (own 0, other 1)
    np.testing.assert_array_equal(obs["player_0"][:8], [1, 0, 0, 0, 0, 0, 1, 0])
    np.testing.assert_array_equal(obs["player_1"][:8], [1, 0, 0, 0, 0, 1, 0, 0])
    assert obs["player_0"][-1] == pytest.approx(1 / 3)
    *_, terms, _, _ = env.step({"player_0": 0, "player_1": 0})
    assert all(terms.values())
    with pytest.raises(ValueError, match="actions must be 0 or 1"):
        env.reset()
        env.step({"player_0": 2, "player_1": 0})


def test_parallel_api_on_an_ordinal_game_without_history() -> None:
    parallel_api_test(MatrixGameEnv(5, rounds=4, history=0), num_cycles=50)


# --- exact solutions --------------------------------------------------------------------


def test_prisoners_dilemma_equilibrium() -> None:
    assert nash_equilibria("prisoners_dilemma") == [(0.0, 0.0)]  # both defect
    assert exploitability("prisoners_dilemma", 0.0, 0.0) == 0.0
    assert exploitability("prisoners_dilemma", 1.0, 1.0) == pytest.approx(4.0)  # 2 each


def test_matching_pennies_and_battle_of_the_sexes_equilibria() -> None:
    assert nash_equilibria("matching_pennies") == [(0.5, 0.5)]
    assert exploitability("matching_pennies", [0.5, 0.5], 0.5) == 0.0
    assert exploitability("matching_pennies", 1.0, 0.5) == pytest.approx(1.0)
    bos = nash_equilibria("battle_of_the_sexes")
    assert bos[:2] == [(1.0, 1.0), (0.0, 0.0)] and bos[2] == pytest.approx((0.75, 0.25))
    assert expected_payoffs("battle_of_the_sexes", 1.0, 1.0).tolist() == [3.0, 2.0]


def test_exploitability_vanishes_exactly_at_the_equilibria_of_every_game() -> None:
    rng = np.random.default_rng(0)
    for game in [*all_games(), *NAMED_GAMES.values()]:
        equilibria = nash_equilibria(game)
        assert equilibria, game.name  # every 2x2 game has one
        for x, y in equilibria:
            assert exploitability(game, x, y) == pytest.approx(0.0, abs=1e-12)
        for x, y in rng.random((5, 2)):  # random profiles are almost never equilibria
            assert exploitability(game, x, y) > 0 or (x, y) in equilibria
    with pytest.raises(ValueError, match="mixed strategy"):
        exploitability("chicken", 1.5, 0.5)


# --- the batched backend ----------------------------------------------------------------


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_batched_equals_unbatched(mode: AutoresetMode) -> None:
    from rlbench_suite.envs.multiagent.matrix.vector import MatrixGameVectorEnv

    games, rounds = 5, 3
    venv = MatrixGameVectorEnv(games, "stag_hunt", rounds, history=2, autoreset_mode=mode)
    envs = [MatrixGameEnv("stag_hunt", rounds, history=2) for _ in range(games)]
    obs, _ = venv.reset(seed=1)
    singles = [env.reset(seed=1)[0] for env in envs]
    rng = np.random.default_rng(0)
    for _ in range(10):
        expected = np.concatenate([[o[a] for a in AGENTS] for o in singles])
        np.testing.assert_array_equal(obs, expected)
        actions = rng.integers(0, 2, venv.num_envs)
        obs, rewards, terms, truncs, info = venv.step(actions)
        restarted = [not env.agents for env in envs]  # NEXT_STEP: these slots reset now
        for g, env in enumerate(envs):
            if mode == AutoresetMode.NEXT_STEP and restarted[g]:
                singles[g] = env.reset()[0]
                assert rewards[2 * g : 2 * g + 2].tolist() == [0.0, 0.0]
                continue
            o, r, t, _, _ = env.step(dict(zip(AGENTS, actions[2 * g : 2 * g + 2], strict=True)))
            assert rewards[2 * g : 2 * g + 2].tolist() == [r[a] for a in AGENTS]
            assert terms[2 * g : 2 * g + 2].tolist() == [t[a] for a in AGENTS]
            singles[g] = o
            if mode == AutoresetMode.SAME_STEP and not env.agents:
                np.testing.assert_array_equal(info["final_obs"][2 * g], o["player_0"])
                singles[g] = env.reset()[0]
        assert not truncs.any()


def test_batched_steps_4096_games() -> None:
    from rlbench_suite.envs.multiagent.matrix.vector import MatrixGameVectorEnv

    venv = MatrixGameVectorEnv(4096, "chicken", rounds=10, history=3)
    obs, _ = venv.reset(seed=0)
    assert obs.shape == (8192, 13) and venv.single_observation_space.contains(obs[0])
    total = np.zeros(8192)
    for _ in range(10):
        obs, rewards, terms, _, _ = venv.step(venv.action_space.sample())
        total += rewards
    assert terms.all() and np.isin(rewards, (0, 1, -1, -10)).all()


# --- policies ---------------------------------------------------------------------------


def test_policies() -> None:
    assert PrisonersDilemmaBestResponse().act(None, {}) == 1  # defect
    assert BestResponsePolicy("stag_hunt", opponent=1.0).act(None, {}) == 0  # stag vs stag
    assert BestResponsePolicy("battle_of_the_sexes", player=1).act(None, {}) == 1
    nash = NashPolicy("chicken", equilibrium=2, seed=0)
    draws = [nash.act(None, {}) for _ in range(2000)]
    assert np.mean(draws) == pytest.approx(0.1, abs=0.03)
    nash.reset(seed=0)
    assert [nash.act(None, {}) for _ in range(2000)] == draws
    with pytest.raises(ValueError, match=r"equilibrium must be in 0\.\.0"):
        NashPolicy("prisoners_dilemma", equilibrium=1)

    env = MatrixGameEnv("prisoners_dilemma", rounds=4)
    obs, _ = env.reset(seed=0)
    tft = TitForTat(env.observation_space("player_0"))
    opponent_moves = [1, 0, 0, 1]
    played = []
    for move in opponent_moves:
        played.append(tft.act(obs["player_0"], {}))
        obs, *_ = env.step({"player_0": played[-1], "player_1": move})
    assert played == [0, 1, 0, 0]
    with pytest.raises(ValueError, match="history >= 1"):
        TitForTat(MatrixGameEnv(history=0).observation_space("player_0"))


def _matrix_cards_script():
    """``scripts/matrix_cards.py``, the cards' generator, loaded from its file."""
    return load_script("matrix_cards")


def test_the_catalog_lists_all_144_games_from_generated_cards():
    import tomlkit

    from rlbench_suite.core.catalog import card_paths, cards

    generator = _matrix_cards_script()
    card_document, card_id = generator.card_document, generator.card_id

    listed = {c.id: c for c in cards().values() if "robinson-goforth" in c.tags}
    assert len(listed) == 144
    for game in all_games():
        card = listed[card_id(game)]
        assert card.kwargs["game"] == game.name and "matrix-game" in card.tags
        assert ("symmetric" in card.tags) == game.symmetric
        assert card.reference.random is not None and card.reference.expert is not None
        # the file is exactly what the generator writes (plus the measured references)
        text = card_paths()[card.id].read_text(encoding="utf-8")
        assert tomlkit.dumps(card_document(game, tomlkit.parse(text))) == text


def test_the_card_script_runs_and_regenerates_the_cards_unchanged(tmp_path):
    folder = tmp_path / "matrix-games"
    shutil.copytree(REPO / "envs" / "multiagent" / "matrix-games", folder)
    before = {p.name: p.read_text(encoding="utf-8") for p in folder.glob("*.toml")}
    proc = subprocess.run([sys.executable, str(MATRIX_CARDS), str(folder)],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("144 cards written")
    assert {p.name: p.read_text(encoding="utf-8") for p in folder.glob("*.toml")} == before


def test_best_response_to_uniform_reads_the_game_from_info():
    from rlbench_suite.envs.multiagent.matrix.agents import BestResponseToUniform
    from rlbench_suite.envs.multiagent.matrix.solve import best_response

    policy = BestResponseToUniform()
    for game in all_games()[::7]:
        for player in (0, 1):
            info = {"game": game.name, "player": player}
            assert policy.act(None, info) == best_response(game, player, 0.5)
    with pytest.raises(ValueError, match="needs info"):
        policy.act(None, {})
