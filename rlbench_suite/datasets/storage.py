"""Minari's HDF5 layout, written deterministically, and the content hash over the data.

A dataset folder holds ``data/main_data.hdf5`` (one group ``episode_<i>`` per episode with
``observations`` (T+1 rows), ``actions``, ``rewards``, ``terminations`` and ``truncations``
(T rows each) and the attributes ``id``, ``seed`` and ``total_steps``) and
``data/metadata.json`` (Minari's dataset metadata), so ``minari.load_dataset`` reads it from
a Minari data path. Text spaces are stored as UTF-8 strings, Dict and Tuple spaces as groups,
as Minari does.

The same episodes always give the same bytes: no timestamps (``track_times=False``), the
oldest file format (no per-object times), contiguous datasets in a fixed order, and a
metadata file with sorted keys. The content hash (:func:`content_hash`) covers the arrays,
their dtypes and shapes and the episode seeds, not the HDF5 container, so it holds where a
different h5py writes other bytes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rlbench_suite.core.dataset_cards import DATA_FILE, METADATA_FILE

MINARI_FORMAT_VERSION = "0.5.0"
"""The ``minari_version`` written to the metadata: the HDF5 layout of Minari 0.5, read by
every Minari 0.5.x (recorded as a constant so that the bytes do not depend on the installed
Minari)."""
STEP_KEYS = ("actions", "rewards", "terminations", "truncations")
EPISODE_KEYS = ("observations", *STEP_KEYS)


class DatasetFileError(OSError):
    """A dataset file that is missing, truncated or corrupt; the message names it."""


@dataclass
class Episode:
    """One episode: ``observations`` has one row more than the step arrays (the last next
    observation); ``terminations`` and ``truncations`` are kept apart."""

    observations: Any
    actions: Any
    rewards: np.ndarray
    terminations: np.ndarray
    truncations: np.ndarray
    seed: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.rewards)

    @property
    def total_return(self) -> float:
        return float(np.sum(self.rewards, dtype=np.float64))


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


def _write_leaf(group: Any, name: str, value: Any) -> None:
    import h5py

    if _is_text(value):
        data = np.array([v if isinstance(v, str) else v.decode() for v in value], dtype=object)
        group.create_dataset(name, data=data, dtype=h5py.string_dtype("utf-8"),
                             track_times=False)  # fmt: skip
        return
    group.create_dataset(name, data=np.ascontiguousarray(value), track_times=False)


def _write_value(group: Any, name: str, value: Any) -> None:
    if isinstance(value, dict | tuple):
        inner = group.create_group(name)
        items = value.items() if isinstance(value, dict) else (
            (f"_index_{i}", v) for i, v in enumerate(value)
        )  # fmt: skip
        for key, item in sorted(items):
            _write_value(inner, key, item)
    else:
        _write_leaf(group, name, value)


def write_episodes(path: Path, episodes: Iterable[Episode]) -> tuple[int, int]:
    """Write ``episodes`` to the HDF5 file ``path`` (Minari's layout); ``(episodes, steps)``."""
    import h5py

    count = steps = 0
    with h5py.File(path, "w", libver="earliest", track_order=False) as file:
        for index, episode in enumerate(episodes):
            group = file.create_group(f"episode_{index}")
            group.attrs["id"] = np.int64(index)
            if episode.seed is not None:
                group.attrs["seed"] = np.int64(episode.seed)
            group.attrs["total_steps"] = np.int64(len(episode))
            for key in EPISODE_KEYS:
                _write_value(group, key, getattr(episode, key))
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


def read_episodes(path: Path) -> Iterator[Episode]:
    """The episodes of the HDF5 file ``path``, in order; a :class:`DatasetFileError` when the
    file is missing, truncated or corrupt."""
    import h5py

    try:
        with h5py.File(path, "r") as file:
            for name in _episode_order(file):
                group = file[name]
                values = {key: _read_value(group[key]) for key in EPISODE_KEYS}
                seed = group.attrs.get("seed")
                yield Episode(**values, seed=None if seed is None else int(seed))
    except FileNotFoundError:
        raise DatasetFileError(f"{path}: no such file") from None
    except (OSError, KeyError, ValueError) as exc:
        raise DatasetFileError(
            f"{path}: not a readable dataset file, truncated or corrupt ({exc}); run "
            "`rlbench datasets verify` and download or build it again"
        ) from None


def dataset_files(folder: Path) -> list[Path]:
    """The files of a dataset folder, as the card lists them (data file, then metadata)."""
    return [folder / DATA_FILE, folder / METADATA_FILE]
