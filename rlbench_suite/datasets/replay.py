"""Medium-replay data: every episode a training run collected, from scratch to its budget.

D4RL's medium-replay is the replay buffer of an agent trained until its policy reaches the
medium level. Here a card's ``[source.training]`` names the run (:class:`TrainingRun`): the
algorithm, its ``baselines/hyperparams/<algo>.yaml`` entry, the seed and the budget. The run
is ``rlbench train``'s (the same envs, :func:`~rlbench_suite.baselines.training_envs.
make_training_env`, and the same model, seeded alike, on one torch thread) without its curve,
checkpoints and final evaluation, which draw nothing from the run's random streams. It is
planned for the card's ``budget`` (the zoo run's: schedules such as a linearly decaying
learning rate depend on it) and stopped at ``stop``: SB3 after the env step that reaches it,
``fast_ppo`` after the update that reaches it (its steps come in whole rollouts).
A recorder (:mod:`~rlbench_suite.datasets.recorder`) sits at the env level, under the
training wrappers and any normalization, on the first ``recorded_envs`` sub-envs: the data is
what the env emitted. Every completed episode of those sub-envs is kept in the order it
ended; the episodes still running at the stop are left out (:class:`ReplayStats` counts them).

Joint data (a PettingZoo Parallel card such as CoopNav, :mod:`~rlbench_suite.datasets.joint`)
comes from parameter sharing (``shared_ppo``) on the card's batched backend, where every agent
of every game is the shared policy: the team learning together. ``recorded_envs`` then counts
games (as ``n_envs`` does in ``shared_ppo.yaml``), each game's agent slots make one joint
episode, and ``stop`` and the training steps count agent steps (slots), as the run does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from rlbench_suite.core.catalog import get_card
from rlbench_suite.core.dataset_cards import DatasetCard, TrainingRun
from rlbench_suite.datasets.joint import is_joint, joint_spaces, make_joint_env
from rlbench_suite.datasets.recorder import (
    EpisodeSink,
    RecordEpisodes,
    RecordJointEpisodes,
    RecordVectorEpisodes,
)
from rlbench_suite.datasets.storage import Episode

Progress = Callable[[int, int], None]
"""Called as training goes with ``(episodes recorded, training steps)``."""
OnRollout = Callable[[int, list[Episode]], None]
"""Called at each rollout's end (and at the stop) with ``(training steps, the episodes that
ended since the previous call)``."""
OnStop = Callable[[Any], None]
"""Called once at the stop with the trained model (fast_ppo's ``Agent``, an SB3 model)."""
OnModel = Callable[[int, Any], None]
"""Called after each update (fast_ppo) or rollout (SB3) with ``(training steps, the model)``:
the model as it is there (copy it to keep it)."""


@dataclass(frozen=True)
class ReplayStats:
    """What the run did: its env steps (all sub-envs), the recorded sub-envs' steps, the
    steps of their episodes still running at the stop (not in the data), and which recorded
    sub-env played each episode of the data. Of joint data: ``agents`` slots a game, the
    training steps count agent steps and the recorded ones joint steps of recorded games."""

    training_steps: int
    recorded_steps: int
    open_steps: int
    origins: tuple[int, ...] = ()
    agents: int = 1


class _Recorder:
    """Records the first ``count`` envs (or games) a trainer makes (training_envs.Recorder)."""

    def __init__(self, count: int, sink: EpisodeSink) -> None:
        self.count, self.sink = count, sink

    def env(self, env: gym.Env) -> gym.Env:
        return RecordEpisodes(env, self.sink) if len(self.sink.tracks) < self.count else env

    def vector(self, envs: gym.vector.VectorEnv) -> gym.vector.VectorEnv:
        return RecordVectorEpisodes(envs, self.count, self.sink)

    def games(self, envs: gym.vector.VectorEnv) -> gym.vector.VectorEnv:
        agents = list(self.sink.observation_space.spaces)  # joint: a Dict over the agents
        return RecordJointEpisodes(envs, agents, self.count, self.sink)


def record_training(
    card: DatasetCard, progress: Progress | None = None, on_rollout: OnRollout | None = None,
    on_stop: OnStop | None = None, on_model: OnModel | None = None,
) -> tuple[list[Episode], ReplayStats]:
    """Run ``card``'s training run and return the recorded episodes (module doc).

    ``on_rollout`` (:data:`OnRollout`) takes the episodes as they come, which are then not
    kept (the list returned is empty; the stats still count them): a pilot that measures a
    long run's data without holding it (``scripts/dataset_cards.py``). ``on_stop``
    (:data:`OnStop`) gets the model as it is at the stop, ``on_model`` (:data:`OnModel`) as it
    is along the way: the policies a "medium" dataset may play (``scripts/dataset_cards.py``)."""
    import torch

    from rlbench_suite.baselines.algorithms import get_algorithm
    from rlbench_suite.baselines.hyperparams import load_hyperparams
    from rlbench_suite.baselines.training_envs import TrainError, training_seeds

    run = card.source.training
    if run is None:
        raise ValueError(f"{card.id} names no training run ([source.training])")
    env_card = get_card(card.env_id)
    algo = get_algorithm(run.algo)
    joint = is_joint(card.env_id)
    if algo.offline or algo.league or algo.shared != joint:
        wanted = ("parameter sharing (shared_ppo): every agent the learner" if joint
                  else "online single-agent algorithms only")  # fmt: skip
        raise TrainError(f"{card.id}: --algo {algo.name} cannot make replay data of "
                         f"{card.env_id} ({wanted})")  # fmt: skip
    params = load_hyperparams(algo, run.hyperparams)
    n_envs = params.entry.n_envs
    if run.recorded_envs > n_envs:
        raise TrainError(
            f"{card.id}: source.training.recorded_envs = {run.recorded_envs}, but the "
            f"{run.algo} entry for {run.hyperparams} trains {n_envs} "
            + ("games" if joint else "envs")
        )
    training_seeds(env_card, run.seed, n_envs)  # the trainer's seed checks
    probe = make_joint_env(card.env_id) if joint else gym.make(card.env_id)
    spaces = joint_spaces(probe) if joint else (probe.observation_space, probe.action_space)
    agents = len(probe.possible_agents) if joint else 1
    sink = EpisodeSink(*spaces)
    probe.close()
    recorder = _Recorder(run.recorded_envs, sink)
    torch.set_num_threads(1)

    def report(steps: int) -> None:
        if on_rollout is not None:
            on_rollout(steps, sink.drain())
        if progress is not None:
            progress(len(sink.episodes), steps)

    train = _native if algo.native else _sb3
    steps = train(env_card, algo, params, run, recorder, report, on_stop, on_model)
    if on_rollout is not None:
        on_rollout(steps, sink.drain())
    if len(sink.tracks) != run.recorded_envs:
        raise RuntimeError(f"{card.id}: {len(sink.tracks)} envs recorded, "
                           f"{run.recorded_envs} asked")  # fmt: skip
    stats = ReplayStats(steps, sink.steps + sink.open_steps, sink.open_steps,
                        tuple(sink.origins), agents)  # fmt: skip
    return sink.episodes, stats


def _sb3(
    card: Any, algo: Any, params: Any, run: TrainingRun, recorder: _Recorder,
    report: Callable[[int], None] | None, on_stop: OnStop | None = None,
    on_model: OnModel | None = None,
) -> int:  # fmt: skip
    from stable_baselines3.common.callbacks import BaseCallback

    from rlbench_suite.baselines.sb3_run import new_sb3_model

    class StopAt(BaseCallback):
        def _on_rollout_end(self) -> None:
            if report is not None:
                report(int(self.num_timesteps))
            if on_model is not None:
                on_model(int(self.num_timesteps), self.model)

        def _on_step(self) -> bool:
            return self.num_timesteps < run.stop

    model = new_sb3_model(card, algo, params, run.seed, "cpu", recorder)
    try:
        model.learn(total_timesteps=run.budget, callback=StopAt())
        if on_stop is not None:
            on_stop(model)
        return int(model.num_timesteps)
    finally:
        model.get_env().close()


def _native(
    card: Any, algo: Any, params: Any, run: TrainingRun, recorder: _Recorder,
    report: Callable[[int], None] | None, on_stop: OnStop | None = None,
    on_model: OnModel | None = None,
) -> int:  # fmt: skip
    from rlbench_suite.baselines import fast_ppo
    from rlbench_suite.baselines.hyperparams import native_config
    from rlbench_suite.baselines.training_envs import TrainError, make_vector_env

    settings = {**params.algo_kwargs, "total_timesteps": run.budget}
    cfg = native_config(fast_ppo.PPOConfig, params, settings, TrainError)
    envs = make_vector_env(card, params.entry.n_envs, recorder=recorder)
    state = fast_ppo.new_state(envs, cfg, run.seed)

    def on_update(state: Any) -> bool:
        if report is not None:
            report(int(state.global_step))
        if on_model is not None:
            on_model(int(state.global_step), state.agent)
        return state.global_step >= run.stop

    try:
        fast_ppo.train(envs, cfg, run.seed, state=state, threads=1, on_update=on_update)
        if on_stop is not None:
            on_stop(state.agent)
        return int(state.global_step)
    finally:
        envs.close()
