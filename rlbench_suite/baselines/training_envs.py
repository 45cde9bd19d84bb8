"""What a training run trains on: the card, its vector env (SB3's adapter, VecNormalize,
parameter sharing or a league where the algorithm asks), and the checked training seeds."""

from __future__ import annotations

import functools
from typing import Any, Protocol

import gymnasium as gym

from rlbench_suite import EnvCard, UnknownEnvError
from rlbench_suite.baselines.algorithms import ALGORITHMS, Algorithm
from rlbench_suite.baselines.hyperparams import (
    Hyperparams,
    HyperparamsError,
    hyperparams_file,
    read_file,
)
from rlbench_suite.core.dataset_cards import dataset_cards
from rlbench_suite.core.offline_cards import dataset_of, refuse_joint_data, resolve_card
from rlbench_suite.core.seeds import TRAINING_SEEDS
from rlbench_suite.core.wording import counted
from rlbench_suite.wrappers import apply_wrappers


class TrainError(ValueError):
    """A run that cannot start or resume (the message says why and what to do)."""


class SeedOverlapError(TrainError):
    """A run whose seeds overlap the card's evaluation seeds."""


DEVICES = "cpu, cuda, cuda:N or auto"


def train_device(asked: str, algo: Algorithm) -> str:
    """The torch device a run of ``algo`` trains on for ``--device asked`` (what ``run.json``
    records): ``auto`` is CUDA where torch has it, else the CPU (SB3's rule); an algorithm that
    trains on the CPU only (:attr:`Algorithm.cpu_only`) takes ``cpu`` or ``auto``. A TrainError
    names what is accepted for anything else: another kind of device, CUDA where this torch
    has none (SB3 would fall back to the CPU without a word) or a CUDA index it does not have."""
    import torch

    if asked == "auto":
        return "cuda" if not algo.cpu_only and torch.cuda.is_available() else "cpu"
    try:
        device = torch.device(asked)
    except (RuntimeError, ValueError):
        raise TrainError(f"--device {asked!r} is not a torch device: {DEVICES}") from None
    if device.type not in ("cpu", "cuda"):
        raise TrainError(f"--device {asked!r}: runs train on the CPU or CUDA: {DEVICES}")
    if algo.cpu_only and device.type != "cpu":
        raise TrainError(f"--algo {algo.name} trains on the CPU only (its networks are small): "
                         f"--device cpu or auto, not {asked!r}")  # fmt: skip
    if device.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise TrainError(f"--device {asked!r}: this torch has no CUDA device "
                             "(torch.cuda.is_available() is false); use cpu or auto")  # fmt: skip
        if device.index is not None and device.index >= count:
            raise TrainError(f"--device {asked!r}: this machine has {count} CUDA device"
                             f"{'s' if count > 1 else ''}, cuda:0 to cuda:{count - 1}")  # fmt: skip
    return str(device)


def card_for(env_id: str, algo: Algorithm) -> EnvCard:
    """The card of ``env_id`` (an offline id's for an offline algorithm); an unknown id's
    error lists the ids ``algo`` has entries for, and an id of the wrong kind (an offline id
    for an online algorithm, or the reverse) names what is accepted."""
    try:
        card = resolve_card(env_id)
    except UnknownEnvError as exc:
        try:
            known = ", ".join(read_file(hyperparams_file(algo))) or "none"
        except HyperparamsError:
            known = "none"
        if algo.offline:  # its entries are envs, for their datasets: no env id trains it
            raise UnknownEnvError(f"{exc} {algo.name} has hyperparameters for the datasets of "
                                  f"{known} (`rlbench datasets list` names them)") from None
        raise UnknownEnvError(f"{exc} Ids with {algo.name} hyperparameters: {known}") from None
    online = [a.name for a in ALGORITHMS.values() if not a.offline]
    dataset = dataset_of(card)
    if dataset is not None:
        try:
            refuse_joint_data(card, f"--algo {algo.name}")
        except ValueError as exc:
            raise TrainError(str(exc)) from None
    if dataset is not None and not algo.offline:
        probe = gym.make(card.id)
        space = probe.action_space
        probe.close()
        fitting = [a.name for a in ALGORITHMS.values() if a.offline and a.supports(space)]
        raise TrainError(
            f"{card.id} is an offline id (a dataset): train on it with --algo "
            f"{' | '.join(fitting)}; --algo {algo.name} trains online, on {dataset.env_id}"
        )
    if dataset is None and algo.offline:
        ids = [d for d in dataset_cards() if dataset_cards()[d].env_id == card.id]
        hint = f" ({', '.join(ids)})" if ids else " (rlbench datasets list)"
        raise TrainError(
            f"--algo {algo.name} is an offline algorithm: it trains on an offline (dataset) id "
            f"such as rlbench/<Env>-<kind>-vN{hint}, not on the env {card.id}; online "
            f"algorithms: {', '.join(online)}"
        )
    return card


