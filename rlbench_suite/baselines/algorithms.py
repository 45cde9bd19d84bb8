"""The algorithms ``rlbench train --algo`` accepts: name -> class, and what each can train.

One registry, :data:`ALGORITHMS`, keyed by the lower-case names used on the command line
and as the file names of ``baselines/hyperparams/<algo>.yaml``. The SB3 packages are
imported only when a class is asked for. ``native`` algorithms are the suite's own
single-file ones (``fast_ppo``, and the ``offline`` algorithms that train on datasets): their
"class" is the config dataclass whose fields are the hyperparameters.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import inspect
from typing import Any

from gymnasium import spaces


@dataclasses.dataclass(frozen=True)
class Algorithm:
    """One trainable algorithm: where its class lives and which action spaces it handles."""

    name: str
    """The command-line name (``ppo``), also the hyperparameter file's stem."""
    package: str
    """``stable_baselines3``, ``sb3_contrib``, or the suite's module for a native one."""
    class_name: str
    on_policy: bool
    action_spaces: tuple[type[spaces.Space], ...]
    masked: bool = False
    """Whether it takes ``action_masks()`` (sb3-contrib's MaskablePPO)."""
    recurrent: bool = False
    """An LSTM policy (sb3-contrib's RecurrentPPO) that carries a state across an episode."""
    shared: bool = False
    """Parameter sharing: one policy for every agent of a multi-agent card (shared_ppo.py)."""
    league: bool = False
    """Self-play against a league of snapshots and fixed opponents (league.py)."""
    native: bool = False
    """One of the suite's single-file algorithms (not SB3; trained by ``native_run.NativeRun``)."""
    offline: bool = False
    """Trains on a dataset (an offline id), never on the env (``offline_run.OfflineRun``)."""
    discrete_package: str | None = None
    """An offline algorithm's module for Discrete actions, where it is another file."""

    @property
    def cpu_only(self) -> bool:
        """Whether it trains on the CPU only (``--device cpu`` or ``auto``): the suite's own and
        the offline algorithms, whose networks are small."""
        return self.native or self.offline

    def load_class(self) -> type:
        """The SB3 algorithm class (imports SB3 or sb3-contrib)."""
        try:
            module = importlib.import_module(self.package)
        except ImportError as exc:
            extra = {"sb3_contrib": "sb3-contrib"}.get(self.package, "stable-baselines3")
            raise ImportError(
                f"--algo {self.name} needs {extra}: pip install 'rlbench-suite[baselines]'"
            ) from exc
        return getattr(module, self.class_name)

    def accepted_kwargs(self) -> list[str]:
        """Constructor arguments a hyperparameter entry may set (those the trainer sets aside)."""
        reserved = {"self", "policy", "env", "seed", "device", "verbose", "_init_setup_model"}
        reserved |= {"tensorboard_log", "policy_kwargs", "total_timesteps"}
        parameters = inspect.signature(self.load_class().__init__).parameters
        return sorted(
            name
            for name, p in parameters.items()
            if name not in reserved and p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
        )

    def supports(self, action_space: spaces.Space) -> bool:
        return isinstance(action_space, self.action_spaces)


OFFLINE_PACKAGE = "rlbench_suite.baselines.offline"
_ANY = (spaces.Discrete, spaces.Box, spaces.MultiDiscrete, spaces.MultiBinary)

ALGORITHMS: dict[str, Algorithm] = {
    a.name: a
    for a in (
        Algorithm("ppo", "stable_baselines3", "PPO", True, _ANY),
        Algorithm("a2c", "stable_baselines3", "A2C", True, _ANY),
        Algorithm("dqn", "stable_baselines3", "DQN", False, (spaces.Discrete,)),
        Algorithm("sac", "stable_baselines3", "SAC", False, (spaces.Box,)),
        Algorithm("td3", "stable_baselines3", "TD3", False, (spaces.Box,)),
        Algorithm(
            "maskable_ppo",
            "sb3_contrib",
            "MaskablePPO",
            True,
            (spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary),
            masked=True,
        ),
        Algorithm(
            "recurrent_ppo",
            "sb3_contrib",
            "RecurrentPPO",
            True,
            (spaces.Discrete, spaces.Box),
            recurrent=True,
        ),
        Algorithm("shared_ppo", "stable_baselines3", "PPO", True, _ANY, shared=True),
        Algorithm("league", "stable_baselines3", "PPO", True, _ANY, league=True),
        Algorithm(
            "fast_ppo",
            "rlbench_suite.baselines.fast_ppo",
            "PPOConfig",
            True,
            (spaces.Discrete, spaces.Box),
            native=True,
        ),
        *(
            Algorithm(
                name,
                f"{OFFLINE_PACKAGE}.{name}",
                "Config",
                False,
                spaces_,
                native=True,
                offline=True,
                discrete_package=discrete,
            )
            for name, spaces_, discrete in (
                ("bc", (spaces.Box, spaces.Discrete), None),
                ("td3bc", (spaces.Box,), None),
                ("iql", (spaces.Box,), None),
                ("cql", (spaces.Box, spaces.Discrete), f"{OFFLINE_PACKAGE}.cql_discrete"),
            )
        ),
    )
}
"""Every algorithm ``rlbench train`` accepts, by command-line name."""


class UnknownAlgorithmError(ValueError):
    """An ``--algo`` name not in :data:`ALGORITHMS`."""


def get_algorithm(name: str) -> Algorithm:
    """The algorithm called ``name`` (case-insensitive, ``-`` as ``_``); a clear error if none."""
    key = name.strip().lower().replace("-", "_")
    if key in ALGORITHMS:
        return ALGORITHMS[key]
    close = difflib.get_close_matches(key, list(ALGORITHMS), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise UnknownAlgorithmError(
        f"unknown algorithm {name!r}; accepted: {', '.join(ALGORITHMS)}{hint}"
    )


def check_action_space(algo: Algorithm, env_id: str, action_space: Any) -> None:
    """Refuse an algorithm that cannot act in ``action_space``, naming those that can."""
    if algo.supports(action_space):
        return
    # of the algorithms that train where this one does (online, or offline on a dataset)
    able = [a.name for a in ALGORITHMS.values()
            if a.offline == algo.offline and a.supports(action_space)]  # fmt: skip
    raise ValueError(
        f"--algo {algo.name} cannot train on {env_id}: its action space {action_space} is not "
        f"one of {', '.join(s.__name__ for s in algo.action_spaces)}; "
        f"algorithms for it: {', '.join(able) or 'none'}"
    )
