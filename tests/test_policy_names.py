"""Display names: short, distinct names for policies in every table and figure."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from rlbench_suite.evaluation.plots import policy_labels
from rlbench_suite.policies import display_name, display_names, split_label

BOT = "module:rlbench_suite.baselines.scripted.duel:{}"


def test_a_spec_is_named_by_its_telling_part():
    assert display_names(["random", BOT.format("EasyBot"), BOT.format("HardBot")]) == [
        "random",
        "EasyBot",
        "HardBot",
    ]
    assert display_name("rlbench_suite.baselines.scripted.duel:EasyBot") == "EasyBot"
    assert display_name("sb3:runs/cartpole/ppo-seed0.zip") == "ppo-seed0"
    assert display_name("onnx:model.onnx") == "model"
    assert display_name("baseline:ppo/CartPole-v1") == "ppo/CartPole-v1"
    assert display_name("something odd") == "something odd"


def test_names_stay_distinct():
    specs = ["module:a.duel:EasyBot", "b.duel:EasyBot", "onnx:runs/ppo/policy.onnx",
             "sb3:runs/a2c/policy.zip", "module:x:Y", "x:Y", "random", "random"]  # fmt: skip
    names = ["a.duel:EasyBot", "b.duel:EasyBot", "ppo/policy", "a2c/policy", "module:x:Y",
             "x:Y", "random", "random #2"]  # fmt: skip
    assert display_names(specs) == names


def test_labels_name_their_policy():
    assert split_label("EasyBot=" + BOT.format("EasyBot")) == ("EasyBot", BOT.format("EasyBot"))
    assert split_label("sb3:runs/lr=3e-4/model.zip") == (None, "sb3:runs/lr=3e-4/model.zip")
    names = display_names(["EasyBot=random", BOT.format("EasyBot"), "E2=" + BOT.format("EasyBot")])
    assert names == ["EasyBot", "duel:EasyBot", "E2"]
    assert display_names(["random", "random=" + BOT.format("EasyBot")]) == ["random #2", "random"]
    with pytest.raises(ValueError, match="label 'A' is given to more than one policy"):
        display_names(["A=random", "A=" + BOT.format("HardBot")])


def test_result_tables_and_figures_use_the_display_names():
    results = [SimpleNamespace(policy={"spec": spec}) for spec in
               (BOT.format("HardBot"), "random", BOT.format("HardBot"))]  # fmt: skip
    results.append(SimpleNamespace(policy={"name": "ppo-cartpole", "spec": None}))
    assert policy_labels(results) == ["HardBot", "random", "HardBot", "ppo-cartpole"]
