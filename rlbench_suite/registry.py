"""Registers every card: with Gymnasium, and multi-agent cards with PettingZoo too.

Registration is lazy: only ids, entry-point strings and wrapper specs are recorded, so
``import rlbench_suite`` imports no simulator. Every id gets the standardized stack as
``additional_wrappers`` (episode statistics first, then the card's wrappers), so
``gym.make(id)`` builds it and ``gym.make(env.spec)`` rebuilds it. A multi-agent id is
registered three ways: with PettingZoo's registry (``pettingzoo.make("aec"|"parallel", id)``),
through :func:`make_multiagent`, and with Gymnasium as the single-agent view of the card's
``agent`` playing against opponents (random unless ``opponents=`` is given).
"""

from __future__ import annotations

import functools
import importlib
import json
import re
import warnings
from typing import Any, Literal

import gymnasium as gym
from gymnasium.envs.registration import WrapperSpec

from rlbench_suite.core.cards import EnvCard
from rlbench_suite.core.catalog import (
    RENAMED,
    RenamedEnvError,
    cards,
    catalog_errors,
    describe_ids,
    get_card,
    renamed_message,
)
from rlbench_suite.core.dataset_cards import DatasetCard, dataset_cards, dataset_catalog_errors
from rlbench_suite.core.offline_cards import offline_env_card, resolve_card
from rlbench_suite.core.protocol import canonical_hash
from rlbench_suite.core.wrapper_names import WRAPPERS, wrapper_entry_point
from rlbench_suite.wrappers.base import apply_wrappers
from rlbench_suite.wrappers.stats import set_reference_lookup

MultiAgentApi = Literal["parallel", "aec"]
AGENT_VIEW_ENTRY_POINT = "rlbench_suite.registry:make_agent_view"
OFFLINE_WRAPPER = "rlbench/OfflineDataset-v0"
WRAPPED_ENTRY_POINT = "rlbench_suite.registry:make_wrapped"
WRAPPED_VECTOR_ENTRY_POINT = "rlbench_suite.registry:make_wrapped_vector"
STATISTICS_WRAPPER = "rlbench/EpisodeStatistics-v0"


def wrapper_specs(card: EnvCard) -> tuple[WrapperSpec, ...]:
    """The standardized wrapper stack of ``card``, innermost first."""
    stats_kwargs = {
        "success": card.success.model_dump() if card.success else None,
        "metric": card.primary_metric,
        "scores_from": card.id,
        "random_score": None,
        "expert_score": None,
    }
    refs = [(STATISTICS_WRAPPER, stats_kwargs)]
    refs += [(ref.name, dict(ref.kwargs)) for ref in card.wrappers]
    return tuple(WrapperSpec(name, wrapper_entry_point(name), kwargs) for name, kwargs in refs)


def spec_hash(card: EnvCard) -> str:
    """SHA-256 of the registered Gymnasium spec of ``card`` (entry point, kwargs, stack)."""
    return canonical_hash(json.loads(gym.spec(card.id).to_json()))


def register_card(card: EnvCard) -> None:
    """Register one card with Gymnasium, and with PettingZoo if it is multi-agent."""
    if card.is_multiagent:
        _register_pettingzoo(card)
    if card.vector_entry_point is not None:
        _register_with_vector_entry_point(card)
        return
    gym.register(
        id=card.id,
        entry_point=AGENT_VIEW_ENTRY_POINT if card.is_multiagent else card.entry_point,
        vector_entry_point=card.vector_entry_point,
        max_episode_steps=card.max_episode_steps,
        reward_threshold=card.reward_threshold,
        kwargs=_agent_view_kwargs(card) if card.is_multiagent else dict(card.kwargs),
        additional_wrappers=wrapper_specs(card),
    )


