"""Evaluation protocols, the crash-safe episode log, and result files."""

from __future__ import annotations

import json

import pytest

from rlbench_suite.core.catalog import get_card
from rlbench_suite.core.protocol import EvalProtocol, SeedOverlapError
from rlbench_suite.core.result import EpisodeRecord, ResultError, load_result
from rlbench_suite.evaluation import EvaluationError, evaluate
from rlbench_suite.evaluation.protocols import default_protocol
from rlbench_suite.evaluation.store import EpisodeLog
from rlbench_suite.registry import spec_hash


def test_default_protocol_comes_from_the_card():
    protocol = default_protocol("rlbench/CartPole-v1")
    assert protocol.episodes == 50 and protocol.seeds == list(range(1_000_000, 1_000_050))
    assert protocol.deterministic is True
    # version 2: the registered spec (wrapper stack, step limit) is pinned by its hash
    assert protocol.spec_hash == spec_hash(get_card("rlbench/CartPole-v1"))
    assert protocol.wrappers is None and protocol.max_episode_steps is None
    assert protocol.protocol_id.startswith("rlbench/CartPole-v1@v2-50ep-")
    assert default_protocol("CartPole-v1", episodes=3).seeds == [1_000_000, 1_000_001, 1_000_002]
    assert default_protocol("CartPole-v1", seeds=[7, 9]).episodes == 2


def test_protocol_hash_changes_with_every_field():
    base = default_protocol("rlbench/CartPole-v1", episodes=5)
    assert base.hash == default_protocol("rlbench/CartPole-v1", episodes=5).hash
    changed = [
        default_protocol("rlbench/CartPole-v1", episodes=6),
        default_protocol("rlbench/CartPole-v1", seeds=[1, 2, 3, 4, 5]),
        default_protocol("rlbench/CartPole-v1", episodes=5, deterministic=False),
        default_protocol("rlbench/Acrobot-v1", episodes=5),
    ]
    assert len({base.hash, *(p.hash for p in changed)}) == 5


V1_PROTOCOL = {  # as written by the suite before protocol version 2
    "version": 1, "env_id": "rlbench/CartPole-v1", "episodes": 2, "seeds": [1000000, 1000001],
    "deterministic": True, "max_episode_steps": 500,
    "wrappers": [{"name": "rlbench/EpisodeStatistics-v0", "kwargs": {
        "success": {"kind": "return_at_least", "key": "success", "threshold": 475.0},
        "metric": "return", "scores_from": "rlbench/CartPole-v1", "random_score": None,
        "expert_score": None}}],
}  # fmt: skip
V1_HASH = "865ed51c5e2f512f4bfcd26f113a90c3bac4c960bad8ab3f5e9a744497b94fc1"  # by the v1 code


def test_version_1_protocols_load_keep_their_hash_and_still_run():
    old = EvalProtocol.model_validate(V1_PROTOCOL)
    assert old.version == 1 and old.hash == V1_HASH
    result = evaluate("rlbench/CartPole-v1", "random", old, workers=1)
    assert result.protocol.version == 2 and result.protocol.seeds == old.seeds
    assert result.spec_hash == result.protocol.spec_hash == spec_hash(get_card("CartPole-v1"))
    changed = {**V1_PROTOCOL, "max_episode_steps": 200}
    with pytest.raises(EvaluationError, match="step limit differs"):
        evaluate("rlbench/CartPole-v1", "random", EvalProtocol.model_validate(changed))


def test_version_2_protocols_pin_the_spec():
    protocol = default_protocol("rlbench/CartPole-v1", episodes=2)
    other = protocol.model_copy(update={"spec_hash": "0" * 64})
    with pytest.raises(EvaluationError, match="environment changed since the protocol"):
        evaluate("rlbench/CartPole-v1", "random", other, workers=1)
    with pytest.raises(ValueError, match="needs the environment's spec_hash"):
        EvalProtocol(env_id="rlbench/CartPole-v1", episodes=1, seeds=[1])
    with pytest.raises(ValueError, match="belong to version 1"):
        EvalProtocol(env_id="x", spec_hash="a", episodes=1, seeds=[1], max_episode_steps=5)


