"""TextAdventure: seeded solvable worlds, the parser, locks, combinations, scoring, the expert,
determinism, fuzzed input and MaskablePPO through the text wrappers."""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rlbench_suite  # noqa: F401  (registers the ids)
from rlbench_suite.envs.text.adventure.env import TextAdventureEnv
from rlbench_suite.envs.text.adventure.experts import TextAdventureExpert
from rlbench_suite.envs.text.adventure.game import admissible_commands, execute
from rlbench_suite.envs.text.adventure.generator import DIFFICULTIES, generate_world
from rlbench_suite.envs.text.adventure.parser import Parsed, parse
from rlbench_suite.envs.text.adventure.world import (
    COMBINE,
    CONTAINER,
    DOOR,
    GONE,
    ITEM,
    KEY,
    PUT,
    SUPPORTER,
    UNLOCK,
    VISIT,
    Entity,
    Goal,
    Room,
    World,
    goal_text,
    solvable,
)
from tests.text_fuzz import admissible_trajectory, commands, step_fuzzed

REWARDS = tuple(sorted({k / m for m in range(1, 12) for k in range(m + 1)}))
"""Every reward a game with up to 11 subgoals can give (points gained over max_score)."""


def play(env: gym.Env, policy, seed: int, limit: int = 1000) -> tuple[dict, int, float]:
    """The final info, the steps and the return of one episode of ``policy``."""
    obs, info = env.reset(seed=seed)
    policy.reset(seed)
    total, steps, done = 0.0, 0, False
    while not done and steps < limit:
        obs, reward, terminated, truncated, info = env.step(policy.act(obs, info))
        total, steps, done = total + reward, steps + 1, terminated or truncated
    return info, steps, total


@pytest.mark.parametrize("difficulty", sorted(DIFFICULTIES))
def test_every_generated_world_is_solvable_and_sized(difficulty):
    spec = DIFFICULTIES[difficulty]
    for seed in range(150):
        world = generate_world(np.random.default_rng(seed), spec)
        assert solvable(world), seed
        assert spec.rooms[0] <= len(world.rooms) <= spec.rooms[1]
        assert spec.goals[0] <= len(world.goals) <= spec.goals[1]
        kinds = [g.kind for g in world.goals]
        assert kinds.count(UNLOCK) == spec.unlock_goals and (COMBINE in kinds) == spec.combine
        doors = [e for e in world.entities.values() if e.kind == DOOR and e.locked]
        assert spec.locked_doors[0] <= len(doors) <= spec.locked_doors[1]
        assert len({e.name for e in world.entities.values()}) == len(world.entities)
        assert not any(world.met(g) for g in world.goals)  # nothing is won at the start


def test_solvable_catches_lost_keys():
    world = generate_world(np.random.default_rng(0), DIFFICULTIES["hard"])
    assert solvable(world)
    locks = [world.entities[g.target] for g in world.goals if g.kind == UNLOCK]
    assert locks
    for lock in locks:
        broken = copy.deepcopy(world)
        broken.entities[str(lock.key)].location = lock.name if lock.kind == CONTAINER else GONE
        assert not solvable(broken), lock.name


def test_worlds_are_seeded():
    a, b = TextAdventureEnv("hard"), TextAdventureEnv("hard")
    assert a.reset(seed=5) == b.reset(seed=5)
    assert a.world == b.world
    descriptions = {a.reset(seed=seed)[0] for seed in range(20)}
    assert len(descriptions) == 20


@pytest.mark.parametrize(
    "command, parsed",
    [
        ("north", Parsed("go", ("north",))),
        ("n", Parsed("go", ("north",))),
        ("go to the west", Parsed("go", ("west",))),
        ("walk e", Parsed("go", ("east",))),
        ("head up.", Parsed("go", ("up",))),
        ("l", Parsed("look")),
        ("i", Parsed("inventory")),
        ("x the chest", Parsed("examine", ("chest",))),
        ("look at a brass key", Parsed("examine", ("brass key",))),
        ("pick up the brass key", Parsed("take", ("brass key",))),
        ("pick the key up", Parsed("take", ("key",))),
        ("get key from the chest", Parsed("take", ("key", "chest"))),
        ("take the key out of the chest", Parsed("take", ("key", "chest"))),
        ("take apple off table", Parsed("take", ("apple", "table"))),
        ("north?", Parsed("go", ("north",))),
        ("look around", Parsed("look")),
        ("go to the armoury", Parsed("goto", ("armoury",))),
        ("enter the living room", Parsed("goto", ("living room",))),
        ("enter north", Parsed("go", ("north",))),
        ("put down the apple", Parsed("drop", ("apple",))),
        ("put the apple into the wooden chest", Parsed("put", ("apple", "wooden chest"))),
        ("place apple on table", Parsed("put", ("apple", "table"))),
        ("shut door", Parsed("close", ("door",))),
        ("unlock the oak door with the brass key", Parsed("unlock", ("oak door", "brass key"))),
        ("combine battery and flashlight", Parsed("combine", ("battery", "flashlight"))),
        ("use key on door", Parsed("use", ("key", "door"))),
    ],
)
def test_parser_synonyms_and_articles(command, parsed):
    assert parse(command) == parsed


