"""The environment card of an offline id: what the harness, the trainer and the registry see.

An offline id (``rlbench/QuadHover-medium-v0``) is the online env of its dataset card plus
the dataset. Its :class:`~rlbench_suite.core.cards.EnvCard` is derived from the two cards,
never written by hand: the online card's entry point, kwargs, wrappers, step limit, success
rule and evaluation seeds; the dataset card's id and reference returns; ``family =
"offline"``, ``primary_metric = "return"`` and :data:`EVAL_EPISODES` episodes by default.
So an offline id is scored as D4RL scores it: the episode return on the dataset's random (0)
to expert (100) scale, which is 100 times D4RL's ``get_normalized_score``
(:data:`NORMALIZATION_SCALE`).
"""

from __future__ import annotations

import functools

from rlbench_suite.core.cards import EnvCard, References
from rlbench_suite.core.catalog import UnknownEnvError, get_card, normalize_id
from rlbench_suite.core.dataset_cards import DatasetCard, dataset_cards, get_dataset_card

OFFLINE_FAMILY = "offline"
EVAL_EPISODES = 20
"""Episodes of an offline id's default protocol (CORL evaluates 10; the online cards 50-100):
offline baselines are many small runs, each scored by the harness."""
NORMALIZATION_SCALE = (
    "0-100 on the dataset card's random and expert returns: 100 x D4RL's get_normalized_score"
)
"""What an offline id's normalized score is (recorded in its Results)."""


def offline_env_card(dataset: str | DatasetCard) -> EnvCard:
    """The environment card of ``dataset``'s offline id (module docstring)."""
    return _offline_env_card(get_dataset_card(dataset).id)


@functools.cache
def _offline_env_card(dataset_id: str) -> EnvCard:
    dataset = get_dataset_card(dataset_id)
    online = get_card(dataset.env_id)
    # joint data's references are the team's; the env itself plays the card's agent beside
    # its partners, so its episodes are scored on the online card's references
    references = (online.reference if is_joint_card(online) else
                  References(random=dataset.reference.random, expert=dataset.reference.expert))
    return online.model_copy(update={
        "id": dataset.id,
        "family": OFFLINE_FAMILY,
        "primary_metric": "return",
        "reference": references,
        "trained": [],
        "evaluation": online.evaluation.model_copy(update={"episodes": EVAL_EPISODES}),
        "suites": [],
        "tags": [*online.tags, "offline", dataset.kind],
        "upstream_id": None,
        "description": f"{online.id} with the dataset {dataset.id}: {dataset.description}",
    }, deep=True)  # fmt: skip


def is_joint_card(card: EnvCard) -> bool:
    """Whether ``card``'s datasets are joint data (a PettingZoo Parallel card's, or an
    offline id of one): every agent's observations, actions and rewards."""
    return card.api == "pettingzoo-parallel"


def refuse_joint_data(card: EnvCard, what: str) -> None:
    """Refuse ``what`` (a single-agent policy's scoring or training) on an offline id of
    joint data, saying what the data is and where a policy is scored instead."""
    dataset = dataset_of(card)
    if dataset is None or not is_joint_card(card):
        return
    raise ValueError(
        f"{card.id} holds joint data of the multi-agent env {dataset.env_id} (every agent's "
        f"observations, actions and rewards; its returns and references are the team's), "
        f"and {what} takes a single-agent policy, which plays {card.agent} beside scripted "
        f"partners: another game, on other references. Read the data with "
        f"rlbench_suite.datasets.load({card.id!r}) or get_dataset(); score a policy on the "
        f"online card {dataset.env_id}"
    )


def offline_env_cards() -> list[EnvCard]:
    """The card of every offline id whose online card loads (the leaderboard's catalog takes
    them beside the environment cards)."""
    found = []
    for dataset_id in dataset_cards():
        try:
            found.append(offline_env_card(dataset_id))
        except UnknownEnvError:  # the online card failed to load: its own warning says why
            continue
    return found


def dataset_of(card: EnvCard) -> DatasetCard | None:
    """The dataset card of an offline id's card; None for any other card."""
    if card.family != OFFLINE_FAMILY:
        return None
    return dataset_cards().get(card.id)


def is_offline_id(env_id: str) -> bool:
    """Whether ``env_id`` names a dataset (an offline id)."""
    return normalize_id(env_id) in dataset_cards()


def resolve_card(env_id: str | EnvCard) -> EnvCard:
    """The card of an environment id or of an offline id; an unknown id's error suggests
    the closest environment ids, and names the closest dataset ids too."""
    if isinstance(env_id, EnvCard):
        return env_id
    try:
        return get_card(env_id)
    except UnknownEnvError as exc:
        if is_offline_id(env_id):
            return offline_env_card(normalize_id(env_id))
        from rlbench_suite.core.catalog import closest_ids

        close = closest_ids(normalize_id(env_id), list(dataset_cards()))
        hint = f" Offline (dataset) ids close to it: {', '.join(close)}." if close else ""
        raise UnknownEnvError(f"{exc}{hint}") from None
