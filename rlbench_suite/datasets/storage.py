"""Minari's HDF5 layout, written deterministically, and the content hash over the data.

A dataset folder holds ``data/main_data.hdf5`` (one group ``episode_<i>`` per episode with
``observations`` (T+1 rows), ``actions``, ``rewards``, ``terminations`` and ``truncations``
(T rows each) and the attributes ``id``, ``seed`` and ``total_steps``) and
``data/metadata.json`` (Minari's dataset metadata), so ``minari.load_dataset`` reads it from
a Minari data path. Text spaces are stored as UTF-8 strings, Dict and Tuple spaces as groups,
as Minari does; joint multi-agent episodes hold a group per agent under ``observations``,
``actions`` and ``rewards``.

Storage version 2 (:data:`STORAGE_VERSION`, the root attribute ``rlbench_storage``): HDF5
1.10 features (compact link storage in groups, single-chunk datasets without a B-tree) and the
shuffle and gzip filters that every HDF5 build ships, so Minari and plain h5py read it without
plugins. Episodes of plain numeric arrays are encoded directly
(:mod:`~rlbench_suite.datasets.h5encode`, which says how each array is stored); others go
through h5py: every array one chunk (one episode; at most :data:`MAX_CHUNK_BYTES`), shuffled
and gzipped, dataset headers without room for attributes (:func:`_no_attributes_hint`).
Version 1 (no attribute) was contiguous and uncompressed in the oldest format; it reads the
same. A file of a newer version is refused with a message naming both versions. The version
changes when a reader of the previous one could not read the files: the encoder's later
choices within the format (one dataset hard-linked from the episodes that hold equal arrays,
the shuffle filter's element a whole row) kept version 2, since h5py follows them unaided.

The same episodes always give the same bytes: no timestamps (``track_times=False``), fixed
filters and chunks, datasets in a fixed order, and a metadata file with sorted keys. The
content hash (:func:`content_hash`) covers the arrays, their dtypes and shapes and the episode
seeds, not the HDF5 container, so it holds where a different h5py writes other bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rlbench_suite.core.dataset_cards import DATA_FILE, METADATA_FILE
from rlbench_suite.datasets import h5encode

MINARI_FORMAT_VERSION = "0.5.0"
"""The ``minari_version`` written to the metadata: the HDF5 layout of Minari 0.5, read by
every Minari 0.5.x (recorded as a constant so that the bytes do not depend on the installed
Minari)."""
STORAGE_VERSION = 2
"""The layout of the HDF5 container written here (module doc); readers refuse newer ones."""
STORAGE_ATTR = "rlbench_storage"
GZIP_LEVEL = 4
"""gzip level of the arrays written through h5py (the direct encoder deflates with libdeflate:
:data:`~rlbench_suite.datasets.h5encode.DEFLATE_LEVEL`); 9 saves under 1% on CartPole data
and writes slower."""
MAX_CHUNK_BYTES = 4 << 20
"""Arrays larger than this (image episodes) are split into chunks of whole rows."""
STEP_KEYS = ("actions", "rewards", "terminations", "truncations")
EPISODE_KEYS = ("observations", *STEP_KEYS)


REPAIR = "run `rlbench datasets verify` and download or build it again"
"""What to do about a dataset file that does not read (``verify`` itself says less)."""


class DatasetFileError(OSError):
    """A dataset file that is missing, truncated or corrupt; the message names it."""


@dataclass
class Episode:
    """One episode: ``observations`` has one row more than the step arrays (the last next
    observation); ``terminations`` and ``truncations`` are kept apart. Joint multi-agent
    episodes (:mod:`~rlbench_suite.datasets.joint`) hold ``observations``, ``actions`` and
    ``rewards`` as ``{agent: array}`` (a group per agent in the file)."""

    observations: Any
    actions: Any
    rewards: np.ndarray
    terminations: np.ndarray
    truncations: np.ndarray
    seed: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.terminations)

    @property
    def total_return(self) -> float:
        """The episode's return (:func:`episode_return`)."""
        return episode_return(self.rewards)


