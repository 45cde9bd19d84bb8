"""Dataset cards, the HDF5 storage, reproducible builds, the loader and Minari's reader."""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
from pathlib import Path

import numpy as np
import pytest

from rlbench_suite.core.dataset_cards import (
    DATA_FILE,
    METADATA_FILE,
    UnknownDatasetError,
    dataset_cards,
    get_dataset_card,
    load_dataset_card,
)
from rlbench_suite.core.seeds import DATASET_SEEDS, EVALUATION_SEEDS
from rlbench_suite.datasets.cache import dataset_folder, verify
from rlbench_suite.datasets.loader import OfflineDataset
from rlbench_suite.datasets.storage import (
    DatasetFileError,
    Episode,
    content_hash,
    read_episodes,
    write_episodes,
)
from tests.dataset_helpers import CARD_REFERENCES, assert_card_refused, built_card, small_card

CARD = """
id = "rlbench/CartPole-random-v0"
env_id = "rlbench/CartPole-v1"
kind = "random"
description = "Uniformly random actions in CartPole, for the tests."

[source]
policies = [{policy = "random", episodes = 3}]

[build]
command = "rlbench datasets build rlbench/CartPole-random-v0"
seed = 1000000000
""" + CARD_REFERENCES


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "card.toml"
    path.write_text(text)
    return path


def test_a_good_card_loads_and_normalizes_with_the_one_normalization(tmp_path):
    card = load_dataset_card(write(tmp_path, CARD))
    assert (card.id, card.name, card.kind, card.built) == (
        "rlbench/CartPole-random-v0",
        "CartPole-random-v0",
        "random",
        False,
    )
    assert card.normalized_score(500.0) == pytest.approx(100.0)
    assert card.normalized_score(18.5) == pytest.approx(0.0)
    assert card.normalized_score(np.array([259.25])) == pytest.approx([50.0])


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ('kind = "random"', 'kind = "mediocre"', ["field 'kind'", "'medium-replay'"]),
        ('kind = "random"', 'kind = "expert"', ["does not match env_id", "CartPole-expert-v"]),
        (
            'id = "rlbench/CartPole-random-v0"',
            'id = "rlbench/CartPole/random-v0"',
            ["field 'id'", "accepted: namespace/<EnvName>-<kind>-vN"],
        ),
        ("seed = 1000000000", "seed = 1000001", ["field 'build.seed'", "DATASET_SEEDS"]),
        ("episodes = 3}", "episodes = 0}", ["field 'source.policies.0.episodes'"]),
        ("[build]", '[build]\ncolour = "red"', ["field 'build.colour'", "accepted fields here"]),
        (  # a review: a card's empty remote was refused only when a download reached it
            'kind = "random"',
            'kind = "random"\nremotes = ["https://mirror.example/d", "file://"]',
            ["field 'remotes.1'", "'file://' names no remote", "http://, https:// or s3://"],
        ),
    ],
)
def test_a_malformed_card_names_the_file_and_the_field(tmp_path, old, new, expected):
    assert old in CARD
    assert_card_refused(tmp_path / "card.toml", CARD.replace(old, new), expected)


def test_unknown_dataset_ids_suggest_the_closest():
    known = sorted(dataset_cards())
    assert known, "the suite has dataset cards"
    typo = known[0].replace("-v0", "-v9").replace("medium", "mediun")
    with pytest.raises(UnknownDatasetError) as info:
        get_dataset_card(typo)
    assert known[0] in str(info.value) or "Did you mean" in str(info.value)
    assert get_dataset_card(known[0].removeprefix("rlbench/")).id == known[0]


def test_dataset_seeds_clear_every_evaluation_seed():
    assert DATASET_SEEDS.start >= EVALUATION_SEEDS.stop
    assert DATASET_SEEDS.stop <= 2**31
    for card in dataset_cards().values():
        if card.source.training is not None:  # reset by its training run (test_datasets_replay)
            assert card.build.seed is None
            assert not any(s in EVALUATION_SEEDS for s in card.reset_seeds)
            continue
        assert card.build.seed in DATASET_SEEDS
        assert card.build.seed + card.source.episodes <= DATASET_SEEDS.stop