def register_offline(dataset: DatasetCard) -> None:
    """Register a dataset's offline id: the online env's entry point and stack, scored on the
    dataset's references (:func:`~rlbench_suite.core.offline_cards.offline_env_card`), with
    the :data:`OFFLINE_WRAPPER` (``get_dataset()``, ``get_normalized_score``) on top. So
    ``env.spec`` is the offline id's own spec all the way down, and ``gym.make(env.spec)``
    rebuilds the same env."""
    try:
        card = offline_env_card(dataset)
    except LookupError:  # the online card failed to load: its own warning says why
        return
    offline = WrapperSpec(OFFLINE_WRAPPER, wrapper_entry_point(OFFLINE_WRAPPER),
                          {"dataset_id": dataset.id})  # fmt: skip
    native = card.vector_entry_point is not None  # make_wrapped builds the stack itself
    if card.is_multiagent:  # the Gymnasium view of the online game
        entry_point, kwargs = AGENT_VIEW_ENTRY_POINT, _agent_view_kwargs(get_card(dataset.env_id))
    elif native:
        entry_point, kwargs = WRAPPED_ENTRY_POINT, {"env_id": card.id, **card.kwargs}
    else:
        entry_point, kwargs = card.entry_point, dict(card.kwargs)
    gym.register(
        id=card.id,
        entry_point=entry_point,
        max_episode_steps=card.max_episode_steps,
        reward_threshold=card.reward_threshold,
        kwargs=kwargs,
        additional_wrappers=(*wrapper_specs(card), offline),
    )


def _agent_view_kwargs(card: EnvCard) -> dict[str, Any]:
    """The registered kwargs of a multi-agent card's Gymnasium view (in the spec and its hash)."""
    return {"env_id": card.id} | ({"opponents": card.opponents} if card.opponents else {})


def _register_with_vector_entry_point(card: EnvCard) -> None:
    """A card with a native vector env: the stacks come from the suite's own entry points.

    Gymnasium's ``make_vec`` refuses its ``vector_entry_point`` mode when the spec has
    ``additional_wrappers``, so such a card registers none: :func:`make_wrapped` returns the
    single env already wrapped (``gym.make`` recognizes the pre-applied wrappers, and
    ``gym.make(env.spec)`` rebuilds the same stack) and :func:`make_wrapped_vector` the
    native vector env with the vector forms of the stack. The environment must truncate
    itself at its ``max_episode_steps`` argument, so that the statistics see truncations.
    """
    gym.register(
        id=card.id,
        entry_point=WRAPPED_ENTRY_POINT,
        vector_entry_point=WRAPPED_VECTOR_ENTRY_POINT,
        max_episode_steps=card.max_episode_steps,
        reward_threshold=card.reward_threshold,
        kwargs={"env_id": card.id, **card.kwargs},
    )


def _with_time_limit(card: EnvCard, kwargs: dict[str, Any]) -> dict[str, Any]:
    if card.max_episode_steps is None or "max_episode_steps" in kwargs:
        return kwargs
    return {**kwargs, "max_episode_steps": card.max_episode_steps}


def make_wrapped(env_id: str, **kwargs: Any) -> gym.Env:
    """The entry point of a card with a native vector env (or of its offline ids): its single
    env, already wrapped."""
    card = resolve_card(env_id)
    env = load_entry_point(card.entry_point)(**_with_time_limit(card, kwargs))
    return apply_wrappers(env, list(wrapper_specs(card)))


BOOKKEEPING_WRAPPERS = ("Monitor", "RecordEpisodeStatistics")
"""Wrappers that change no observation, action or reward (SB3's and Gymnasium's episode
records): left out of a policy's recorded stack."""


def added_wrappers(spec: gym.envs.registration.EnvSpec | None) -> list[dict[str, Any]]:
    """The suite's wrappers applied on top of a card's registered stack in the env with this
    ``spec`` (``env.spec``), innermost first, as ``{"name", "kwargs"}``: what a policy trained
    on that env records, so the harness can rebuild its observations and actions.

    Bookkeeping wrappers (:data:`BOOKKEEPING_WRAPPERS`) are left out; any other wrapper is
    refused, since the harness rebuilds only the suite's versioned wrappers.
    """
    if spec is None:
        raise ValueError("the env has no spec: make it with gym.make('<card id>')")
    card = resolve_card(spec.id)
    registered = [w.name for w in wrapper_specs(card)]
    if card.family == "offline":
        registered.append(OFFLINE_WRAPPER)
    applied = [w for w in spec.additional_wrappers if w.name not in BOOKKEEPING_WRAPPERS]
    if [w.name for w in applied[: len(registered)]] != registered:
        raise ValueError(
            f"the env does not start with {spec.id}'s registered wrappers {registered}; make "
            f"it with gym.make({spec.id!r}) and wrap that"
        )
    extra = applied[len(registered):]
    unknown = [w.name for w in extra if w.name not in WRAPPERS]
    if unknown:
        raise ValueError(
            f"wrappers {unknown} are not versioned wrappers of the suite, so the harness could "
            f"not rebuild them; accepted: {', '.join(sorted(WRAPPERS))}"
        )
    return [{"name": w.name, "kwargs": dict(w.kwargs or {})} for w in extra]