@pytest.mark.parametrize(
    "command, reply",
    [
        ("", "Say something"),
        ("the", "Say something"),
        ("take", "What do you want to take?"),
        ("x", "What do you want to examine?"),
        ("examine", "What do you want to examine?"),
        ("get", "What do you want to take?"),
        ("go", "Where do you want to go?"),
        ("put apple", "Where do you want to put it?"),
        ("combine battery", "Combine it with what?"),
        ("dance wildly", "I don't understand 'dance wildly'"),
    ],
)
def test_parser_replies_to_what_it_cannot_parse(command, reply):
    assert parse(command).startswith(reply)


def tiny_world() -> World:
    """Hall (start) -> north through the locked oak door -> Vault. In the Hall: a closed
    chest with the brass key, an iron key, a safe locked by the iron key holding a coin, and a
    table with a battery and a flashlight (they make a working flashlight)."""
    hall = Room("Hall", {"north": "Vault"}, {"north": "oak door"})
    vault = Room("Vault", {"south": "Hall"}, {"south": "oak door"})
    things = [
        Entity("oak door", DOOR, "", closed=True, locked=True, key="brass key"),
        Entity("wooden chest", CONTAINER, "Hall", closed=True),
        Entity("brass key", KEY, "wooden chest"),
        Entity("iron key", KEY, "Hall"),
        Entity("small safe", CONTAINER, "Hall", closed=True, locked=True, key="iron key"),
        Entity("gold coin", ITEM, "small safe"),
        Entity("wooden table", SUPPORTER, "Hall"),
        Entity("battery", ITEM, "wooden table"),
        Entity("flashlight", ITEM, "wooden table"),
        Entity("working flashlight", ITEM, GONE),
    ]
    goals = [
        Goal(UNLOCK, "oak door", text=goal_text(UNLOCK, "oak door")),
        Goal(COMBINE, "battery", "flashlight", goal_text(COMBINE, "battery", "flashlight")),
        Goal(PUT, "working flashlight", "wooden table", "Put it on the table."),
        Goal(VISIT, "Vault", text=goal_text(VISIT, "Vault")),
    ]
    recipes = {frozenset(("battery", "flashlight")): "working flashlight"}
    return World(
        {"Hall": hall, "Vault": vault}, {e.name: e for e in things}, goals, recipes, "Hall"
    )


def tiny_env() -> TextAdventureEnv:
    env = TextAdventureEnv()
    env.reset(seed=0)
    env.world = tiny_world()
    return env


def test_a_quest_with_locks_ambiguity_and_a_combination():
    env, total = tiny_env(), 0.0
    script = [
        ("take key", "You take the iron key.", 0.0),
        ("open the chest", "Inside you see a brass key.", 0.0),
        ("drop iron key", "You drop the iron key.", 0.0),
        ("take key", "Which do you mean, the brass key or the iron key?", 0.0),
        ("TAKE the Brass Key", "You take the brass key.", 0.0),
        ("go north", "The oak door is locked.", 0.0),
        ("open door", "The oak door is locked.", 0.0),
        ("unlock safe with brass key", "The brass key doesn't fit the small safe.", 0.0),
        ("unlock door with the brass key", "You unlock the oak door", 0.25),
        ("n", "The oak door is closed.", 0.0),
        ("open oak door", "You open the oak door.", 0.0),
        ("combine battery with flashlight", "You need to hold both", 0.0),
        ("pick up the battery", "You take the battery.", 0.0),
        ("get flashlight", "You take the flashlight.", 0.0),
        ("use flashlight with battery", "you now have a working flashlight", 0.25),
        ("put working flashlight in chest", "You put the working flashlight in", 0.0),
        ("take working flashlight", "You take the working flashlight.", 0.0),
        ("put flashlight on table", "on the wooden table. Your score went up by 1.", 0.25),
        ("north", "You go north. Your score went up by 1. You have completed the quest!", 0.25),
    ]
    for command, reply, reward in script:
        obs, r, terminated, truncated, info = env.step(command)
        assert obs.startswith(reply) or reply in obs.split("\n")[0], (command, obs)
        assert r == reward and not truncated
        total += r
    assert terminated and info["success"] and (info["score"], info["max_score"]) == (4, 4)
    assert total == 1.0 and "Score: 4/4." in obs and "-= Vault =-" in obs
    obs, r, terminated, _, _ = env.step("look")
    assert obs.startswith("The game is over") and (r, terminated) == (0.0, True)