def _episodes() -> list[Episode]:
    rng = np.random.default_rng(0)
    out = []
    for i, n in enumerate((5, 1, 7)):
        out.append(
            Episode(
                rng.normal(size=(n + 1, 3)).astype(np.float32),
                rng.integers(0, 2, n),
                rng.normal(size=n),
                np.arange(n) == n - 1 if i != 1 else np.zeros(n, bool),
                np.zeros(n, bool) if i != 1 else np.ones(n, bool),
                seed=100 + i,
            )
        )
    return out


def test_storage_round_trips_and_writes_the_same_bytes_twice(tmp_path):
    episodes = _episodes()
    episodes[0].observations = {"pos": episodes[0].observations, "n": (np.arange(6),)}
    write_episodes(tmp_path / "a.hdf5", episodes)
    time.sleep(1.1)  # HDF5 keeps times in seconds: a header with times would now differ
    write_episodes(tmp_path / "b.hdf5", episodes)
    assert (tmp_path / "a.hdf5").read_bytes() == (tmp_path / "b.hdf5").read_bytes()
    back = list(read_episodes(tmp_path / "a.hdf5"))
    assert [e.seed for e in back] == [100, 101, 102]
    np.testing.assert_array_equal(back[0].observations["n"][0], np.arange(6))
    for a, b in zip(episodes[1:], back[1:], strict=True):
        np.testing.assert_array_equal(a.observations, b.observations)
        np.testing.assert_array_equal(a.terminations, b.terminations)
        np.testing.assert_array_equal(a.truncations, b.truncations)
    assert content_hash(back) == content_hash(episodes)
    changed = _episodes()
    changed[2].rewards[3] += 1e-9
    assert content_hash(changed) != content_hash(episodes)


def test_text_and_dict_observations_round_trip(tmp_path):
    episode = Episode(
        {"pos": np.zeros((3, 2)), "text": ["a", "bé", "c"]},
        ["go north", "look"],
        np.ones(2),
        np.array([False, True]),
        np.zeros(2, bool),
        seed=7,
    )
    write_episodes(tmp_path / "t.hdf5", [episode])
    (back,) = read_episodes(tmp_path / "t.hdf5")
    assert back.observations["text"] == ["a", "bé", "c"]
    assert back.actions == ["go north", "look"]
    assert content_hash([back]) == content_hash([episode])


def test_a_truncated_or_corrupt_file_is_a_clear_error(tmp_path):
    path = tmp_path / "d.hdf5"
    write_episodes(path, _episodes())
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(DatasetFileError, match="truncated or corrupt"):
        list(read_episodes(path))
    path.write_bytes(b"\0" * len(data))
    with pytest.raises(DatasetFileError, match=str(path)):
        OfflineDataset(path)


def test_the_sampler_never_crosses_an_episode_boundary(tmp_path):
    episodes = _episodes()
    write_episodes(tmp_path / "d.hdf5", episodes)
    data = OfflineDataset(tmp_path / "d.hdf5")
    assert (data.num_episodes, data.num_steps) == (3, 13)
    t = data.transitions()
    row = 0
    for episode in episodes:
        for step in range(len(episode)):
            np.testing.assert_array_equal(t["observations"][row], episode.observations[step])
            np.testing.assert_array_equal(
                t["next_observations"][row], episode.observations[step + 1]
            )
            assert t["terminations"][row] == episode.terminations[step]
            row += 1
    # the truncated one-step episode keeps its real next observation
    view = data.episode(1)
    assert view.truncations[-1] and not view.terminations[-1]
    np.testing.assert_array_equal(t["next_observations"][5], episodes[1].observations[1])
    assert data.episode_returns() == pytest.approx([e.total_return for e in episodes])
    data.seed(3)
    batch = data.sample(256)
    assert batch["obs"].shape == (256, 3) and batch["next_obs"].shape == (256, 3)
    all_pairs = {
        (o.tobytes(), n.tobytes())
        for o, n in zip(t["observations"], t["next_observations"], strict=True)
    }
    assert {
        (o.tobytes(), n.tobytes()) for o, n in zip(batch["obs"], batch["next_obs"], strict=True)
    } <= all_pairs