def training_seeds(card: EnvCard, seed: int, n_envs: int) -> list[int]:
    """The reset seeds a run uses (``seed .. seed + n_envs - 1``, SB3's convention), checked.

    Refused: any of them among the card's evaluation seeds (the error names them), and a
    ``seed`` outside :data:`~rlbench_suite.core.seeds.TRAINING_SEEDS`.
    """
    used = list(range(seed, seed + n_envs))
    overlap = sorted(set(used) & set(card.evaluation.seeds))
    if overlap:
        shown = ", ".join(map(str, overlap[:10])) + (" ..." if len(overlap) > 10 else "")
        raise SeedOverlapError(
            f"training seeds {used[0]}..{used[-1]} (--seed {seed}, {counted(n_envs, 'env')}) "
            "overlap "
            f"{card.id}'s evaluation seeds {card.evaluation.first_seed}.."
            f"{card.evaluation.seeds[-1]} in {len(overlap)} seed(s): {shown}; "
            f"pick --seed in {TRAINING_SEEDS.start}..{TRAINING_SEEDS.stop - n_envs}"
        )
    if used[0] not in TRAINING_SEEDS or used[-1] not in TRAINING_SEEDS:
        raise TrainError(
            f"--seed {seed} with {n_envs} env{'s' * (n_envs != 1)} uses seeds "
            f"{used[0]}..{used[-1]}, outside the "
            f"training seeds {TRAINING_SEEDS.start}..{TRAINING_SEEDS.stop - 1} "
            "(rlbench_suite.core.seeds)"
        )
    return used


class Recorder(Protocol):
    """Something that watches a run's envs as they emit (``datasets.replay``): each copy of a
    synchronous vector env passes through :meth:`env` (under the training wrappers), a native
    vector backend through :meth:`vector`, parameter sharing's batched multi-agent backend
    (one slot per agent of each game) through :meth:`games`."""

    def env(self, env: gym.Env) -> gym.Env: ...

    def vector(self, envs: gym.vector.VectorEnv) -> gym.vector.VectorEnv: ...

    def games(self, envs: gym.vector.VectorEnv) -> gym.vector.VectorEnv: ...


def batched_agent_view(card: EnvCard, n: int, **kwargs: Any) -> gym.vector.VectorEnv | None:
    """``n`` games of a multi-agent ``card``'s Gymnasium view (its ``agent`` beside its
    ``opponents``) on its batched backend, the opponents acting in batches
    (:class:`~rlbench_suite.wrappers.agent_view_vector.AgentViewVectorEnv`); None where the
    card has no batched backend, adds wrappers to the view, or its opponents act one by one.
    ``kwargs`` (e.g. ``autoreset_mode``) go to the backend."""
    if not (card.is_multiagent and card.batched_entry_point and card.opponents and card.agent):
        return None
    if card.wrappers:
        return None
    from rlbench_suite import make_batched, make_multiagent
    from rlbench_suite.policies import make_policy
    from rlbench_suite.wrappers.agent_view_vector import AgentViewVectorEnv, batched_partner

    game = make_multiagent(card.id, "parallel")
    agents = list(game.possible_agents)
    other = next(a for a in agents if a != card.agent)
    partner = batched_partner(make_policy(card.opponents, game, agent=other))
    game.close()
    if partner is None:
        return None
    return AgentViewVectorEnv(make_batched(card.id, n, **kwargs), len(agents),
                              agents.index(card.agent), partner)  # fmt: skip