def make_wrapped_vector(num_envs: int, env_id: str, **kwargs: Any) -> gym.vector.VectorEnv:
    """The vector entry point of such a card: its native vector env with the vector stack."""
    from rlbench_suite.wrappers.vector import VECTOR_FORMS, VectorEpisodeStatistics

    card = get_card(env_id)
    missing = [ref.name for ref in card.wrappers if ref.name not in VECTOR_FORMS]
    if missing:
        raise ValueError(
            f"{card.id}: wrappers {missing} have no vector form (vector forms exist for "
            f"{sorted(VECTOR_FORMS)}); use gym.make_vec(..., vectorization_mode='sync')"
        )
    creator = load_entry_point(card.vector_entry_point)
    venv = creator(num_envs=num_envs, **_with_time_limit(card, kwargs))
    venv = VectorEpisodeStatistics(venv, **wrapper_specs(card)[0].kwargs)
    for ref in card.wrappers:
        venv = VECTOR_FORMS[ref.name](venv, **ref.kwargs)
    return venv


def _register_pettingzoo(card: EnvCard) -> None:
    try:
        import pettingzoo
    except ImportError:  # the multiagent extra is not installed: make_multiagent explains
        return
    if not hasattr(pettingzoo, "register"):  # PettingZoo < 1.27 has no registry
        return
    for api in ("aec", "parallel"):  # both, so a turn-based game explains itself
        pettingzoo.register(
            api, card.id, entry_point=functools.partial(make_multiagent, card.id, api)
        )


def supported_apis(card: EnvCard) -> tuple[MultiAgentApi, ...]:
    """The PettingZoo APIs ``card`` can be made with."""
    return ("aec", "parallel") if card.api == "pettingzoo-parallel" else ("aec",)


@functools.cache
def register_all() -> int:
    """Register every card in the catalog (idempotent); returns how many.

    Cards that fail to load are left out with a :class:`CatalogWarning` naming the file and
    field (and listed by :func:`~rlbench_suite.core.catalog.catalog_errors`).
    """
    catalog = cards()
    set_reference_lookup(lambda env_id: resolve_card(env_id).reference_values())
    for card in catalog.values():
        register_card(card)
    _register_renamed()
    for dataset in dataset_cards().values():  # offline ids: the online env plus its dataset
        register_offline(dataset)
    for error in (*catalog_errors(), *dataset_catalog_errors()):
        warnings.warn(str(error), CatalogWarning, stacklevel=2)
    return len(catalog)


def refuse_renamed(env_id: str, **kwargs: Any) -> gym.Env:
    """The entry point of a renamed id: ``gym.make`` on it says which id to use."""
    raise RenamedEnvError(renamed_message(env_id))


def _register_renamed() -> None:
    """Register each renamed id to refuse itself, without Gymnasium's advice to "upgrade" to
    a higher version of the same name (rlbench/Chess-v6 is another game)."""
    for old in RENAMED:
        gym.register(id=old, entry_point=functools.partial(refuse_renamed, old))
        warnings.filterwarnings(
            "ignore", message=f".*The environment {re.escape(old)} is out of date",
            category=DeprecationWarning,
        )  # fmt: skip


class CatalogWarning(UserWarning):
    """A card failed to load and was left out."""