def test_a_bad_batch_size_or_episode_index_says_what_is_accepted(tmp_path):
    """A review: sample(-1) said "negative dimensions are not allowed", episode(100) "range
    object index out of range"."""
    write_episodes(tmp_path / "d.hdf5", _episodes())
    data = OfflineDataset(tmp_path / "d.hdf5", "rlbench/Small-v0")
    for bad, error in ((-1, ValueError), (0, ValueError), (2.5, TypeError), (True, TypeError),
                       ("8", TypeError)):  # fmt: skip
        with pytest.raises(error, match=f"batch_size must be a positive integer, got "
                           f"{re.escape(repr(bad))}"):  # fmt: skip
            data.sample(bad)
    for bad in (3, -4):
        with pytest.raises(IndexError, match=rf"episode {bad}: rlbench/Small-v0 has 3 episodes "
                           r"\(0 to 2, or -1 to -3 from the end\)"):  # fmt: skip
            data.episode(bad)
    with pytest.raises(TypeError, match="an episode index is an integer, not '0'"):
        data.episode("0")
    assert data.episode(-3).index == 0 and len(data.sample(np.int64(2))["obs"]) == 2
    # a second review: numpy's, Python's and torch's own errors, or silence
    taken = (r"transition indices are integers from 0 to 12 \(or -1 to -13 from the end; "
             r"rlbench/Small-v0 holds 13\)")
    with pytest.raises(IndexError, match=rf"transition 13: {taken}"):
        data.transitions([0, 13])
    for bad in ([1.5], "a"):
        with pytest.raises(TypeError, match=rf"{taken}, got {re.escape(repr(bad))}"):
            data.transitions(bad)
    assert data.transitions([-1])["rewards"].tolist() == [data.episode(-1).rewards[-1]]
    with pytest.raises(TypeError, match=r"episode_indices takes episode indices \(integers "
                       r"from 0 to 2\) or None for all, got 5"):  # fmt: skip
        data.iterate_episodes(5)
    for bad, error in (("x", TypeError), (-1, ValueError), (1.0, TypeError)):
        with pytest.raises(error, match=rf"seed takes None, a non-negative integer or a "
                           rf"SeedSequence, got "
                           rf"{re.escape(repr(bad))}"):  # fmt: skip
            data.set_seed(bad)
    with pytest.raises(TypeError, match=r"torch takes True \(tensors\) or False \(arrays\), "
                       r"got 'yes'"):  # fmt: skip
        data.sample(2, torch="yes")
    with pytest.raises(TypeError, match=r"an id is a string such as 'rlbench/CartPole-v1'.*, "
                       r"got 3"):  # fmt: skip
        get_dataset_card(3)
    with pytest.raises(ValueError, match=r"normalized_score takes a number or an array of "
                       r"numbers \(returns\), got 'abc'"):  # fmt: skip
        get_dataset_card(sorted(dataset_cards())[0]).normalized_score("abc")


