"""Record the dataset cards' file hashes again after a change of how the data is written.

    .venv/bin/python scripts/dataset_rehash.py [--reuse CACHE] [ID...]  # every built card

The data does not change, only its file bytes: each card's episodes are read from a cached
copy that holds the card's content (its content hash), in the cache or in the cache folder
``--reuse`` (only read), else built again from source (the build must give the card's
content hash). They are written with the current writer into the cache, and the card's
``files`` (SHA-256, sizes) are recorded with ``card_writer.write_build``, its counts, content
hash and versions kept, but for the writer's packages (:data:`WRITER_PACKAGES`), whose versions
here are recorded. Cards whose bytes do not change are left as they are.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
from pathlib import Path

from rlbench_suite.core.dataset_cards import (
    DATA_FILE,
    DatasetCard,
    dataset_card_paths,
    dataset_cards,
)
from rlbench_suite.datasets.builder import (
    BUILD_VERSIONS,
    BuildMismatchError,
    BuildOutput,
    build,
    build_versions,
)
from rlbench_suite.datasets.cache import VERIFIED_FILE, dataset_folder, folder_lock
from rlbench_suite.datasets.card_writer import write_build
from rlbench_suite.datasets.hints import cpu_dependence, other_cpu_note
from rlbench_suite.datasets.storage import (
    DatasetFileError,
    content_hash,
    read_episodes,
    write_episodes,
)
from rlbench_suite.policies.core import file_sha256

WRITER_PACKAGES = ("h5py", "deflate")
"""The packages that decide a file's bytes from its episodes."""


def _cached_episodes(card: DatasetCard, folder: Path) -> list | None:
    """The episodes of the copy in ``folder`` where it holds the card's content and its
    metadata file."""
    try:
        episodes = list(read_episodes(folder / DATA_FILE))
    except DatasetFileError:
        return None
    meta = next(f for f in card.files if f.path != DATA_FILE)
    if content_hash(episodes) != card.content_sha256 or not (folder / meta.path).exists() or (
        file_sha256(folder / meta.path) != meta.sha256
    ):  # fmt: skip
        return None
    return episodes


def _through_h5py(card: DatasetCard) -> bool:
    """Whether ``card``'s episodes are written through h5py (joint data, text, dict or tuple
    spaces), which a change of the direct encoder leaves as they were."""
    import gymnasium as gym

    from rlbench_suite.datasets.joint import is_joint

    if is_joint(card.env_id):
        return True
    env = gym.make(card.env_id)
    env.close()
    plain = (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)
    return not all(isinstance(s, plain) for s in (env.observation_space, env.action_space))


def _versions(card: DatasetCard) -> dict[str, str]:
    """``card``'s recorded versions, with those of :data:`WRITER_PACKAGES` installed here."""
    here = build_versions()
    merged = {**card.build.versions, **{n: here[n] for n in WRITER_PACKAGES if n in here}}
    return {name: merged[name] for name in BUILD_VERSIONS if name in merged}


def rehash(card: DatasetCard, reuse: Path | None = None) -> str:
    """Write ``card``'s data again and record its files; what was done, in a few words."""
    if _through_h5py(card):
        return "written through h5py: left as it was"
    folder = dataset_folder(card)
    episodes = _cached_episodes(card, folder)
    if episodes is None and reuse is not None:
        episodes = _cached_episodes(card, dataset_folder(card, reuse))
        if episodes is not None:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / DATA_FILE).parent.mkdir(exist_ok=True)
            for f in card.files:
                if f.path != DATA_FILE:
                    shutil.copyfile(dataset_folder(card, reuse) / f.path, folder / f.path)
    if episodes is None:
        if other_cpu_note(card) is not None:  # its build here would train for nothing
            raise BuildMismatchError(f"not rehashed: {cpu_dependence(card)}, built on "
                                     f"{card.build.cpu}; rerun this script there (or --reuse a "
                                     "cache that holds its data)")  # fmt: skip
        out = build(card, folder, expect_content=card.content_sha256)
        how = "built"
    else:
        with folder_lock(folder):
            staging = folder / (DATA_FILE + ".rehash")
            write_episodes(staging, episodes)
            os.replace(staging, folder / DATA_FILE)
        files = [f.model_copy(update={"sha256": file_sha256(folder / f.path),
                                      "size": (folder / f.path).stat().st_size})
                 for f in card.files]  # fmt: skip
        out = BuildOutput(folder, card.episodes, card.steps, card.mean_return,  # type: ignore[arg-type]
                          card.content_sha256, files, {})  # type: ignore[arg-type]  # fmt: skip
        how = "re-encoded"
    (folder / VERIFIED_FILE).unlink(missing_ok=True)  # the card's hashes are the files' now
    if out.files == card.files:
        return f"{how}, bytes unchanged"
    write_build(dataset_card_paths()[card.id], dataclasses.replace(out, versions=_versions(card)))
    old, new = card.files[0].size, out.files[0].size
    return f"{how}, {DATA_FILE} {old} -> {new} bytes ({new / old - 1:+.1%})"


def main(args: list[str]) -> None:
    reuse = None
    if args[:1] == ["--reuse"]:
        reuse, args = Path(args[1]), args[2:]
    cards = dataset_cards()
    left = []
    for dataset_id in args or sorted(cards):
        card = cards[dataset_id]
        if card.files and card.content_sha256:
            try:
                print(f"{dataset_id}: {rehash(card, reuse)}", flush=True)
            except BuildMismatchError as exc:  # the others go on
                print(f"{dataset_id}: {exc}", flush=True)
                left.append(dataset_id)
    if left:
        raise SystemExit(f"{len(left)} not rehashed (their cards keep the files they had): "
                         f"{' '.join(left)}")  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1:])
