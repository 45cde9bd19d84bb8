"""Offline environment ids (D4RL style) and the Minari-style ``load`` / ``recover_environment``.

Every dataset card is registered as a Gymnasium id (``rlbench/CartPole-medium-v0``) whose env
is the online env (``card.env_id``, with its standardized wrappers, scoring episodes on the
dataset's references) plus ``get_dataset()`` and ``get_normalized_score(returns)``, as D4RL
users expect (:class:`OfflineEnv`, registered by ``registry.register_offline``).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from rlbench_suite.core.cards import Normalized
from rlbench_suite.core.dataset_cards import DATA_FILE, DatasetCard, get_dataset_card
from rlbench_suite.core.offline_cards import offline_env_card
from rlbench_suite.datasets.cache import (
    adopt_same_content,
    check_file,
    dataset_folder,
    expected_files,
    is_cached,
)
from rlbench_suite.datasets.hints import build_hint, datasets_command
from rlbench_suite.datasets.joint import is_joint
from rlbench_suite.datasets.loader import OfflineDataset
from rlbench_suite.datasets.storage import DatasetFileError
from rlbench_suite.wrappers.base import VersionedWrapper, register_wrapper


def load(dataset_id: str | DatasetCard, download: bool = False,
         root: Path | None = None) -> OfflineDataset:  # fmt: skip
    """The dataset ``dataset_id`` from the cache (downloaded first if ``download``); its files
    are checked against the card's sizes and SHA-256 first (or those of a local verification,
    see :data:`~rlbench_suite.datasets.cache.VERIFIED_FILE`). Files in other bytes that hold
    the card's data (an earlier writer's) are accepted after their content hash is checked
    (:func:`~rlbench_suite.datasets.cache.adopt_same_content`); anything else is refused. A
    remote that failed before another delivered the files is a ``UserWarning`` (once the
    download is done; a failed download's error lists every remote)."""
    return _load(dataset_id, download, root)


def _load(dataset_id: str | DatasetCard, download: bool, root: Path | None,
          stacklevel: int = 3) -> OfflineDataset:  # fmt: skip
    """:func:`load`, its warnings ``stacklevel`` frames up (3: the caller of the public
    function that called this one)."""
    card = get_dataset_card(dataset_id)
    folder = dataset_folder(card, root)
    get = (f"{datasets_command(f'download {card.id}', root)} fetches it again" if card.remotes
           else build_hint(card, root, " builds it again (no public mirror exists yet)"))
    fix = f"{datasets_command(f'delete {card.id}', root)} removes it; {get}"
    why = None  # why a copy in other bytes is not the card's data (None: it is, recorded)
    if not is_cached(card, root):
        why = adopt_same_content(card, root) if (folder / DATA_FILE).is_file() else "missing"
    if why is not None:
        if not download:
            from rlbench_suite.datasets.remotes import resume_hint

            resume = resume_hint(card, root)
            if resume is not None:  # its .part bytes: a --build would start over
                raise FileNotFoundError(f"{card.id} is not in the cache ({folder}): {resume}")
            files = expected_files(card, root)
            for file in files:  # a file there but cut short: name it
                problem = check_file(folder / file.path, file.size, file.sha256)
                if problem is not None and problem != "missing":
                    detail = f" ({why})" if file.path == DATA_FILE and why != problem else ""
                    raise DatasetFileError(f"{folder / file.path}: {problem}{detail}; {fix}")
            gone = [f.path for f in files if not (folder / f.path).is_file()]
            if len(gone) < len(files):  # partly there: name what is missing
                raise DatasetFileError(f"{folder / gone[0]}: missing (the dataset is only partly "
                                       f"in the cache); {fix}")  # fmt: skip
            fetch_hint = " or load(..., download=True)" if card.remotes else ""
            raise FileNotFoundError(
                f"{card.id} is not in the cache ({folder}); run "
                + build_hint(card, root, " (no public mirror exists yet: --build builds it "
                                         f"from source){fetch_hint}")
            )
        from rlbench_suite.datasets.remotes import DownloadError
        from rlbench_suite.datasets.remotes import download as fetch

        fallbacks: list[str] = []  # as the CLI's notes: a remote failed, the next was tried
        try:
            fetch(card, root, notice=fallbacks.append)
        except DownloadError as exc:
            raise DownloadError(f"{exc}; run {build_hint(card, root, ' to build it from source')}"
                                ) from None  # fmt: skip
        for line in fallbacks:  # (a failure's error lists every remote) at the caller's line
            warnings.warn(f"{card.id}: {line}", UserWarning, stacklevel=stacklevel)
    for file in expected_files(card, root):  # a corrupt or replaced file is refused, naming it
        problem = check_file(folder / file.path, file.size, file.sha256)
        if problem is None:
            continue
        why = adopt_same_content(card, root) if file.path == DATA_FILE else problem
        if why is not None:
            detail = "" if why == problem else f"; {why}"
            raise DatasetFileError(f"{folder / file.path}: {problem} (the file is corrupt or "
                                   f"not this dataset's{detail}); {fix}")  # fmt: skip
    dataset = OfflineDataset(folder / DATA_FILE, card.id)
    dataset.card = card  # type: ignore[attr-defined]
    return dataset


def recover_environment(dataset_id: str | DatasetCard, eval_env: bool = False,
                        **kwargs: Any) -> Any:  # fmt: skip
    """The env the dataset was recorded in (Minari's ``recover_environment``); the evaluation
    env is the same env. That is ``gym.make`` of the card's ``env_id``, and for joint data
    (CoopNav) its PettingZoo Parallel env (``make_multiagent(env_id, "parallel")``), where the
    data's joint actions replay it: its Gymnasium view (``gym.make``, its agent beside scripted
    partners) is another game."""
    card = get_dataset_card(dataset_id)
    if is_joint(card.env_id):
        from rlbench_suite.registry import make_multiagent

        return make_multiagent(card.env_id, "parallel", **kwargs)
    return gym.make(card.env_id, **kwargs)


@register_wrapper("rlbench/OfflineDataset-v0")
class OfflineEnv(VersionedWrapper, gym.Wrapper):
    """The online env of a dataset plus ``get_dataset()`` and ``get_normalized_score()``.

    ``gym.make(offline id)`` puts it on top of the online env's standard stack, whose
    statistics score episodes on the dataset's references (``core.offline_cards``); the
    registry records it in the offline id's spec as ``rlbench/OfflineDataset-v0``.
    """

    def __init__(self, env: gym.Env, dataset_id: str, root: str | None = None) -> None:
        VersionedWrapper.__init__(self, dataset_id=dataset_id, root=root)
        gym.Wrapper.__init__(self, env)
        self.dataset_card = get_dataset_card(dataset_id)
        self._root = Path(root) if root is not None else None
        self._joint = is_joint(self.dataset_card.env_id)
        self._warned_joint = False

    @property
    def dataset_id(self) -> str:
        return self.dataset_card.id

    @property
    def ref_min_score(self) -> float:
        """The random reference return (D4RL's attribute of the same name)."""
        return self.dataset_card.reference.random.value

    @property
    def ref_max_score(self) -> float:
        """The expert reference return (D4RL's attribute of the same name)."""
        return self.dataset_card.reference.expert.value

    def get_dataset(self, download: bool = False) -> dict[str, Any]:
        """D4RL's dict of the dataset (see :meth:`OfflineDataset.get_dataset`)."""
        return _load(self.dataset_card, download, self._root).get_dataset()

    def load_dataset(self, download: bool = False) -> OfflineDataset:
        """The dataset itself (episode views and the transition sampler)."""
        return _load(self.dataset_card, download, self._root)

    def get_normalized_score(self, returns: Any, *, team: bool | None = None) -> Any:
        """D4RL's normalized score of ``returns`` on this dataset's reference returns, on D4RL's
        (and ``minari.get_normalized_score``'s) 0-1 scale: 0 is random, 1 expert. This is the
        suite's 0-100 normalized score (``core.scoring``, as ``rlbench`` reports it elsewhere)
        divided by 100.

        On joint data (CoopNav) say which returns these are: ``team=True`` for the data's team
        returns in the multi-agent game (the dataset's references), ``team=False`` for returns
        of this Gymnasium view (its agent beside scripted partners, another game: the online
        card's references, as the view's episode statistics use). Left out, the dataset's
        references are used and a warning says so once. Other data takes no ``team``."""
        if not self._joint:
            if team is not None:
                raise TypeError(f"team= applies to joint data only; {self.dataset_card.id} holds "
                                "single-agent data: call get_normalized_score(returns)")
            card: Normalized = self.dataset_card
        elif team is None or team is True:
            card = self.dataset_card
            if team is None and not self._warned_joint:
                self._warned_joint = True
                warnings.warn(
                    f"{self.dataset_card.id}'s references are the team's returns in the "
                    f"multi-agent game {self.dataset_card.env_id}: normalize the data's team "
                    "returns with them, not the returns of this Gymnasium view (its agent beside "
                    "scripted partners: another game, which they overstate); say which with "
                    "team=True (the data's) or team=False (this view's)",
                    UserWarning, stacklevel=2,
                )  # fmt: skip
        elif team is False:
            card = offline_env_card(self.dataset_card)
        else:
            raise TypeError(f"team takes True, False or None, got {team!r}")
        score = card.normalized_score(returns)
        return score / 100 if np.ndim(score) else float(score) / 100
