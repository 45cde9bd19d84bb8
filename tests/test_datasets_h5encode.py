"""The direct HDF5 encoder: its checksum, files HDF5 reads (and edits) like the library's own."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np

from rlbench_suite.datasets import h5encode
from rlbench_suite.datasets.storage import (
    EPISODE_KEYS,
    Episode,
    _write_with_h5py,
    content_hash,
    read_episodes,
    write_episodes,
)


def test_the_checksum_is_lookup3_as_hdf5_computes_it():
    # Bob Jenkins' published values of hashlittle (lookup3.c, driver5)
    assert h5encode._lookup3_python(b"") == 0xDEADBEEF
    assert h5encode._lookup3_python(b"Four score and seven years ago") == 0x17770551
    assert h5encode._lookup3_python(b"Four score and seven years ago", 1) == 0xCD628161
    rng = np.random.default_rng(0)
    for length in (*range(30), 100, 257):
        data = rng.bytes(length)
        assert h5encode.checksum(data) == h5encode._lookup3_python(data)


def _varied(count: int = 12) -> list[Episode]:
    """Episodes of several dtypes and shapes, short (kept raw) and long (compressed), one of
    no steps and one without a seed."""
    rng = np.random.default_rng(1)
    out = []
    for i in range(count):
        n = (0, 3, 40, 300)[i % 4]
        obs = rng.normal(size=(n + 1, 2, 3)) if i % 2 else rng.integers(0, 9, (n + 1, 5), np.uint8)
        act = rng.normal(size=(n, 2)).astype(np.float32) if i % 3 else rng.integers(-3, 3, n, "i4")
        out.append(Episode(
            obs, act, rng.normal(size=n), np.arange(n) == n - 1, np.zeros(n, bool),
            seed=None if i == 5 else 1000 + i,
        ))  # fmt: skip
    return out


def _layout(path: Path) -> dict[str, tuple]:
    """Every object's name (each name of an object linked from several groups), with its
    dtype and shape (datasets) and attributes."""
    found: dict[str, tuple] = {}

    def walk(name: str, node: h5py.Group | h5py.Dataset) -> None:
        attrs = tuple(sorted(node.attrs.items()))
        if isinstance(node, h5py.Dataset):
            found[name] = (node.dtype, node.shape, attrs)
            np.asarray(node[()])  # every value decodes
            return
        found[name] = attrs
        for key in node:
            walk(f"{name.rstrip('/')}/{key}", node[key])

    with h5py.File(path, "r") as file:
        walk("/", file)
    return found


def test_encoded_files_hold_what_the_library_writer_writes(tmp_path):
    episodes = _varied()
    assert h5encode.fits(episodes, EPISODE_KEYS)
    write_episodes(tmp_path / "encoded.hdf5", episodes)
    _write_with_h5py(tmp_path / "library.hdf5", episodes)
    assert _layout(tmp_path / "encoded.hdf5") == _layout(tmp_path / "library.hdf5")
    back = list(read_episodes(tmp_path / "encoded.hdf5"))
    assert content_hash(back) == content_hash(episodes)
    assert [e.seed for e in back] == [e.seed for e in episodes]
    assert (tmp_path / "encoded.hdf5").read_bytes()[9:11] == b"\x08\x08"  # HDF5's default


def test_equal_arrays_are_one_dataset_linked_from_each_episode(tmp_path):
    path = tmp_path / "d.hdf5"
    episodes = _varied()  # episodes of one length share their (arange(n) == n - 1) and zeros
    write_episodes(path, episodes)
    with h5py.File(path, "r") as file:
        first, again = file["episode_2/terminations"], file["episode_6/terminations"]
        assert h5py.h5o.get_info(first.id).addr == h5py.h5o.get_info(again.id).addr
        assert h5py.h5o.get_info(first.id).rc == 3  # episodes 2, 6 and 10
        observations = [h5py.h5o.get_info(file[f"episode_{i}/observations"].id).addr
                        for i in range(len(episodes))]  # fmt: skip
        assert len(set(observations)) == len(episodes)
    with h5py.File(path, "r+") as file:  # HDF5 counts the links: the data outlives a group
        del file["episode_2"], file["episode_6"]
        assert h5py.h5o.get_info(file["episode_10/terminations"].id).rc == 1
    rest = [e for i, e in enumerate(episodes) if i not in (2, 6)]
    assert content_hash(read_episodes(path)) == content_hash(rest)


def _type_counts(file: h5py.File) -> list[tuple[int, int]]:
    """Of each committed datatype: how many datasets (each object once) and attributes use
    it, and the reference count HDF5 keeps of it."""
    users: dict[int, list] = {}
    objects = set()

    def add(kind: h5py.h5t.TypeID) -> None:
        if kind.committed():
            users.setdefault(h5py.h5o.get_info(kind).addr, [0, kind])[0] += 1

    def walk(node: h5py.Group | h5py.Dataset) -> None:
        address = h5py.h5o.get_info(node.id).addr
        if address in objects:
            return
        objects.add(address)
        for name in node.attrs:
            add(h5py.h5a.open(node.id, name.encode()).get_type())
        if isinstance(node, h5py.Dataset):
            add(node.id.get_type())
        else:
            for key in node:
                walk(node[key])

    walk(file)
    return [(count, h5py.h5o.get_info(kind).rc) for count, kind in users.values()]


def test_datatypes_used_often_are_committed_once_and_counted(tmp_path):
    path = tmp_path / "d.hdf5"
    episodes = _varied(20)
    write_episodes(path, episodes)
    with h5py.File(path, "r") as file:
        assert file["episode_0/observations"].id.get_type().committed()  # uint8: 10 users
        assert file["episode_3"].attrs.get_id("seed").get_type().committed()
        counts = _type_counts(file)
        assert len(counts) >= 3 and all(users == rc for users, rc in counts)
    with h5py.File(path, "r+") as file:  # HDF5 releases a type's users one by one
        for index in range(1, 20):
            del file[f"episode_{index}"]
        assert all(users == rc for users, rc in _type_counts(file))
    assert content_hash(read_episodes(path)) == content_hash(episodes[:1])


def test_an_array_of_one_value_is_its_fill_value(tmp_path):
    n = 80
    episode = Episode(np.zeros((n + 1, 2), np.float32), np.full(n, 3), np.full(n, -0.5),
                      np.arange(n) == n - 1, np.zeros(n, bool), seed=4)  # fmt: skip
    write_episodes(tmp_path / "d.hdf5", [episode])
    with h5py.File(tmp_path / "d.hdf5", "r") as file:
        group = file["episode_0"]
        for key in ("observations", "actions", "rewards", "truncations"):
            assert group[key].id.get_storage_size() == 0, key  # no chunk written
        assert group["terminations"].id.get_storage_size() > 0
        np.testing.assert_array_equal(group["rewards"][()], np.full(n, -0.5))
    assert content_hash(read_episodes(tmp_path / "d.hdf5")) == content_hash([episode])


def test_h5py_copies_episodes_out_into_a_file_of_its_own(tmp_path):
    """A review: episodes copied with ``h5py.Group.copy`` from a file with 4-byte addresses
    (the encoder's choice below 4 GiB then) were unreadable in the copy, HDF5 2.0.0's object
    copy; the encoder now writes HDF5's default 8-byte addresses and lengths."""
    episodes = _varied(5)
    write_episodes(tmp_path / "d.hdf5", episodes)
    assert (tmp_path / "d.hdf5").read_bytes()[9:11] == b"\x08\x08"
    with h5py.File(tmp_path / "d.hdf5", "r") as source, h5py.File(tmp_path / "c.hdf5", "w") as copy:
        for name in ("episode_1", "episode_3"):
            source.copy(source[name], copy)
    with h5py.File(tmp_path / "c.hdf5", "r") as copy:
        for name, episode in (("episode_1", episodes[1]), ("episode_3", episodes[3])):
            np.testing.assert_array_equal(copy[name]["observations"][()], episode.observations)
            np.testing.assert_array_equal(copy[name]["actions"][()], episode.actions)
            np.testing.assert_array_equal(copy[name]["rewards"][()], episode.rewards)
            assert copy[name].attrs["total_steps"] == len(episode)


def test_hdf5_edits_an_encoded_file(tmp_path):
    path = tmp_path / "d.hdf5"
    episodes = _varied()
    write_episodes(path, episodes)
    with h5py.File(path, "r+") as file:
        file["episode_3"].attrs["note"] = "added by HDF5"
        file["episode_3/observations"][0] = 7
        file.create_dataset("extra", data=np.arange(10))
        del file["episode_11"]
    episodes[3].observations[0] = 7
    with h5py.File(path, "r") as file:
        assert file["episode_3"].attrs["note"] == "added by HDF5"
        np.testing.assert_array_equal(file["extra"][()], np.arange(10))
    assert content_hash(read_episodes(path)) == content_hash(episodes[:11])


def test_other_values_go_through_the_library(tmp_path, monkeypatch):
    plain = _varied(3)
    nested = Episode({"a": np.zeros((2, 1))}, np.zeros(1), np.ones(1), np.ones(1, bool),
                     np.zeros(1, bool), seed=1)  # fmt: skip
    text = Episode(np.zeros((2, 1)), ["go"], np.ones(1), np.ones(1, bool), np.zeros(1, bool))
    swapped = Episode(np.zeros((2, 1), ">f4"), np.zeros(1), np.ones(1), np.ones(1, bool),
                      np.zeros(1, bool))  # fmt: skip
    for odd in (nested, text, swapped):
        assert not h5encode.fits([*plain, odd], EPISODE_KEYS)
    monkeypatch.setattr(h5encode, "MAX_EPISODES", 2)
    assert not h5encode.fits(plain, EPISODE_KEYS)
    write_episodes(tmp_path / "d.hdf5", plain)
    with h5py.File(tmp_path / "d.hdf5", "r") as file:  # the library's layout: chunked
        assert file["episode_1/observations"].chunks is not None
    assert content_hash(read_episodes(tmp_path / "d.hdf5")) == content_hash(plain)


def test_the_same_episodes_give_the_same_bytes(tmp_path):
    episodes = _varied()
    first = b"".join(h5encode.encode_file(episodes, EPISODE_KEYS, {"v": 2}))
    assert first == b"".join(h5encode.encode_file(_varied(), EPISODE_KEYS, {"v": 2}))
    (tmp_path / "d.hdf5").write_bytes(first)
    assert content_hash(read_episodes(tmp_path / "d.hdf5")) == content_hash(episodes)
