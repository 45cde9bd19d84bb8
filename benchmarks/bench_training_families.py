"""Training throughput of each algorithm on each family (issue 13): ``rlbench train``'s own
vector env beside the same SB3 algorithm on Gymnasium's ``SyncVectorEnv``.

``training_throughput_families``: env-steps per second *including the updates*, each side
training with the entry's hyperparameters (``baselines/hyperparams/<algo>.yaml``), one chunk
of steps per round, interleaved, on wall-clock time.

- The subject is exactly what ``rlbench train ID --algo ALGO`` trains on
  (``training_envs.make_training_env``): the card's wrapper stack, its native or batched
  backend where it has one, parameter sharing for ``shared_ppo``, VecNormalize where the
  entry asks.
- The peer is what a user would build without the suite: the same SB3 class and
  hyperparameters on ``gym.make_vec(..., vectorization_mode="sync")`` of the upstream
  Gymnasium id where the suite wraps one with the same spaces (CartPole-v1, Pendulum-v1,
  LunarLander-v3, HalfCheetah-v5), else of the card's id (the suite's own envs, whose only
  implementation is the suite's); VecNormalize where the entry asks. For ``shared_ppo`` the
  peer is SB3 PPO on SuperSuit's ``pettingzoo_env_to_vec_env_v1`` + ``concat_vec_envs_v1``
  over the same Parallel game, the way PettingZoo's SB3 tutorial does parameter sharing.
- Off-policy entries start learning after ``learning_starts`` random steps (10,000 on
  MuJoCo); both sides use ``learning_starts=256`` here so every timed round includes
  updates. Rounds are whole rollouts for on-policy algorithms (the time is divided by the
  steps actually done).

fast_ppo's rows (CartPole, QuadHover) are in ``training_throughput`` (bench_training.py).
A ratio above 1 means the suite's path is slower than the peer.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import gymnasium as gym

import rlbench_suite  # noqa: F401  (registers the rlbench/ ids)
from benchmarks.bench_training import SAME_STEP, SB3Trainer, _params
from benchmarks.harness import Case, Comparison, Settings, Variant, benchmark

# (family, algo, card id, upstream Gymnasium id for the peer or None: the card's own id,
#  steps per round)
ROWS: list[tuple[str, str, str, str | None, int]] = [
    ("classic", "ppo", "rlbench/CartPole-v1", "CartPole-v1", 2048),
    ("classic", "a2c", "rlbench/CartPole-v1", "CartPole-v1", 2048),
    ("classic", "dqn", "rlbench/CartPole-v1", "CartPole-v1", 1024),
    ("classic", "recurrent_ppo", "rlbench/CartPole-v1", "CartPole-v1", 1024),
    ("classic", "sac", "rlbench/Pendulum-v1", "Pendulum-v1", 400),
    ("classic", "td3", "rlbench/Pendulum-v1", "Pendulum-v1", 400),
    ("box2d", "ppo", "rlbench/LunarLander-v3", "LunarLander-v3", 2048),
    ("minigrid", "ppo", "rlbench/MiniGrid-Empty-5x5-v0", None, 1024),
    ("mujoco", "ppo", "rlbench/HalfCheetah-v5", "HalfCheetah-v5", 1024),
    ("mujoco", "sac", "rlbench/HalfCheetah-v5", "HalfCheetah-v5", 200),
    ("robotics", "ppo", "rlbench/KukaReach-v0", None, 1024),
    ("multiagent", "ppo", "rlbench/DuelVsBot-v0", None, 1024),
    ("multiagent", "shared_ppo", "rlbench/CoopNav-v0", None, 6400),
    ("multiagent", "ppo", "rlbench/CoopNav-v0", None, 2048),
    ("matrix", "ppo", "rlbench/PrisonersDilemma-v0", None, 1024),
    ("text", "maskable_ppo", "rlbench/TextMaze-v0", None, 1024),
]
OFF_POLICY = {"dqn", "sac", "td3"}
SUBJECT, PEER = "rlbench train", "sb3 SyncVectorEnv"


def _normalized(env: Any, params: Any) -> Any:
    """VecNormalize as the entry asks (the same rule as ``make_training_env``)."""
    normalize = params.entry.normalize
    if not normalize:
        return env
    from stable_baselines3.common.vec_env import VecNormalize

    options = {} if normalize is True else dict(normalize)
    if "gamma" in params.algo_kwargs:
        options.setdefault("gamma", params.algo_kwargs["gamma"])
    return VecNormalize(env, **options)


def suite_env(algo: str, env_id: str, **override: Any) -> Callable[[int], Any]:
    """``rlbench train``'s SB3 VecEnv (the ``n`` given is the entry's ``n_envs``)."""
    from rlbench_suite import get_card
    from rlbench_suite.baselines.algorithms import get_algorithm
    from rlbench_suite.baselines.training_envs import make_training_env

    def make(n: int) -> Any:
        return make_training_env(get_card(env_id), _params(algo, env_id, **override),
                                 get_algorithm(algo))  # fmt: skip

    return make


def peer_env(algo: str, env_id: str, upstream: str | None, **override: Any) -> Callable:
    """The same algorithm's env without the suite: SyncVectorEnv (or SuperSuit for sharing)."""
    from rlbench_suite.wrappers import apply_wrappers
    from rlbench_suite.wrappers.sb3 import VectorEnvToSB3

    params = _params(algo, env_id, **override)

    def make(n: int) -> Any:
        if algo == "shared_ppo":
            import supersuit as ss

            from rlbench_suite import make_multiagent

            game = ss.pettingzoo_env_to_vec_env_v1(make_multiagent(env_id, "parallel"))
            env: Any = ss.concat_vec_envs_v1(game, n, num_cpus=0,
                                             base_class="stable_baselines3")  # fmt: skip
        else:  # the entry's training wrappers (e.g. a text game's admissible commands) too
            stack = list(params.entry.env_wrappers)
            wrappers = [functools.partial(apply_wrappers, stack=stack)] if stack else None
            vector = gym.make_vec(upstream or env_id, n, vectorization_mode="sync",
                                  vector_kwargs=SAME_STEP, wrappers=wrappers)  # fmt: skip
            env = VectorEnvToSB3(vector)
        return _normalized(env, params)

    return make