def episode_return(rewards: Any) -> float:
    """An episode's return from its rewards: their sum; of joint episodes (``{agent:
    rewards}``), the mean over agents of each agent's return."""
    if isinstance(rewards, dict):
        return float(np.mean([np.sum(r, dtype=np.float64) for r in rewards.values()]))
    return float(np.sum(rewards, dtype=np.float64))


def _leaves(name: str, value: Any) -> Iterator[tuple[str, Any]]:
    """``(path, array or list of str)`` of a possibly nested (dict/tuple) value, sorted."""
    if isinstance(value, dict):
        for key in sorted(value):
            yield from _leaves(f"{name}/{key}", value[key])
    elif isinstance(value, tuple):
        for i, item in enumerate(value):
            yield from _leaves(f"{name}/_index_{i}", item)
    else:
        yield name, value


def _is_text(value: Any) -> bool:
    if isinstance(value, np.ndarray) and value.dtype.kind not in "OSU":
        return False
    return isinstance(value, list | np.ndarray) and len(value) > 0 and all(
        isinstance(v, str | bytes) for v in value
    )  # fmt: skip


def _hash_leaf(digest: Any, name: str, value: Any) -> None:
    if _is_text(value):
        encoded = [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in value]
        digest.update(f"{name}|text|{len(encoded)}\n".encode())
        for item in encoded:
            digest.update(len(item).to_bytes(8, "little") + item)
        return
    array = np.ascontiguousarray(value)
    if array.dtype.byteorder == ">":
        array = array.astype(array.dtype.newbyteorder("<"))
    digest.update(f"{name}|{array.dtype.str}|{array.shape}\n".encode())
    digest.update(array.tobytes())


def content_hash(episodes: Iterable[Episode]) -> str:
    """SHA-256 over every episode's seed and arrays (names, dtypes, shapes, bytes) in order."""
    digest = hashlib.sha256(b"rlbench-dataset-content-v1\n")
    for index, episode in enumerate(episodes):
        digest.update(f"episode {index} seed {episode.seed}\n".encode())
        for key in EPISODE_KEYS:
            for name, leaf in _leaves(key, getattr(episode, key)):
                _hash_leaf(digest, name, leaf)
    return digest.hexdigest()


def _no_attributes_hint(dcpl: Any) -> None:
    """Tell HDF5 the dataset gets no attributes, so its header is not padded to 256 bytes
    (about 500 bytes less per episode). Without the library (not Linux) the file is larger:
    its bytes then differ from the card's, its content hash does not."""
    import ctypes

    library = h5encode.hdf5_library()
    if library is not None and library.H5Pset_dset_no_attrs_hint(
        ctypes.c_int64(dcpl.id), ctypes.c_uint(1)
    ) < 0:  # fmt: skip
        raise RuntimeError("H5Pset_dset_no_attrs_hint failed")


