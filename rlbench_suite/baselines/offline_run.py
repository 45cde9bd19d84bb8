"""A training run of an offline algorithm on an offline id (``rlbench train
rlbench/QuadHover-medium-v0 --algo iql``): the same run folder, curve, checkpoints, ONNX
policy and Result as an online run (:class:`~.sb3_run.Run`), with gradient steps as the
budget.

The data is the dataset of the id, loaded from the cache (``rlbench datasets download`` puts
it there; a missing dataset is an error saying so). The learning curve plays the policy on
the online env at fixed intervals of gradient steps, scored on the dataset's references (the
offline id's env); the final Result is the harness's, on the offline id.

Seeds: ``--seed`` seeds torch and the minibatch sampler and must be a training seed, as for
online runs. The policy records as its training seeds ``--seed`` and every episode seed of
the dataset, so the harness refuses an evaluation that replays an episode of the data.

Checkpoints hold ``agent.pt``: the networks, optimizers and schedules, the step, the
sampler's and torch's generator states; a resumed run goes on exactly as an uninterrupted
one (``resume_exact`` stays true). They fall every ``--checkpoint-every`` steps (default: the
curve's spacing, a twentieth of the budget) and, besides, at the first progress report
:data:`CHECKPOINT_SECONDS` of wall time after the last one: a huge budget's twentieth may be a
day of training, and Ctrl-C before it would lose all of it. The extra ones change neither the
curve's schedule nor ``run.json``'s ``checkpoint_every``, nor a bit of training (saving draws
no random number).

Data the offline algorithms cannot train on is refused with what one can do instead: joint
multi-agent data (CoopNav's) and text data (the text games') have no offline algorithm in
the suite yet.
"""

from __future__ import annotations

import dataclasses
import importlib
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rlbench_suite.baselines import checkpoints
from rlbench_suite.baselines.algorithms import (
    ALGORITHMS,
    Algorithm,
    UnknownAlgorithmError,
    check_action_space,
    get_algorithm,
)
from rlbench_suite.baselines.budget import Granularity
from rlbench_suite.baselines.hyperparams import (
    Hyperparams,
    HyperparamsError,
    hyperparams_file,
    native_config,
    read_file,
)
from rlbench_suite.baselines.sb3_run import Run, TrainConfig, TrainProgress
from rlbench_suite.baselines.training_envs import TrainError
from rlbench_suite.core.catalog import UnknownEnvError
from rlbench_suite.core.offline_cards import (
    dataset_of,
    is_joint_card,
    refuse_joint_data,
    resolve_card,
)

AGENT_FILE = "agent.pt"
BOUNDARY_EVERY = 250
"""Gradient steps between progress reports (curve points and checkpoints fall on their own
steps exactly)."""
CHECKPOINT_SECONDS = 300.0
"""Wall time after which a run checkpoints at its next progress report, whatever
``--checkpoint-every`` says (module docstring)."""


class _NoEnv:
    """An offline run trains on no env; :meth:`Run.run` closes the model's."""

    def close(self) -> None:
        pass


@dataclasses.dataclass
class OfflineModel:
    """An offline agent as the trainer and the curve see a model: the step count,
    deterministic ``predict`` on raw observations, no env."""

    agent: Any
    data: Any
    spec: Any
    cfg: Any
    module: Any

    _actor: Any = dataclasses.field(default=None, init=False, repr=False)

    @property
    def num_timesteps(self) -> int:
        return int(self.agent.step)

    def actor(self) -> Any:
        """The deterministic policy on raw observations (sharing the agent's weights)."""
        from rlbench_suite.baselines.offline.common import ExportedActor

        if self._actor is None:
            self._actor = ExportedActor(self.agent.policy(), self.spec)
        return self._actor

    def predict(self, obs: Any, deterministic: bool = True, **_: Any) -> tuple[Any, None]:
        actor = self.actor().eval()  # no dropout while acting
        try:
            return actor.predict(obs), None
        finally:
            actor.train()

    def get_vec_normalize_env(self) -> None:
        return None

    def get_env(self) -> _NoEnv:
        return _NoEnv()


def _offline_names() -> str:
    """``bc, td3bc, iql and cql``."""
    names = [name for name, a in ALGORITHMS.items() if a.offline]
    return f"{', '.join(names[:-1])} and {names[-1]}"


def online_algorithms_for(env_id: str) -> list[str]:
    """The online algorithms with an entry for ``env_id`` in their committed hyperparameters."""
    found = []
    for name, algo in ALGORITHMS.items():
        try:
            if not algo.offline and env_id in read_file(hyperparams_file(algo)):
                found.append(name)
        except HyperparamsError:
            continue
    return found


def _train_online(env_id: str) -> str:
    """``train online: rlbench train ENV --algo A (or B, C)``."""
    algos = online_algorithms_for(env_id)
    if not algos:
        return f"train a policy online on {env_id}"
    also = f" (or {', '.join(algos[1:])})" if algos[1:] else ""
    return f"train online: rlbench train {env_id} --algo {algos[0]}{also}"