def test_bad_protocols_are_refused():
    with pytest.raises(ValueError, match="3 episodes but 2 seeds"):
        EvalProtocol(env_id="rlbench/CartPole-v1", spec_hash="a", episodes=3, seeds=[1, 2])
    with pytest.raises(ValueError, match="distinct"):
        EvalProtocol(env_id="rlbench/CartPole-v1", spec_hash="a", episodes=2, seeds=[1, 1])
    with pytest.raises(ValueError, match="--episodes 4 disagrees with 2 --seeds"):
        default_protocol("rlbench/CartPole-v1", episodes=4, seeds=[1, 2])


def test_overlapping_seeds_are_refused():
    protocol = default_protocol("rlbench/CartPole-v1", seeds=[5, 6, 7])
    protocol.check_disjoint(train_seeds=[0, 1, 2], tuning_seeds=[3, 4])
    with pytest.raises(SeedOverlapError, match=r"1 evaluation seed\(s\).*training seeds.*\(6\)"):
        protocol.check_disjoint(train_seeds=[6], tuning_seeds=[])
    with pytest.raises(SeedOverlapError, match="tuning seeds"):
        protocol.check_disjoint(train_seeds=[], tuning_seeds=[7, 100])


def test_spec_hash_is_stable_and_distinct():
    assert spec_hash(get_card("rlbench/CartPole-v1")) == spec_hash(get_card("CartPole-v1"))
    assert spec_hash(get_card("rlbench/CartPole-v1")) != spec_hash(get_card("rlbench/Acrobot-v1"))


def _record(index: int) -> EpisodeRecord:
    return EpisodeRecord(index=index, seed=100 + index, r=1.5 * index, l=10 + index, success=False)


def test_episode_log_resumes_and_survives_a_torn_last_line(tmp_path):
    path = tmp_path / "run.episodes.jsonl"
    header = {"env_id": "rlbench/CartPole-v1", "protocol_hash": "abc", "policy": {"name": "x"}}
    log = EpisodeLog(path, header)
    for i in (0, 2, 1):
        log.append(_record(i))
    with pytest.raises(ValueError, match="already in"):
        log.append(_record(1))
    with path.open("a") as handle:  # a kill in the middle of a write
        handle.write('{"index": 3, "seed": 1')
    with pytest.raises(FileExistsError, match="pass --resume"):
        EpisodeLog(path, header)
    resumed = EpisodeLog(path, header, resume=True)
    assert sorted(resumed.done) == [0, 1, 2]
    assert resumed.done[2] == _record(2)
    resumed.append(_record(3))
    lines = path.read_text().splitlines()
    assert len(lines) == 5 and json.loads(lines[-1])["index"] == 3
    with pytest.raises(ValueError, match="different evaluation"):
        EpisodeLog(path, {**header, "protocol_hash": "other"}, resume=True)
    # a review: a garbage log was said to be "written by a different evaluation"
    for garbage, why in (("garbage\n", "not JSON"), ('[1, 2]\n', "no header"),
                         ('{"index": 0}\n', "no header")):  # fmt: skip
        path.write_text(garbage + lines[1] + "\n")
        with pytest.raises(ValueError, match=f":1: not an episode log .*; {why}") as refused:
            EpisodeLog(path, header, resume=True)
        assert "different evaluation" not in str(refused.value)
        assert path.read_text() == garbage + lines[1] + "\n"  # nothing lost


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such result file"),
        ("{not json", "not a JSON result file"),
        ("[1, 2]", "a result is a JSON object"),
        ('{"schema_version": 99}', "schema_version 99 is not supported"),
        ('{"schema_version": 1, "env_id": "rlbench/CartPole-v1"}', "spec_hash: Field required"),
    ],
)
def test_malformed_results_fail_clearly(tmp_path, content, message):
    path = tmp_path / "result.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ResultError, match=message) as info:
        load_result(path)
    assert str(path) in str(info.value)


def test_a_log_is_not_resumed_under_other_reference_scores(tmp_path):
    card = get_card("rlbench/DuelVsBotEasy-v0")
    protocol = default_protocol(card, episodes=3)
    out = tmp_path / "r.json"
    evaluate(card, "random", protocol, workers=1, out=out)
    out.unlink()  # as if the run had been cut after its episodes
    moved = card.reference.random.model_copy(update={"value": 0.0})
    other = card.model_copy(update={"reference": card.reference.model_copy(
        update={"random": moved})})  # fmt: skip
    with pytest.raises(ValueError, match="reference scores differ"):
        evaluate(other, "random", protocol, workers=1, out=out, resume=True)
    again = evaluate(card, "random", protocol, workers=1, out=out, resume=True)
    assert len(again.returns) == 3