def test_the_reader_takes_masks_numpy_flags_seed_sequences_and_empty_episodes(tmp_path):
    """A review of the checks above: a boolean mask, ``np.True_`` and a SeedSequence had worked
    and were refused; an episode of no steps took its neighbour's reward as its return."""
    empty = Episode(np.zeros((1, 3), np.float32), np.zeros(0, np.int64), np.zeros(0),
                    np.zeros(0, bool), np.zeros(0, bool), seed=7)  # fmt: skip
    episodes = [*_episodes()[:2], empty, _episodes()[2], empty]
    write_episodes(tmp_path / "d.hdf5", episodes)
    data = OfflineDataset(tmp_path / "d.hdf5")
    returns = data.episode_returns()
    assert returns.tolist() == pytest.approx([e.total_return for e in episodes])
    assert returns[2] == returns[4] == 0.0
    assert [data.episode(i).total_return for i in range(5)] == pytest.approx(returns.tolist())
    mask = np.zeros(data.num_steps, bool)
    mask[[0, 5]] = True
    picked = data.transitions(mask)["rewards"]
    assert picked.tolist() == data.transitions([0, 5])["rewards"].tolist()
    assert len(data.sample(3, torch=np.False_)["obs"]) == 3
    data.set_seed(np.random.SeedSequence(1))
    first = data.sample(4)["reward"]
    data.set_seed(np.random.SeedSequence(1))
    assert data.sample(4)["reward"].tolist() == first.tolist()


def test_minaris_names_work_on_the_suites_reader(tmp_path):
    """A review: the docs call ``load`` Minari style, but ``for e in dataset``, ``dataset[0]``,
    ``total_episodes``, ``iterate_episodes``, ``sample_episodes`` and ``set_seed`` failed."""
    episodes = _episodes()
    write_episodes(tmp_path / "d.hdf5", episodes)
    data = OfflineDataset(tmp_path / "d.hdf5", "rlbench/Small-v0")
    assert (data.total_episodes, data.total_steps) == (3, 13)
    assert data.episode_indices.tolist() == [0, 1, 2]
    assert [e.id for e in data] == [0, 1, 2] and data[-1].id == 2
    assert [e.id for e in data.iterate_episodes([2, 0])] == [2, 0]
    for view, episode in zip(data, episodes, strict=True):
        np.testing.assert_array_equal(view.observations, episode.observations)
        np.testing.assert_array_equal(view.rewards, episode.rewards)
    data.set_seed(5)
    first = [e.id for e in data.sample_episodes(2)]
    data.set_seed(5)
    assert [e.id for e in data.sample_episodes(2)] == first and len(set(first)) == 2
    assert sorted(e.id for e in data.sample_episodes(3)) == [0, 1, 2]  # without replacement
    for bad, error in ((0, ValueError), (4, ValueError), (1.5, TypeError), (True, TypeError)):
        with pytest.raises(error, match=rf"n_episodes must be an integer from 1 to 3 "
                           rf"\(the episodes held\), got {re.escape(repr(bad))}"):  # fmt: skip
            data.sample_episodes(bad)
    with pytest.raises(TypeError, match=r"an episode index is an integer, not 1\.7"):
        list(data.iterate_episodes([1.7]))  # not quietly episode 1
    assert data.sample_episodes(np.int64(1))[0].id in (0, 1, 2)


def test_the_sampler_gives_torch_tensors(tmp_path):
    torch = pytest.importorskip("torch")
    write_episodes(tmp_path / "d.hdf5", _episodes())
    batch = OfflineDataset(tmp_path / "d.hdf5").sample(8, torch=True)
    assert isinstance(batch["obs"], torch.Tensor) and batch["obs"].dtype == torch.float32
    assert batch["terminated"].dtype == torch.bool and batch["action"].shape == (8,)
    with pytest.raises(ValueError, match=r"device 'banana': "):  # not torch's RuntimeError
        OfflineDataset(tmp_path / "d.hdf5").sample(8, torch=True, device="banana")


def test_a_rebuild_gives_the_same_content_hash_and_bytes(tmp_path):
    card = small_card(episodes=3)
    first = built_card(card, tmp_path / "a")
    second = built_card(card, tmp_path / "b")
    assert first.content_sha256 == second.content_sha256
    assert first.files == second.files
    folder = dataset_folder(first, tmp_path / "a")
    assert hashlib.sha256((folder / DATA_FILE).read_bytes()).hexdigest() == first.files[0].sha256
    assert verify(first, tmp_path / "a") == []
    data = OfflineDataset(folder / DATA_FILE)
    assert data.num_episodes == 3 and data.num_steps == first.steps
    assert data.seeds == [card.build.seed + i for i in range(3)]
    assert math.isclose(float(np.mean(data.episode_returns())), first.mean_return)
    other = built_card(small_card(episodes=3, epsilon=0.6), tmp_path / "c")
    assert other.content_sha256 != first.content_sha256


