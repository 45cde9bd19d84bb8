"""Card loading and validation: the suite's cards and malformed ones."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from rlbench_suite.core.cards import CardError, EnvCard, load_card, load_cards
from rlbench_suite.core.catalog import UnknownEnvError, cards, get_card, select_cards

GOOD = """
id = "rlbench/Toy-v0"
family = "classic"
api = "gymnasium"
entry_point = "gymnasium.envs.classic_control.cartpole:CartPoleEnv"
primary_metric = "return"
description = "A toy card used by the tests of card validation."
"""


def write(tmp_path: Path, text: str, name: str = "card.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_suite_catalog_is_large_and_varied():
    catalog = cards()
    assert len(catalog) >= 30
    families = {c.family for c in catalog.values()}
    assert len(families) >= 3
    assert {c.id for c in select_cards(suite="mujoco-v5")} >= {
        f"rlbench/{n}-v5"
        for n in (
            "HalfCheetah",
            "Hopper",
            "Walker2d",
            "Ant",
            "Humanoid",
            "Swimmer",
            "Reacher",
            "Pusher",
            "InvertedPendulum",
            "InvertedDoublePendulum",
        )
    }
    assert len(select_cards(suite="minigrid")) >= 8
    assert len(select_cards(family="multiagent")) >= 3
    assert len(select_cards(suite="classic-control")) == 5


def test_every_card_has_a_measured_random_score():
    for card in cards().values():
        ref = card.reference.random
        assert ref is not None, card.id
        assert ref.policy == "random"
        # measured over seeded episodes, or exact (computed in closed form: matrix games)
        assert ref.method == "exact" or ref.episodes == len(ref.seeds) >= 50
        assert math.isfinite(ref.value)


def test_good_card_loads(tmp_path):
    card = load_card(write(tmp_path, GOOD))
    assert card.id == "rlbench/Toy-v0"
    assert card.name == "Toy-v0"
    assert not card.is_multiagent


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            ('family = "classic"', 'family = "arcade"'),
            ["field 'family'", "'classic'", "'robotics'"],
        ),
        (
            ('primary_metric = "return"', 'primary_metric = "reward"'),
            ["field 'primary_metric'", "'success_rate'"],
        ),
        (('id = "rlbench/Toy-v0"', 'id = "Toy"'), ["field 'id'", "rlbench/Name-vN"]),
        (
            ('entry_point = "gymnasium', 'entry_point = "not an entry point'),
            ["field 'entry_point'"],
        ),
        (('api = "gymnasium"', 'api = "gym"'), ["field 'api'", "'pettingzoo-parallel'"]),
        (
            ('primary_metric = "return"', 'primary_metric = "return"\nmax_episode_steps = -5'),
            ["field 'max_episode_steps'", "greater than 0"],
        ),
        (
            ('primary_metric = "return"', 'primary_metric = "return"\ncolour = "red"'),
            ["field 'colour'", "accepted fields", "primary_metric"],
        ),
        (
            ('primary_metric = "return"', 'primary_metric = "return"\nextra = "gpu"'),
            ["field 'extra'", "'robotics'"],
        ),
        (
            (
                'primary_metric = "return"\n',
                'primary_metric = "return"\n[[wrappers]]\nname = "Nope-v0"\n',
            ),
            [
                "field 'wrappers.0.name'",
                "unknown wrapper 'Nope-v0'",
                "rlbench/EpisodeStatistics-v0",
            ],
        ),
        (
            ('primary_metric = "return"\n', 'primary_metric = "return"\n[success]\nkind = "won"\n'),
            ["field 'success.kind'", "'return_at_least'"],
        ),
    ],
)
def test_malformed_card_names_file_field_and_accepted(tmp_path, change, expected):
    path = write(tmp_path, GOOD.replace(*change))
    with pytest.raises(CardError) as info:
        load_card(path)
    message = str(info.value)
    assert str(path) in message
    for part in expected:
        assert part in message


def test_missing_field_is_named(tmp_path):
    path = write(tmp_path, GOOD.replace('family = "classic"\n', ""))
    with pytest.raises(CardError, match=r"field 'family': required field is missing"):
        load_card(path)


def test_invalid_toml_names_file_and_line(tmp_path):
    path = write(tmp_path, GOOD + "\nthis is = = not toml\n")
    with pytest.raises(CardError, match=r"card\.toml: not valid TOML: .*line 9"):
        load_card(path)


def test_duplicate_ids_name_both_files(tmp_path):
    write(tmp_path, GOOD, "a.toml")
    write(tmp_path, GOOD, "b.toml")
    with pytest.raises(
        CardError, match=r"b\.toml: id 'rlbench/Toy-v0' is already defined in .*a\.toml"
    ):
        load_cards(tmp_path)


def test_unknown_id_suggests_closest():
    with pytest.raises(UnknownEnvError) as info:
        get_card("rlbench/HalfCheeta-v5")
    assert "Did you mean: rlbench/HalfCheetah-v5" in str(info.value)
    with pytest.raises(UnknownEnvError, match="rlbench/MiniGrid-DoorKey-8x8-v0"):
        get_card("minigrid-doorkey-8x8-v0")
    with pytest.raises(UnknownEnvError, match=r"'rlbench/KitchenOwnContribution-v0' is a "
                       r"wrapper, not an environment id: .*docs/wrappers\.md"):  # fmt: skip
        get_card("rlbench/KitchenOwnContribution-v0")


def test_id_forms_accepted():
    assert get_card("CartPole-v1").id == "rlbench/CartPole-v1"
    assert get_card("rlbench_suite:rlbench/CartPole-v1").id == "rlbench/CartPole-v1"


def test_normalized_score_scale():
    card = get_card("rlbench/CartPole-v1")
    data = card.model_dump()
    data["reference"]["expert"] = None
    assert math.isnan(EnvCard.model_validate(data).normalized_score(100.0))
    data["reference"]["expert"] = {**data["reference"]["random"], "value": 500.0, "policy": "x"}
    full = EnvCard.model_validate(data)
    random = full.reference.random.value
    assert full.normalized_score(random) == pytest.approx(0.0)
    assert full.normalized_score(500.0) == pytest.approx(100.0)
    assert full.normalized_score((random + 500.0) / 2) == pytest.approx(50.0)


REF = """
[reference.random]
value = 1.0
policy = "random"
episodes = 2
seeds = [1, 2]
suite_version = "0.1.0"
measured = 2026-11-22
"""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (GOOD + REF.replace("episodes = 2", "episodes = 7"), "7 episodes but 2 seeds"),
        (GOOD + REF.replace("2026-11-22", '"yesterday"'), "field 'reference.random.measured'"),
        (GOOD + '[success]\nkind = "return_at_least"\n', "needs a 'threshold'"),
        (GOOD.replace('"return"', '"success_rate"'), "needs a [success] rule"),
        (GOOD + 'agent = "player_0"\n', "'agent' and 'opponents' are only for multi-agent"),
        (GOOD + 'opponents = "random"\n', "'agent' and 'opponents' are only for multi-agent"),
        (
            GOOD.replace("\nfamily", '\nbatched_entry_point = "a.b:C"\nfamily'),
            "'batched_entry_point' is only for multi-agent cards",
        ),
        (GOOD.replace('"gymnasium"', '"pettingzoo-aec"'), "needs 'agent'"),
        (
            GOOD.replace('"return"', '"win_rate"')
            .replace("\nfamily", '\ntags = ["competitive"]\nfamily')
            + '[success]\nkind = "info"\nkey = "won"\n',
            "needs an [outcome] rule (draw_within = ...) telling a drawn episode from a lost one",
        ),
        (
            GOOD.replace('"return"', '"win_rate"')
            + '[success]\nkind = "info"\nkey = "won"\n[outcome]\ndraw_within = 0.5\n' + REF,
            "reference.random: a card with an [outcome] rule records the 'draws'",
        ),
        (GOOD + "[outcome]\ndraw_within = 0.5\n", "an [outcome] rule is for cards whose"),
        (GOOD + REF.replace("episodes = 2", "episodes = 2\ndraws = 3"), "3 draws in 2 episodes"),
        (
            GOOD + '[[wrappers]]\nname = "rlbench/EpisodeStatistics-v0"\ncolour = 1\n',
            "accepted fields here: name, kwargs (in TOML, keys written after a [table] header",
        ),
    ],
)
def test_inconsistent_cards_are_refused(tmp_path, text, expected):
    with pytest.raises(CardError) as info:
        load_card(write(tmp_path, text))
    assert expected in str(info.value)


def test_reference_date_is_a_date(tmp_path):
    card = load_card(write(tmp_path, GOOD + REF))
    assert card.reference.random.measured.isoformat() == "2026-11-22"