def hard_9() -> gym.Env:
    """TextAdventureHard-v0, seed 9: a steel, a silver and a bronze key and a locked wicker
    basket in the Parlour, whose one exit (north) is the locked maple door."""
    env = gym.make("rlbench/TextAdventureHard-v0")
    env.reset(seed=9)
    return env


def reply(env: gym.Env, command: str) -> str:
    return env.step(command)[0].split("\n")[0]


@pytest.mark.parametrize("answer", ["bronze", "the bronze key", "Bronze.", "the bronze one"])
def test_a_which_question_can_be_answered(answer):
    env = hard_9()
    question = "Which do you mean, the steel key, the silver key or the bronze key?"
    assert reply(env, "get key") == question
    assert reply(env, answer) == "You take the bronze key."
    assert reply(env, "get key") == "Which do you mean, the steel key or the silver key?"
    assert reply(env, "key") == "Which do you mean, the steel key or the silver key?"
    assert reply(env, "steel") == "You take the steel key."


def test_another_command_drops_the_question():
    env = hard_9()
    reply(env, "get key")
    assert reply(env, "look") == "You look around."
    assert reply(env, "bronze").startswith("I don't understand 'bronze'")
    reply(env, "get key")
    assert reply(env, "take silver key") == "You take the silver key."
    assert env.unwrapped.world.pending is None


def test_only_sensible_things_are_asked_about():
    env = hard_9()
    reply(env, "take bronze key")
    # only held keys unlock, and only keys not yet held can be taken
    assert reply(env, "unlock basket with key").startswith("You unlock the wicker basket")
    assert reply(env, "take key") == "Which do you mean, the steel key or the silver key?"
    reply(env, "take steel key")
    assert reply(env, "take key") == "You take the silver key."
    every_key = "Which do you mean, the steel key, the silver key or the bronze key?"
    assert reply(env, "unlock basket with key") == every_key  # all three are held now
    assert reply(env, "silver") == "The wicker basket is already unlocked."


def test_going_to_a_room_by_name():
    env = hard_9()
    here = "exits: north (maple door, locked)."
    assert reply(env, "go to the armoury") == f"The armoury is not next to this room; {here}"
    assert reply(env, "go to the library") == "The maple door is locked."
    assert reply(env, "go to the parlour") == "You are already in the parlour."
    assert reply(env, "go to the xyzzy") == f"You know of no place called 'xyzzy' here; {here}"
    world = env.unwrapped.world
    world.entities["maple door"].locked = world.entities["maple door"].closed = False
    assert reply(env, "enter library") == "You go north."
    assert world.player == "Library"
    assert reply(env, "go to study") == "You go west."  # one step only
    assert world.player == "Study"
    assert reply(env, "go to the parlour").startswith("The parlour is not next to this room")


def test_take_from_checks_where_the_thing_is():
    env = hard_9()
    assert reply(env, "take steel key from basket") == (
        "The steel key is not in the wicker basket."
    )
    assert reply(env, "take key out of the basket") == "There is no key in the wicker basket."
    env = tiny_env()
    reply(env, "open chest")
    assert reply(env, "take battery from chest") == "The battery is not in the wooden chest."
    assert reply(env, "take key from chest") == "You take the brass key."
    assert reply(env, "take battery off table") == "You take the battery."
    assert reply(env, "take flashlight out of table") == "You take the flashlight."


def test_punctuation_and_look_around():
    env = hard_9()
    assert reply(env, "north?") == "The maple door is locked."
    assert reply(env, "look around") == "You look around."
    assert reply(env, "x") == reply(env, "examine") == "What do you want to examine?"


def test_locked_containers_hide_their_contents():
    env = tiny_env()
    env.step("take iron key")
    assert "gold coin" not in env.step("look")[0]
    assert env.step("open safe")[0].startswith("The small safe is locked.")
    assert "unlock small safe with iron key" in env._info()["admissible_commands"]
    assert env.step("use iron key on safe")[0].startswith("You unlock the small safe")
    obs = env.step("open safe")[0]
    assert obs.startswith("You open the small safe. Inside you see a gold coin.")
    assert "a gold coin (in the small safe)" in obs
    assert env.step("take coin")[0].startswith("You take the gold coin.")
    assert env.step("close safe")[0].startswith("You close the small safe.")


