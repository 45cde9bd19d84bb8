"""A training run of one of the suite's own single-file algorithms (``fast_ppo``): the same
run folder, curve, checkpoints and result as an SB3 run (:class:`~.sb3_run.Run`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym

from rlbench_suite.baselines import checkpoints
from rlbench_suite.baselines.algorithms import check_action_space
from rlbench_suite.baselines.budget import Granularity, rollouts
from rlbench_suite.baselines.hyperparams import native_config
from rlbench_suite.baselines.sb3_run import Run
from rlbench_suite.baselines.training_envs import TrainError, make_vector_env

AGENT_FILE = "agent.pt"


class NativeModel:
    """A native algorithm's run as the trainer and the curve see an SB3 model: the step
    count, deterministic ``predict``, the training env."""

    def __init__(self, envs: gym.vector.VectorEnv, cfg: Any, state: Any) -> None:
        self.envs, self.cfg, self.state = envs, cfg, state

    @property
    def num_timesteps(self) -> int:
        return int(self.state.global_step)

    def predict(self, obs: Any, deterministic: bool = True, **_: Any) -> tuple[Any, None]:
        import numpy as np

        return self.state.agent.predict(np.asarray(obs)[None])[0], None

    def get_vec_normalize_env(self) -> None:
        return None  # the agent normalizes its observations itself

    def get_env(self) -> gym.vector.VectorEnv:
        return self.envs


class NativeRun(Run):
    """A run of one of the suite's own algorithms (``fast_ppo``): the same run folder,
    curve, checkpoints and result; the model is ``agent.pt`` (:func:`fast_ppo.save_state`).

    Checkpoints hold ``agent.pt`` (agent with its observation statistics, optimizer,
    counters, the rollout's starting observations, torch's RNG) and ``env.pkl`` (the vector
    env with its state and RNGs, where it pickles), so a resumed run ends bit-identical to an
    uninterrupted one where the env pickles (else it resets the envs with the run's seeds).
    """

    def ppo_config(self) -> Any:
        from rlbench_suite.baselines import fast_ppo

        settings = {**self.params.algo_kwargs, "total_timesteps": self.budget}
        return native_config(fast_ppo.PPOConfig, self.params, settings, TrainError)

    def granularity(self, model: Any) -> Granularity:
        return rollouts(model.envs.num_envs, model.cfg.num_steps, "num_steps")

    def new_model(self) -> Any:
        from rlbench_suite.baselines import fast_ppo

        cfg = self.ppo_config()
        envs = make_vector_env(self.card, self.params.entry.n_envs)
        try:
            check_action_space(self.algo, self.card.id, envs.single_action_space)
            state = fast_ppo.new_state(envs, cfg, self.config.seed)
        except ValueError as exc:
            envs.close()
            raise TrainError(str(exc)) from None
        return NativeModel(envs, cfg, state)

    def restore(self, checkpoint: Path) -> tuple[Any, dict[str, Any]]:
        import pickle

        from rlbench_suite.baselines import fast_ppo

        cfg, env_file = self.ppo_config(), checkpoint / "env.pkl"
        if env_file.is_file():
            with open(env_file, "rb") as f:
                envs = checkpoints.env_from_state(pickle.load(f))  # written by this run
        else:
            envs = make_vector_env(self.card, self.params.entry.n_envs)
        state, _ = fast_ppo.load_state(checkpoint / AGENT_FILE, envs, cfg)
        if not env_file.is_file():
            state.next_x = None  # new episodes, reset with the run's training seeds
        return NativeModel(envs, cfg, state), checkpoints.read_state(checkpoint)

    def save_checkpoint(self, model: Any, state: dict[str, Any]) -> None:
        from rlbench_suite.baselines import fast_ppo

        def write(folder: Path) -> bool:
            fast_ppo.save_state(model.state, model.cfg, folder / AGENT_FILE)
            return checkpoints.pickle_env(model.envs, folder / "env.pkl")

        checkpoints.write_checkpoint(self.dir, model.num_timesteps, write, state)

    def learn(self, model: Any, callbacks: Sequence[Any]) -> None:
        from rlbench_suite.baselines import fast_ppo

        if callbacks:
            raise TrainError(f"--algo {self.algo.name} takes no SB3 callbacks")
        assert self.plan is not None
        model.cfg.total_timesteps = self.plan.steps  # whole rollouts (budget.py)
        self.at_boundary(model)
        fast_ppo.train(
            model.envs,
            model.cfg,
            self.config.seed,
            state=model.state,
            threads=None,  # the trainer set them
            on_update=lambda _: self.at_boundary(model),
        )

    def save_model(self, model: Any, onnx_path: Path) -> list[str]:
        from rlbench_suite.baselines import fast_ppo

        fast_ppo.save_state(model.state, model.cfg, self.dir / AGENT_FILE)
        fast_ppo.export_onnx(model.state.agent, onnx_path)
        return [AGENT_FILE]