class _Writer:
    """Writes episodes into an open h5py file with h5py's low-level API (a few times faster
    than ``create_dataset`` for short episodes), reusing property lists and types. Groups are
    passed around as low-level group ids."""

    def __init__(self, file: Any) -> None:
        import h5py

        self.h5 = h5py
        self.root = file.id
        self.untimed = h5py.h5p.create(h5py.h5p.GROUP_CREATE)
        self.untimed.set_obj_track_times(False)
        self.types: dict[np.dtype, Any] = {}
        self.layouts: dict[tuple[tuple[int, ...], bool], Any] = {}
        self.scalar = h5py.h5s.create(h5py.h5s.SCALAR)

    def attribute(self, parent: Any, name: str, value: int) -> None:
        attribute = self.h5.h5a.create(parent, name.encode(), self.h5.h5t.STD_I64LE, self.scalar)
        attribute.write(np.array(value, dtype="<i8"))

    def group(self, parent: Any, name: str) -> Any:
        """A new group ``name`` in ``parent`` (no times in its header)."""
        return self.h5.h5g.create(parent, name.encode(), gcpl=self.untimed)

    def episode(self, index: int, episode: Episode) -> None:
        group = self.group(self.root, f"episode_{index}")
        self.attribute(group, "id", index)
        if episode.seed is not None:
            self.attribute(group, "seed", episode.seed)
        self.attribute(group, "total_steps", len(episode))
        for key in EPISODE_KEYS:
            self.value(group, key, getattr(episode, key))

    def value(self, group: Any, name: str, value: Any) -> None:
        if isinstance(value, dict | tuple):
            inner = self.group(group, name)
            items = value.items() if isinstance(value, dict) else (
                (f"_index_{i}", v) for i, v in enumerate(value)
            )  # fmt: skip
            for key, item in sorted(items):
                self.value(inner, key, item)
        elif _is_text(value):
            data = np.array([v if isinstance(v, str) else v.decode() for v in value],
                            dtype=object)  # fmt: skip
            self.h5.Group(group).create_dataset(name, data=data, track_times=False,
                                                dtype=self.h5.string_dtype("utf-8"))  # fmt: skip
        else:
            self.array(group, name, np.ascontiguousarray(value))

    def _layout(self, array: np.ndarray) -> Any:
        """One chunk (of whole rows, at most :data:`MAX_CHUNK_BYTES`), shuffled for items
        wider than a byte, gzipped; empty and 0-d arrays contiguous."""
        chunked = array.ndim > 0 and array.size > 0
        rows = min(len(array), max(1, MAX_CHUNK_BYTES // max(1, array[0].nbytes))) if chunked else 0
        key = ((rows, *array.shape[1:]) if chunked else (), array.dtype.itemsize > 1)
        if key not in self.layouts:
            dcpl = self.h5.h5p.create(self.h5.h5p.DATASET_CREATE)
            dcpl.set_obj_track_times(False)
            if chunked:
                dcpl.set_chunk(key[0])
                if key[1]:
                    dcpl.set_shuffle()
                dcpl.set_deflate(GZIP_LEVEL)
            _no_attributes_hint(dcpl)
            self.layouts[key] = dcpl
        return self.layouts[key]

    def array(self, group: Any, name: str, array: np.ndarray) -> None:
        h5s = self.h5.h5s
        kind = self.types.get(array.dtype)
        if kind is None:
            kind = self.types[array.dtype] = self.h5.h5t.py_create(array.dtype, logical=True)
        space = h5s.create_simple(array.shape) if array.ndim > 0 else self.scalar
        dataset = self.h5.h5d.create(group, name.encode(), kind, space, dcpl=self._layout(array))
        if array.size > 0:
            dataset.write(h5s.ALL, h5s.ALL, array)


def write_episodes(path: Path, episodes: Iterable[Episode]) -> tuple[int, int]:
    """Write ``episodes`` to the HDF5 file ``path`` (Minari's layout, storage version
    :data:`STORAGE_VERSION`); ``(episodes, steps)``. Episodes of plain numeric arrays are
    encoded directly (:mod:`~rlbench_suite.datasets.h5encode`), others through h5py."""
    episodes = list(episodes)
    if h5encode.fits(episodes, EPISODE_KEYS):
        root = {STORAGE_ATTR: STORAGE_VERSION}
        pieces = h5encode.encode_file(episodes, EPISODE_KEYS, root)
        with open(path, "wb") as file:
            file.writelines(pieces)
        return len(episodes), sum(len(e) for e in episodes)
    return _write_with_h5py(path, episodes)


def _write_with_h5py(path: Path, episodes: list[Episode]) -> tuple[int, int]:
    import h5py
    from h5py import h5f, h5p

    fcpl = h5p.create(h5p.FILE_CREATE)
    fcpl.set_obj_track_times(False)  # the root group's header: no times either
    fapl = h5p.create(h5p.FILE_ACCESS)
    fapl.set_libver_bounds(h5f.LIBVER_V110, h5f.LIBVER_V110)
    count = steps = 0
    with h5py.File(h5f.create(os.fsencode(path), h5f.ACC_TRUNC, fcpl=fcpl, fapl=fapl)) as file:
        writer = _Writer(file)
        writer.attribute(file.id, STORAGE_ATTR, STORAGE_VERSION)
        for index, episode in enumerate(episodes):
            writer.episode(index, episode)
            count, steps = count + 1, steps + len(episode)
    return count, steps


def minari_metadata(
    dataset_id: str, env_spec_json: str | None, observation_space: Any, action_space: Any,
    episodes: int, steps: int, extra: dict[str, Any],
) -> dict[str, Any]:  # fmt: skip
    """Minari's ``metadata.json`` content for a dataset (deterministic: no size, no dates)."""
    from minari.serialization import serialize_space

    metadata = {
        "dataset_id": dataset_id,
        "minari_version": MINARI_FORMAT_VERSION,
        "data_format": "hdf5",
        "jpeg_encoding": False,
        "total_episodes": episodes,
        "total_steps": steps,
        "observation_space": serialize_space(observation_space),
        "action_space": serialize_space(action_space),
        **extra,
    }
    if env_spec_json is not None:
        metadata["env_spec"] = env_spec_json
        metadata["eval_env_spec"] = env_spec_json
    return metadata


def write_metadata(path: Path, metadata: dict[str, Any]) -> None:
    """``metadata`` as JSON with sorted keys (the same content gives the same bytes)."""
    path.write_text(json.dumps(metadata, sort_keys=True, indent=1) + "\n", encoding="utf-8")


def _read_value(node: Any) -> Any:
    import h5py

    if isinstance(node, h5py.Group):
        keys = list(node.keys())
        if keys and all(k.startswith("_index_") for k in keys):
            return tuple(_read_value(node[f"_index_{i}"]) for i in range(len(keys)))
        return {key: _read_value(node[key]) for key in keys}
    if h5py.check_string_dtype(node.dtype) is not None:
        return [v.decode("utf-8") for v in node[()]]
    return node[()]


def _episode_order(file: Any) -> list[str]:
    names = [n for n in file if n.startswith("episode_")]
    return sorted(names, key=lambda n: int(n.removeprefix("episode_")))


def _check_version(path: Path, file: Any) -> None:
    version = int(file.attrs.get(STORAGE_ATTR, 1))
    if version > STORAGE_VERSION:
        raise DatasetFileError(
            f"{path}: storage version {version}, newer than this rlbench-suite reads "
            f"(1 to {STORAGE_VERSION}); upgrade rlbench-suite or build the dataset again"
        )


def read_episodes(path: Path) -> Iterator[Episode]:
    """The episodes of the HDF5 file ``path``, in order; a :class:`DatasetFileError` when the
    file is missing, truncated or corrupt."""
    import h5py

    try:
        with h5py.File(path, "r") as file:
            _check_version(path, file)
            for name in _episode_order(file):
                group = file[name]
                values = {key: _read_value(group[key]) for key in EPISODE_KEYS}
                seed = group.attrs.get("seed")
                yield Episode(**values, seed=None if seed is None else int(seed))
    except FileNotFoundError:
        raise DatasetFileError(f"{path}: no such file") from None
    except DatasetFileError:
        raise
    except (OSError, KeyError, ValueError) as exc:
        raise DatasetFileError(
            f"{path}: not a readable dataset file, truncated or corrupt ({exc}); {REPAIR}"
        ) from None


def dataset_files(folder: Path) -> list[Path]:
    """The files of a dataset folder, as the card lists them (data file, then metadata)."""
    return [folder / DATA_FILE, folder / METADATA_FILE]