class PeerTrainer(SB3Trainer):
    """The SB3 algorithm on the peer's env; ``shared_ppo`` is SB3's PPO class. SuperSuit's
    VecEnv has no ``seed``, so that peer runs unseeded, as in PettingZoo's SB3 tutorial."""

    def __init__(self, algo: str, env_id: str, upstream: str | None, **override: Any) -> None:
        seed = None if algo == "shared_ppo" else 0
        super().__init__(algo, peer_env(algo, env_id, upstream, **override), env_id, seed=seed,
                         sb3_env=True, **override)  # fmt: skip


@benchmark("training_throughput_families")
def training_throughput_families(settings: Settings) -> list[Case]:
    """Env-steps/s including updates: ``rlbench train``'s env vs SB3 on SyncVectorEnv."""
    cases = []
    for family, algo, env_id, upstream, work in ROWS:
        override: dict[str, Any] = {"learning_starts": 256} if algo in OFF_POLICY else {}
        if settings.quick:  # one short round: rough numbers, a smoke run of every row
            work = max(64, work // 8)
            if algo not in OFF_POLICY and algo != "shared_ppo":
                override["n_steps"] = 64

        def subject(a: str = algo, e: str = env_id, o: dict = override) -> SB3Trainer:
            return SB3Trainer(a, suite_env(a, e, **o), e, sb3_env=True, **o)

        def peer(a: str = algo, e: str = env_id, u: str | None = upstream,
                 o: dict = override) -> SB3Trainer:  # fmt: skip
            return PeerTrainer(a, e, u, **o)

        peer_name = "sb3 + SuperSuit" if algo == "shared_ppo" else PEER
        cases.append(
            Case(
                env=f"{family}: {algo} {env_id.removeprefix('rlbench/')}",
                variants=[Variant(SUBJECT, subject), Variant(peer_name, peer)],
                comparisons=[Comparison(SUBJECT, peer_name)],
                work_per_round=work,
                rounds=1 if settings.quick else 3,
                clock="wall",
            )
        )
    return cases