def _is_text(space: Any) -> bool:
    """Whether ``space`` is or holds a Text space (a text game's observations or actions)."""
    import gymnasium as gym

    if isinstance(space, gym.spaces.Text):
        return True
    if isinstance(space, gym.spaces.Dict | gym.spaces.Tuple):
        inner = space.spaces.values() if isinstance(space, gym.spaces.Dict) else space.spaces
        return any(_is_text(s) for s in inner)
    return False


def refuse_text_data(offline_id: str, env_id: str) -> None:
    """A :class:`TrainError` saying that text data has no offline algorithm yet, and what
    one can do with it instead."""
    raise TrainError(
        f"{offline_id} holds text data, and no offline algorithm of the suite trains on text "
        f"yet (--algo {_offline_names()} take vectors: flat Box observations, Box or Discrete "
        f"actions). Instead: read it with rlbench_suite.datasets.load("
        f"{offline_id!r}) or get_dataset(); score a policy on it with rlbench eval {offline_id}"
        f" --policy ...; or {_train_online(env_id)}"
    )


def refuse_joint_training(env_id: str, algo_name: str) -> None:
    """For an offline id of joint multi-agent data (CoopNav's), the refusal of
    :func:`~rlbench_suite.core.offline_cards.refuse_joint_data` as a :class:`TrainError`, with
    what one can train instead; nothing for any other id (an unknown one is refused later,
    with suggestions)."""
    try:
        card = resolve_card(env_id)
        algo = get_algorithm(algo_name)
    except (UnknownEnvError, UnknownAlgorithmError):
        return
    dataset = dataset_of(card)
    if dataset is None or not is_joint_card(card):
        return
    try:
        refuse_joint_data(card, f"--algo {algo.name}")
    except ValueError as exc:
        raise TrainError(
            f"{exc}. No offline algorithm of the suite trains on joint data yet; "
            f"{_train_online(dataset.env_id)}"
        ) from None


def offline_algorithm(algo: Algorithm, offline_id: str) -> tuple[Algorithm, Any, Any]:
    """``algo`` as it trains on ``offline_id`` (``cql`` on Discrete actions: discrete CQL), with
    the id's observation and action spaces; a :class:`TrainError` for an algorithm that cannot
    act there, or for text data (:func:`refuse_text_data`)."""
    import gymnasium as gym

    from rlbench_suite.baselines.offline.common import shown_space

    if not algo.offline:
        offline = ", ".join(name for name, a in ALGORITHMS.items() if a.offline)
        raise TrainError(f"{algo.name} is an online algorithm; an offline id takes one of "
                         f"{offline}")  # fmt: skip
    env = gym.make(offline_id)
    observation_space, action_space = env.observation_space, env.action_space
    env.close()
    dataset = dataset_of(resolve_card(offline_id))
    if dataset is not None and (_is_text(observation_space) or _is_text(action_space)):
        refuse_text_data(dataset.id, dataset.env_id)
    try:
        check_action_space(algo, offline_id, action_space)
    except ValueError as exc:  # a space's repr may be huge (a charset): shown cut short
        raise TrainError(str(exc).replace(str(action_space), shown_space(action_space))) from None
    if algo.discrete_package and isinstance(action_space, gym.spaces.Discrete):
        algo = dataclasses.replace(algo, package=algo.discrete_package)
    return algo, observation_space, action_space


def offline_settings(params: Hyperparams) -> dict[str, Any]:
    """What an offline algorithm's ``Config`` takes from an entry: its own keys, and
    ``normalize`` (the data's observation standardization: true or false)."""
    normalize = params.entry.normalize
    if not isinstance(normalize, bool):
        raise TrainError(f"{params.path}: {params.env_id}: normalize is true or false for an "
                         f"offline algorithm (the data's observation standardization), not "
                         f"{normalize!r}")  # fmt: skip
    return {**params.algo_kwargs, "normalize": normalize}


def build_model(module: Any, cfg: Any, dataset_card: Any, observation_space: Any,
                action_space: Any, seed: int, budget: int) -> OfflineModel:  # fmt: skip
    """A fresh agent of ``module`` with ``cfg`` on ``dataset_card``'s data (from the cache),
    torch and the minibatch sampler seeded with ``seed``."""
    import torch

    from rlbench_suite.baselines.offline.common import OfflineDataError, Transitions, data_spec
    from rlbench_suite.datasets.offline import load

    try:
        dataset = load(dataset_card)
    except FileNotFoundError as exc:
        raise TrainError(str(exc)) from None
    try:
        spec = data_spec(dataset, observation_space, action_space, cfg.normalize)
    except OfflineDataError as exc:
        raise TrainError(f"{dataset_card.id}: {exc}") from None
    torch.manual_seed(seed)
    data = Transitions(dataset, spec, seed)
    if getattr(cfg, "frac", 1.0) < 1.0:
        data.keep_best_episodes(cfg.frac)
    agent = module.Agent(spec, cfg, budget)
    return OfflineModel(agent, data, spec, cfg, module)