@pytest.mark.parametrize(
    "command",
    ["", "xyzzy", "take", "take the dragon", "put apple", "go west", "\x00\x07\u2603", "a" * 256],
)
def test_unknown_commands_get_a_reply_zero_reward_and_use_a_step(command):
    env = tiny_env()
    before = copy.deepcopy(env.world)
    obs, reward, terminated, truncated, info = env.step(command)
    assert (reward, terminated, truncated, info["moves"], info["score"]) == (
        0.0,
        False,
        False,
        1,
        0,
    )
    assert env.observation_space.contains(obs) and obs.split("\n")[0]
    assert env.world == before


def test_admissible_commands_all_do_something():
    env = TextAdventureEnv("hard")
    rng = np.random.default_rng(0)
    for seed in range(5):
        _, info = env.reset(seed=seed)
        for _ in range(60):
            commands_now = info["admissible_commands"]
            assert commands_now == list(dict.fromkeys(commands_now))
            for command in commands_now:
                world = copy.deepcopy(env.world)
                reply = execute(world, command)
                assert not reply.startswith(("I don't", "You see no", "Which", "You can't")), reply
            command = commands_now[int(rng.integers(len(commands_now)))]
            _, _, terminated, _, info = env.step(command)
            assert solvable(env.world)  # no command ever makes the quest impossible
            if terminated:
                break


@pytest.mark.parametrize("difficulty", sorted(DIFFICULTIES))
def test_expert_wins_and_rewards_add_up_to_the_normalized_score(difficulty):
    env, expert = TextAdventureEnv(difficulty), TextAdventureExpert()
    wins = 0
    for seed in range(50):
        info, _, total = play(env, expert, seed)
        wins += info["success"]
        assert total == pytest.approx(info["score"] / info["max_score"])
    assert wins >= 48


def test_trajectories_are_deterministic_under_a_seed():
    first = admissible_trajectory("rlbench/TextAdventure-v0", seed=3, rng_seed=1)
    assert first == admissible_trajectory("rlbench/TextAdventure-v0", seed=3, rng_seed=1)


def test_card_stacks_and_difficulties():
    for env_id, difficulty in [
        ("rlbench/TextAdventure-v0", "medium"),
        ("rlbench/TextAdventureEasy-v0", "easy"),
        ("rlbench/TextAdventureHard-v0", "hard"),
    ]:
        env = gym.make(env_id)
        assert env.unwrapped.difficulty == difficulty
        _, info = env.reset(seed=0)
        assert {"success", "score", "max_score", "moves", "admissible_commands"} <= set(info)
    with pytest.raises(ValueError, match="difficulty must be one of 'easy', 'medium', 'hard'"):
        TextAdventureEnv("impossible")


_FUZZ = {difficulty: TextAdventureEnv(difficulty) for difficulty in DIFFICULTIES}
for _env in _FUZZ.values():
    _env.reset(seed=0)


@pytest.mark.parametrize("difficulty", sorted(DIFFICULTIES))  # the three cards
@settings(max_examples=10_000, deadline=None)
@given(st.one_of(commands(), st.integers(0, 63)))  # an int: an admissible command, so that
def test_fuzzed_commands_never_raise_within_the_limit(difficulty, text):  # quests progress
    env = _FUZZ[difficulty]
    if isinstance(text, int):
        options = admissible_commands(env.world)
        text = options[text % len(options)]
    step_fuzzed(env, text, rewards=REWARDS)


def test_maskable_ppo_trains_through_the_text_wrappers():
    pytest.importorskip("sb3_contrib")
    import torch
    from sb3_contrib import MaskablePPO

    from rlbench_suite.wrappers import AdmissibleActions, HashedBagOfWords

    torch.set_num_threads(1)
    env = gym.make("rlbench/TextAdventure-v0", difficulty="easy")
    env = HashedBagOfWords(AdmissibleActions(env), dim=256)
    model = MaskablePPO("MlpPolicy", env, n_steps=256, batch_size=64, n_epochs=4, seed=0, verbose=0)
    model.learn(2048)
    obs, info = env.reset(seed=1)
    action, _ = model.predict(obs, action_masks=info["action_mask"].astype(bool))
    assert info["action_mask"][int(action)] == 1