def make_vector_env(
    card: EnvCard, n: int, stack: Any = (), recorder: Recorder | None = None
) -> gym.vector.VectorEnv:
    """``n`` envs of ``card`` in SAME_STEP autoreset: its native vector backend where it has
    one, or its agent's view of its batched multi-agent backend where its opponents act in
    batches (:func:`batched_agent_view`), else ``n`` copies with the standard wrappers in one
    process (``SyncVectorEnv``);
    ``stack``: the suite's wrappers to train through, on each copy (never the native backend);
    ``recorder``: sees each copy under ``stack``, or the native backend (:class:`Recorder`)."""
    from gymnasium.vector import AutoresetMode

    same_step = {"autoreset_mode": AutoresetMode.SAME_STEP}
    if card.vector_entry_point and not stack:  # the native backend takes its options as kwargs
        envs = gym.make_vec(card.id, n, vectorization_mode="vector_entry_point", **same_step)
        return envs if recorder is None else recorder.vector(envs)
    view = None if stack or recorder is not None else batched_agent_view(card, n, **same_step)
    if view is not None:
        return view
    layers = ([recorder.env] if recorder is not None else []) + (
        [functools.partial(apply_wrappers, stack=list(stack))] if stack else []
    )  # fmt: skip
    wrappers = [lambda env: functools.reduce(lambda e, f: f(e), layers, env)] if layers else None
    return gym.make_vec(card.id, n, vectorization_mode="sync", vector_kwargs=same_step,
                        wrappers=wrappers)  # fmt: skip


def make_training_env(
    card: EnvCard,
    params: Hyperparams,
    algo: Algorithm | None = None,
    seed: int = 0,
    recorder: Recorder | None = None,
) -> Any:
    """The SB3 VecEnv to train on: :func:`make_vector_env` behind SB3's adapter; VecNormalize
    if asked. Parameter sharing (``algo.shared``): one slot per agent of ``n_envs`` games
    (shared_ppo.py); a league (``algo.league``): ``n_envs`` views whose opponents are drawn
    from the league, which the VecEnv carries as ``.league`` (league.py). ``recorder``: see
    :func:`make_vector_env`; with parameter sharing, the batched backend's games
    (:meth:`Recorder.games`: every agent is the shared policy, so a game is joint data; refused
    where partners or game wrappers take the Parallel game instead); refused with leagues."""
    from gymnasium.vector import AutoresetMode

    from rlbench_suite.wrappers.sb3 import VectorEnvToSB3

    n, same_step = params.entry.n_envs, {"autoreset_mode": AutoresetMode.SAME_STEP}
    league = None
    if recorder is not None and algo is not None and algo.league:
        raise TrainError(f"--algo {algo.name}'s envs cannot be recorded (one agent's view)")
    if algo is not None and algo.shared:
        from rlbench_suite.baselines.shared_ppo import plays_batched, shared_vector_env

        entry = params.entry
        if recorder is not None and not plays_batched(card, entry.partners, entry.game_wrappers):
            raise TrainError(
                f"--algo {algo.name} on {card.id} is recorded on the card's batched backend only, "
                "every agent the shared policy (no partners or game_wrappers in its entry): "
                "joint data needs every agent of a game"
            )
        venv = shared_vector_env(card, n, entry.partners, entry.game_wrappers, **same_step)
        venv = venv if recorder is None else recorder.games(venv)
    elif algo is not None and algo.league:
        from rlbench_suite.baselines.league import league_vector_env, make_league

        if params.entry.league is None:
            raise TrainError(f"--algo league needs a 'league:' entry for {card.id}")
        league = make_league(card, params.entry.league, seed)
        venv = league_vector_env(card, n, league, **same_step)
    else:
        venv = make_vector_env(card, n, params.entry.env_wrappers, recorder)
    env: Any = VectorEnvToSB3(venv)
    if league is not None:
        env.league = league
    normalize = params.entry.normalize
    if normalize:
        from stable_baselines3.common.vec_env import VecNormalize

        options = {} if normalize is True else dict(normalize)
        if "gamma" in params.algo_kwargs:
            options.setdefault("gamma", params.algo_kwargs["gamma"])
        env = VecNormalize(env, **options)
    return env