class OfflineRun(Run):
    """A run of an offline algorithm (module docstring)."""

    def __init__(self, config: TrainConfig, on_progress: Callable[[TrainProgress], None] | None,
                 on_notice: Callable[[str], None] | None = None) -> None:  # fmt: skip
        refuse_joint_training(config.env_id, config.algo)
        super().__init__(config, on_progress, on_notice)
        self.checkpointed_at = time.monotonic()
        """When the last checkpoint was written (or this segment of the run started)."""
        self.checkpointed_step = -1

    def algorithm_for(self, algo: Algorithm) -> Algorithm:
        algo, self.observation_space, self.action_space = offline_algorithm(algo, self.card.id)
        return algo

    def hyperparams_ids(self) -> list[str]:
        dataset = dataset_of(self.card)
        assert dataset is not None  # card_for refused other cards
        return [self.card.id, dataset.env_id]

    def vector_backend(self) -> str:
        return "offline"

    def granularity(self, model: Any) -> Granularity:
        return Granularity(1, 1, "gradient steps", "one update")

    def new_record(self) -> dict[str, Any]:
        dataset = dataset_of(self.card)
        assert dataset is not None
        self.train_seeds = [self.config.seed, *dataset.reset_seeds]
        dataset_record = {"id": dataset.id, "content_sha256": dataset.content_sha256}
        return {
            **super().new_record(),
            "train_seeds": self.train_seeds,
            "budget_unit": "gradient steps",
            "dataset": dataset_record,
        }

    def new_model(self) -> OfflineModel:
        module = importlib.import_module(self.algo.package)
        cfg = native_config(module.Config, self.params, offline_settings(self.params), TrainError)
        dataset_card = dataset_of(self.card)
        assert dataset_card is not None  # card_for refused other cards
        return build_model(module, cfg, dataset_card, self.observation_space, self.action_space,
                           self.config.seed, self.budget)  # fmt: skip

    def restore(self, checkpoint: Path) -> tuple[OfflineModel, dict[str, Any]]:
        import torch

        model = self.new_model()
        saved = torch.load(checkpoint / AGENT_FILE, weights_only=False)
        model.agent.load_state_dict(saved["agent"])
        model.data.generator.set_state(saved["sampler_rng"])
        torch.set_rng_state(saved["torch_rng"])
        return model, checkpoints.read_state(checkpoint)

    def _save_agent(self, model: OfflineModel, path: Path) -> None:
        import torch

        state = {
            "agent": model.agent.state_dict(),
            "sampler_rng": model.data.generator.get_state(),
            "torch_rng": torch.get_rng_state(),
            "algo": self.algo.package,
            "config": dataclasses.asdict(model.cfg),
        }
        torch.save(state, path)

    def save_checkpoint(self, model: Any, state: dict[str, Any]) -> None:
        def write(folder: Path) -> bool:
            self._save_agent(model, folder / AGENT_FILE)
            return True  # no env to pickle: the whole state is in agent.pt

        checkpoints.write_checkpoint(self.dir, model.num_timesteps, write, state)

    def checkpoint(self, model: Any) -> None:
        super().checkpoint(model)
        self.checkpointed_at, self.checkpointed_step = time.monotonic(), model.num_timesteps

    def at_boundary(self, model: Any) -> None:
        """The curve point and checkpoint due at this step; and a checkpoint if the last was
        :data:`CHECKPOINT_SECONDS` ago, whatever ``--checkpoint-every`` says."""
        super().at_boundary(model)
        late = time.monotonic() - self.checkpointed_at >= CHECKPOINT_SECONDS
        if late and model.num_timesteps > max(self.checkpointed_step, self.start_step):
            self.checkpoint(model)

    def learn(self, model: Any, callbacks: Sequence[Any]) -> None:
        if callbacks:
            raise TrainError(f"--algo {self.algo.name} takes no SB3 callbacks")
        self.checkpointed_at = time.monotonic()
        self.at_boundary(model)
        batch_size = model.cfg.batch_size
        while model.agent.step < self.budget:
            model.agent.update(model.data.sample(batch_size))
            step = model.agent.step
            if step >= min(self.next_eval, self.next_checkpoint) or step % BOUNDARY_EVERY == 0:
                self.at_boundary(model)

    def save_model(self, model: Any, onnx_path: Path) -> list[str]:
        from rlbench_suite.baselines.offline.common import export_onnx

        self._save_agent(model, self.dir / AGENT_FILE)
        export_onnx(model.actor().eval(), onnx_path, self.algo.name)
        return [AGENT_FILE]