def load_entry_point(entry_point: str) -> Any:
    """Import ``module:attr``."""
    module_name, attr = entry_point.split(":")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def make_multiagent(env_id: str, api: MultiAgentApi | None = None, **kwargs: Any) -> Any:
    """Create a multi-agent id as a PettingZoo ``AECEnv`` or ``ParallelEnv``.

    ``api=None`` gives the game's native API. Natively parallel games convert to AEC with
    ``parallel_to_aec``; turn-based (AEC-only) games refuse ``api="parallel"`` clearly.
    The card's ``wrappers`` and ``max_episode_steps`` apply to the Gymnasium view
    (``gym.make(id)``), not to these PettingZoo environments.
    """
    if api not in (None, "parallel", "aec"):
        raise ValueError(f"api must be 'parallel', 'aec' or None (native), got {api!r}")
    card = get_card(env_id, suggest=lambda c: c.is_multiagent, kind="multi-agent environment")
    if not card.is_multiagent:
        raise ValueError(
            f"{card.id} is a single-agent environment; create it with gym.make({card.id!r})"
        )
    native = card.api.removeprefix("pettingzoo-")
    api = api or native  # type: ignore[assignment]
    if api not in supported_apis(card):
        raise ValueError(
            f"{card.id} is turn-based and has only the AEC API; use api='aec', or "
            f"gym.make({card.id!r}) to play it as its agent {card.agent!r} against opponents"
        )
    try:
        creator = load_entry_point(card.entry_point)
    except ImportError as exc:
        extra = card.extra or "multiagent"
        raise ImportError(
            f"{card.id} needs {exc.name!r}: pip install 'rlbench-suite[{extra}]'"
        ) from exc
    env = creator(**(dict(card.kwargs) | kwargs))
    if api == native:
        return env
    from pettingzoo.utils.conversions import parallel_to_aec

    return parallel_to_aec(env)


def make_batched(env_id: str, num_games: int, **kwargs: Any) -> gym.vector.VectorEnv:
    """The batched backend of a multi-agent id: ``num_games`` games in one Gymnasium VectorEnv.

    Slot ``g * n + i`` is agent ``i`` of game ``g`` (``n`` agents per game), so one policy
    with shared parameters steps every agent of every game per call. ``kwargs`` override the
    card's; ``reset(seed=s)`` seeds game ``g`` with ``s + g``.
    """
    card = get_card(
        env_id, suggest=lambda c: c.batched_entry_point is not None, kind="batched environment"
    )
    if card.batched_entry_point is None:
        offered = [c.id for c in cards().values() if c.batched_entry_point]
        raise ValueError(f"{card.id} has no batched backend; ids with one: {describe_ids(offered)}")
    creator = load_entry_point(card.batched_entry_point)
    return creator(num_games=num_games, **(dict(card.kwargs) | kwargs))


def make_agent_view(
    env_id: str,
    agent: str | None = None,
    opponents: Any = None,
    on_illegal: Literal["env", "raise"] = "env",
    **kwargs: Any,
) -> gym.Env:
    """The Gymnasium entry point of a multi-agent id: ``agent`` (default: the card's) against
    ``opponents`` (see :class:`~rlbench_suite.wrappers.MultiAgentToSingleAgent`); other
    keyword arguments go to the game.

    ``opponents`` may also be a ``--policy`` string (or a dict of them by agent), built for
    each other agent with :func:`~rlbench_suite.policies.make_policy`; the card's
    ``opponents`` is the default.
    """
    from rlbench_suite.wrappers.multiagent import MultiAgentToSingleAgent

    card = get_card(env_id)
    game = make_multiagent(card.id, "aec", **kwargs)
    agent = agent or card.agent
    if isinstance(opponents, str) or (
        isinstance(opponents, dict) and all(isinstance(v, str) for v in opponents.values())
    ):
        opponents = _opponents_from_specs(game, agent, opponents)
    return MultiAgentToSingleAgent(game, agent=agent, opponents=opponents, on_illegal=on_illegal)


def _opponents_from_specs(game: Any, agent: str, specs: str | dict[str, str]) -> dict[str, Any]:
    """Policies for every agent but ``agent`` from ``--policy`` strings."""
    from rlbench_suite.policies import make_policy

    others = [a for a in game.possible_agents if a != agent]
    by_agent = {a: specs for a in others} if isinstance(specs, str) else dict(specs)
    return {a: make_policy(spec, game, agent=a) for a, spec in by_agent.items()}