def test_minari_reads_our_files(tmp_path, monkeypatch):
    import h5py

    minari = pytest.importorskip("minari")
    card = built_card(small_card(episodes=3, epsilon=0.0), tmp_path)
    with h5py.File(dataset_folder(card, tmp_path) / DATA_FILE, "r") as file:
        # the expert's episodes all last 500 steps: their rewards, terminations and
        # truncations are one dataset each, hard-linked from the three episodes
        for key in ("rewards", "terminations", "truncations"):
            assert h5py.h5o.get_info(file[f"episode_2/{key}"].id).rc == 3
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path))
    dataset = minari.load_dataset(card.id)
    assert (dataset.total_episodes, dataset.total_steps) == (3, card.steps)
    ours = OfflineDataset(dataset_folder(card, tmp_path) / DATA_FILE)
    for index, episode in enumerate(dataset.iterate_episodes()):
        view = ours.episode(index)
        np.testing.assert_array_equal(episode.observations, view.observations)
        np.testing.assert_array_equal(episode.actions, view.actions)
        np.testing.assert_array_equal(episode.rewards, view.rewards)
        np.testing.assert_array_equal(episode.terminations, view.terminations)
        np.testing.assert_array_equal(episode.truncations, view.truncations)
    meta = json.loads((dataset_folder(card, tmp_path) / METADATA_FILE).read_text())
    assert meta["jpeg_encoding"] is False and meta["ref_max_score"] == 500.0
    env = dataset.recover_environment()
    assert env.spec.id == "rlbench/CartPole-v1"
    env.close()


def test_storage_is_compressed_versioned_and_a_newer_version_is_refused(tmp_path):
    import h5py

    from rlbench_suite.datasets.storage import STORAGE_ATTR, STORAGE_VERSION

    path = tmp_path / "d.hdf5"
    long = Episode(np.repeat(np.arange(201, dtype=np.float32)[:, None], 3, axis=1),
                   np.zeros(200, np.int64), np.ones(200), np.arange(200) == 199,
                   np.zeros(200, bool), seed=9)  # fmt: skip
    write_episodes(path, [*_episodes(), long])
    with h5py.File(path, "r+") as file:
        assert file.attrs[STORAGE_ATTR] == STORAGE_VERSION
        observations = file["episode_3/observations"]
        assert observations.compression == "gzip" and observations.shuffle
        assert observations.chunks == observations.shape  # one chunk: the whole episode
        assert observations.id.get_storage_size() < observations.nbytes / 2
        assert file["episode_3/terminations"].dtype == bool
        short = file["episode_0/observations"]  # 6 rows: kept raw in its header
        assert short.compression is None and short.chunks is None
        assert short.id.get_create_plist().get_layout() == h5py.h5d.COMPACT
        file.attrs[STORAGE_ATTR] = STORAGE_VERSION + 1
    with pytest.raises(DatasetFileError, match=f"storage version {STORAGE_VERSION + 1}, newer"):
        list(read_episodes(path))


def test_the_docs_page_holds_the_table_of_every_card():
    from rlbench_suite.datasets.table import (
        TABLE_END,
        TABLE_START,
        replace_between,
        table_markdown,
    )

    page = (Path(__file__).resolve().parents[1] / "docs" / "datasets.md").read_text()
    table = table_markdown(dataset_cards().values())
    assert replace_between(page, TABLE_START, TABLE_END, table) == page, (
        "docs/datasets.md is stale: run python scripts/dataset_table.py")
    for card in dataset_cards().values():
        assert f"| `{card.id}` | {card.kind} |" in table
    with pytest.raises(ValueError, match="no marker"):
        replace_between("no markers here", TABLE_START, TABLE_END, table)
