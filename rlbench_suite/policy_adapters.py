"""Policy adapters for SB3 models, ONNX files, ``module:attr`` targets, baselines and teams.

Import them from :mod:`rlbench_suite.policies`. torch, stable-baselines3 and onnxruntime are
imported only when an adapter that needs them is created.

ONNX policy convention (what :class:`OnnxPolicy` runs and :func:`export_sb3_to_onnx` writes)
-------------------------------------------------------------------------------------------
- exactly one input, named ``obs``, ``float32``, of shape ``(batch, *observation_shape)``;
  observations are fed as they come from the environment (a ``Discrete`` observation is a
  ``(batch,)`` vector of indices); any preprocessing (one-hot, image scaling) is in the graph;
- one of two outputs (other outputs are ignored):
  - ``action``: ``(batch, *action_shape)``, the action to take as is (already clipped or
    rescaled to the action space; a discrete action is an integer index). Such a policy is
    deterministic: ``deterministic=False`` is refused;
  - ``logits``: ``(batch, n)`` unnormalised log-probabilities of a ``Discrete(n)`` action.
    Deterministic: the argmax over the legal actions (``info["action_mask"]``); stochastic:
    a sample from the softmax over the legal actions, drawn with a numpy generator seeded
    by ``reset(seed)``.

Running an ONNX file executes no user code, which is why the leaderboard server prefers it
to SB3 ``.zip`` files (those are unpickled, and unpickling can run arbitrary code).
"""

from __future__ import annotations

import base64
import copy
import difflib
import importlib
import inspect
import json
import pickletools
import warnings
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from rlbench_suite.policies import (
    Policy,
    PolicyIdentity,
    PolicyMetadata,
    RandomPolicy,
    agent_seed,
    artifact_identity,
    as_policy,
    identity_of,
    load_metadata,
)
from rlbench_suite.resources import content_dir
from rlbench_suite.wrappers.masks import (
    ACTION_MASK_KEY,
    coerce_action,
    get_action_mask,
    split_masked_observation,
)

# ------------------------------------------------------------------------------------ SB3

SB3_ALGORITHMS: dict[str, str] = {
    "PPO": "stable_baselines3",
    "A2C": "stable_baselines3",
    "DQN": "stable_baselines3",
    "SAC": "stable_baselines3",
    "TD3": "stable_baselines3",
    "DDPG": "stable_baselines3",
    "MaskablePPO": "sb3_contrib",
    "RecurrentPPO": "sb3_contrib",
    "TQC": "sb3_contrib",
    "QRDQN": "sb3_contrib",
    "TRPO": "sb3_contrib",
    "ARS": "sb3_contrib",
    "CrossQ": "sb3_contrib",
}
"""Algorithms :class:`SB3Policy` loads, and the package each comes from."""

# Module of the saved policy class -> algorithm (checked in order, by prefix).
_POLICY_MODULES = (
    ("stable_baselines3.dqn.", "DQN"),
    ("stable_baselines3.sac.", "SAC"),
    ("stable_baselines3.td3.", "TD3"),
    ("sb3_contrib.common.maskable.", "MaskablePPO"),
    ("sb3_contrib.common.recurrent.", "RecurrentPPO"),
    ("sb3_contrib.tqc.", "TQC"),
    ("sb3_contrib.qrdqn.", "QRDQN"),
    ("sb3_contrib.ars.", "ARS"),
    ("sb3_contrib.crossq.", "CrossQ"),
)


def _algorithm_class(algo: str) -> type:
    """The SB3 algorithm class named ``algo`` (case-insensitive)."""
    names = {name.lower(): name for name in SB3_ALGORITHMS}
    name = names.get(algo.lower())
    if name is None:
        raise ValueError(f"unknown SB3 algorithm {algo!r}; accepted: {', '.join(SB3_ALGORITHMS)}")
    package = SB3_ALGORITHMS[name]
    try:
        module = importlib.import_module(package)
    except ImportError as exc:
        extra = "sb3-contrib" if package == "sb3_contrib" else "stable-baselines3"
        raise ImportError(
            f"SB3 algorithm {name} needs {extra}: pip install 'rlbench-suite[baselines]'"
        ) from exc
    return getattr(module, name)


def detect_sb3_algorithm(path: str | Path) -> str:
    """Which SB3 algorithm saved the ``.zip`` at ``path``, from its ``data`` JSON.

    SB3 stores the *policy* class (module and name), not the algorithm; the algorithm
    follows from the policy's module and, for the shared actor-critic policy, from the
    hyperparameters saved with it (PPO has ``clip_range``, TRPO ``cg_max_steps``, A2C
    neither). DDPG is TD3 with ``policy_delay == 1`` and ``target_noise_clip == 0``.
    Nothing is unpickled.
    """
    path = Path(path)
    try:
        with zipfile.ZipFile(path) as archive:
            data = json.loads(archive.read("data"))
    except (zipfile.BadZipFile, KeyError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(
            f"{path} is not an SB3 model (.zip with a 'data' JSON entry): {exc}"
        ) from None
    module, name = _saved_class(data.get("policy_class"))
    for prefix, algo in _POLICY_MODULES:
        if module.startswith(prefix):
            if (
                algo == "TD3"
                and data.get("policy_delay") == 1
                and not data.get("target_noise_clip")
            ):
                return "DDPG"
            return algo
    if module == "stable_baselines3.common.policies":
        if "cg_max_steps" in data:
            return "TRPO"
        return "PPO" if "clip_range" in data else "A2C"
    raise ValueError(
        f"cannot tell which SB3 algorithm saved {path} (policy class {module}.{name}); "
        f"pass algo= (accepted: {', '.join(SB3_ALGORITHMS)})"
    )


def _saved_class(entry: Any) -> tuple[str, str]:
    """(module, name) of a class SB3 serialised into its data JSON, read without unpickling."""
    if not isinstance(entry, dict):
        return "", ""
    strings: list[str] = []
    try:
        raw = base64.b64decode(entry.get(":serialized:", ""))
        strings = [arg for _, arg, _ in pickletools.genops(raw) if isinstance(arg, str)]
    except Exception:  # a class pickled by value, or a damaged entry: fall back to the JSON
        strings = []
    module = entry.get("__module__") or (strings[0] if strings else "")
    name = strings[1] if len(strings) > 1 else ""
    return str(module), str(name)


class SB3Policy:
    """A stable-baselines3 (or sb3-contrib) model: ``model.predict(obs, deterministic=...)``.

    ``model_or_path`` is a model or the path of a saved ``.zip``; the algorithm is ``algo``
    if given, else the sidecar's ``algo``, else detected (:func:`detect_sb3_algorithm`).
    MaskablePPO gets ``action_masks`` from ``info["action_mask"]``; recurrent policies keep
    their state across steps and start afresh on ``reset``.

    Stochastic actions (``deterministic=False``) are reproducible: SB3 samples from torch's
    global generator, so the policy swaps its own generator state in around ``predict`` (and
    restores the global one after), seeded by ``reset(seed)``; DQN and QR-DQN explore
    epsilon-greedily as their ``predict`` does, with the policy's own numpy generator. Same
    seed, same actions, whatever else runs in the process (on CPU, the default device).
    Loading a ``.zip`` unpickles it: load only files you trust (or use ONNX).
    """

    def __init__(
        self,
        model_or_path: Any,
        deterministic: bool = True,
        algo: str | None = None,
        *,
        device: str = "cpu",
    ) -> None:
        self.deterministic = deterministic
        metadata: PolicyMetadata | None = None
        if isinstance(model_or_path, str | Path):
            path = Path(model_or_path)
            if not path.is_file() and path.with_name(path.name + ".zip").is_file():
                path = path.with_name(path.name + ".zip")
            if not path.is_file():
                raise FileNotFoundError(f"SB3 model file not found: {path}")
            metadata = load_metadata(path)
            algo = algo or (metadata.algo if metadata else None) or detect_sb3_algorithm(path)
            self.model = _algorithm_class(algo).load(path, device=device)
        else:
            from stable_baselines3.common.base_class import BaseAlgorithm

            if not isinstance(model_or_path, BaseAlgorithm):
                raise TypeError(
                    f"expected an SB3 model or a path to a saved .zip, got {type(model_or_path)!r}"
                )
            path = None
            self.model = model_or_path
        self.algo = type(self.model).__name__
        self.masked = self.algo == "MaskablePPO"
        self.recurrent = self.algo == "RecurrentPPO"
        self.explores = hasattr(self.model, "exploration_rate")  # DQN, QRDQN: epsilon-greedy
        space = self.model.action_space
        self._discrete = space.dtype.type if isinstance(space, gym.spaces.Discrete) else None
        self._explore_space = copy.deepcopy(space)
        extra = {"algo": self.algo, "num_timesteps": int(self.model.num_timesteps)}
        if path is not None:
            self.identity = artifact_identity(path, "sb3", metadata, **extra)
        else:
            self.identity = PolicyIdentity(name=self.algo, kind="sb3", extra=extra)
        self._state: Any = None
        self._episode_start = np.ones((1,), dtype=bool)
        self._seed_generators(None)

    def _seed_generators(self, seed: int | None) -> None:
        import torch

        torch_seed, numpy_seed, space_seed = np.random.SeedSequence(seed).generate_state(3)
        self._torch_state = torch.Generator().manual_seed(int(torch_seed)).get_state()
        self._numpy_rng = np.random.default_rng(numpy_seed)
        self._explore_space.seed(int(space_seed))

    def reset(self, seed: int | None = None) -> None:
        self._state = None
        self._episode_start = np.ones((1,), dtype=bool)
        if seed is not None:
            self._seed_generators(seed)

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        observation, info = _split_mask(observation, info, self.model.observation_space)
        kwargs: dict[str, Any] = {"deterministic": self.deterministic}
        if self.masked:
            kwargs["action_masks"] = get_action_mask(None, info)
        if self.recurrent:
            kwargs.update(state=self._state, episode_start=self._episode_start)

        if self.deterministic:
            action, state = self.model.predict(observation, **kwargs)
        elif self.explores:  # as DQN.predict, which draws from numpy's global generator
            if self._numpy_rng.random() < self.model.exploration_rate:
                action, state = np.asarray(self._explore_space.sample()), None
            else:  # the Q-network's policy is greedy whatever `deterministic` says
                action, state = self.model.predict(observation, deterministic=True)
        else:
            action, state = self._predict_with_own_generator(observation, kwargs)
        if self.recurrent:
            self._state = state
            self._episode_start = np.zeros((1,), dtype=bool)
        if self._discrete is not None and isinstance(action, np.ndarray) and action.ndim == 0:
            return self._discrete(action)
        return coerce_action(action, self.model.action_space)

    def _predict_with_own_generator(self, observation: Any, kwargs: dict[str, Any]) -> Any:
        import torch

        saved = torch.get_rng_state()
        torch.set_rng_state(self._torch_state)
        try:
            return self.model.predict(observation, **kwargs)
        finally:
            self._torch_state = torch.get_rng_state()
            torch.set_rng_state(saved)


def _split_mask(
    observation: Any, info: dict[str, Any], space: gym.Space | None
) -> tuple[Any, dict[str, Any]]:
    """Move a PettingZoo-style mask into ``info`` unless the policy observes the dict itself."""
    if isinstance(space, gym.spaces.Dict) and ACTION_MASK_KEY in space.spaces:
        return observation, info
    return split_masked_observation(observation, info or {})


# ----------------------------------------------------------------------------------- ONNX


class OnnxPolicy:
    """An ONNX file in the suite's convention (module docstring), run by onnxruntime on CPU.

    ``action_space``, if given, casts actions to its dtype. No user code is executed.
    """

    def __init__(
        self,
        path: str | Path,
        deterministic: bool = True,
        *,
        action_space: gym.Space | None = None,
    ) -> None:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"ONNX policy file not found: {path}")
        metadata = load_metadata(path)
        self.session = _onnx_session(path)
        inputs = self.session.get_inputs()
        if len(inputs) != 1 or inputs[0].name != "obs" or inputs[0].type != "tensor(float)":
            got = [(i.name, i.type) for i in inputs]
            raise ValueError(
                f"ONNX policy {path} must have one float32 input named 'obs', got {got}"
            )
        outputs = {o.name for o in self.session.get_outputs()}
        heads = sorted(outputs & {"action", "logits"})
        if len(heads) != 1:
            raise ValueError(
                f"ONNX policy {path} must have exactly one output named 'action' or 'logits', "
                f"got {sorted(outputs)}"
            )
        self.output = heads[0]
        if self.output == "action" and not deterministic:
            raise ValueError(
                f"ONNX policy {path} outputs 'action', a deterministic policy; "
                "deterministic=False needs a 'logits' output"
            )
        self.path = path
        self.deterministic = deterministic
        self.action_space = action_space
        self.obs_shape = tuple(inputs[0].shape[1:])
        self._rng = np.random.default_rng()
        self.identity = artifact_identity(path, "onnx", metadata, output=self.output)

    def __getstate__(self) -> dict[str, Any]:  # picklable: the session is opened again
        return {k: v for k, v in self.__dict__.items() if k != "session"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.session = _onnx_session(self.path)

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self._rng = np.random.default_rng(seed)

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        observation, info = split_masked_observation(observation, info or {})
        obs = np.asarray(observation, dtype=np.float32)[None]
        try:
            (out,) = self.session.run([self.output], {"obs": obs})
        except Exception as exc:
            raise ValueError(
                f"ONNX policy {self.path} failed on an observation of shape {obs.shape[1:]} "
                f"(its input 'obs' has shape (batch, *{self.obs_shape})): {exc}"
            ) from None
        out = out[0]
        if self.output == "logits":
            action: Any = np.int64(self._choose(np.asarray(out, np.float64), info))
        elif np.issubdtype(out.dtype, np.integer) and out.ndim == 0:
            action = np.int64(out)
        else:
            action = out
        return action if self.action_space is None else coerce_action(action, self.action_space)

    def _choose(self, logits: np.ndarray, info: dict[str, Any]) -> int:
        mask = get_action_mask(None, info)
        if mask is not None:
            if not mask.any():
                raise ValueError("every action is masked out: nothing legal to choose")
            logits = np.where(mask.astype(bool), logits, -np.inf)
        if self.deterministic:
            return int(np.argmax(logits))
        p = np.exp(logits - logits.max())
        return int(self._rng.choice(len(p), p=p / p.sum()))


def _onnx_session(path: Path) -> Any:
    """An onnxruntime session on CPU with one thread (workers run in parallel, not ops)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    try:
        return ort.InferenceSession(
            str(path), sess_options=options, providers=["CPUExecutionProvider"]
        )
    except Exception as exc:
        raise ValueError(f"{path} is not a loadable ONNX model: {exc}") from None


def export_sb3_to_onnx(model: Any, path: str | Path, *, opset: int = 17) -> Path:
    """Write an SB3 model's deterministic policy to ``path`` in the suite's ONNX convention.

    Supported: PPO, A2C, TRPO, MaskablePPO (``logits`` for ``Discrete`` actions, the clipped
    or rescaled Gaussian mean as ``action`` for ``Box``), DQN, QRDQN (the greedy ``action``), SAC,
    TQC, TD3, DDPG (the rescaled deterministic ``action``); observations ``Box`` or
    ``Discrete``. Uses torch's TorchScript-based exporter (``dynamo=False``), which needs no
    ``onnxscript``; the dynamo exporter is the fallback where that one is gone.
    """
    import torch

    head, output = _onnx_head(model)
    space = model.observation_space
    if not isinstance(space, gym.spaces.Box | gym.spaces.Discrete):
        raise NotImplementedError(
            f"ONNX export supports Box and Discrete observation spaces, got {space}"
        )
    path = Path(path)
    dummy = torch.zeros((1, *space.shape), dtype=torch.float32)
    model.policy.set_training_mode(False)
    kwargs: dict[str, Any] = {
        "input_names": ["obs"],
        "output_names": [output],
        "dynamic_axes": {"obs": {0: "batch"}, output: {0: "batch"}},
        "opset_version": opset,
    }
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*legacy TorchScript-based ONNX export")
        warnings.filterwarnings("ignore", message=".*will be removed", category=DeprecationWarning)
        try:
            torch.onnx.export(head, (dummy,), str(path), dynamo=False, **kwargs)
        except (TypeError, RuntimeError, NotImplementedError):
            torch.onnx.export(head, (dummy,), str(path), dynamo=True, **kwargs)
    _tag_onnx(path, type(model).__name__)
    return path


def _onnx_head(model: Any) -> tuple[Any, str]:
    """A torch module computing the exported output from ``obs``, and the output's name."""
    import torch
    from stable_baselines3.common import distributions as d
    from stable_baselines3.common.policies import ActorCriticPolicy

    policy = model.policy
    algo = type(model).__name__
    space = model.action_space
    box = isinstance(space, gym.spaces.Box)
    low = torch.as_tensor(space.low, dtype=torch.float32) if box else None
    high = torch.as_tensor(space.high, dtype=torch.float32) if box else None

    def rescale(a: Any) -> Any:  # BasePolicy.unscale_action, from [-1, 1] to [low, high]
        return low + 0.5 * (a + 1.0) * (high - low)

    if algo == "RecurrentPPO" or getattr(policy, "lstm_actor", None) is not None:
        raise NotImplementedError("ONNX export of recurrent policies is not supported")
    # ActorCriticPolicy and sb3-contrib's MaskableActorCriticPolicy (not a subclass of it)
    if isinstance(policy, ActorCriticPolicy) or algo == "MaskablePPO":
        dist = policy.action_dist

        def mean(obs: Any) -> Any:
            features = policy.extract_features(obs, policy.pi_features_extractor)
            return policy.action_net(policy.mlp_extractor.forward_actor(features))

        categorical = type(dist).__name__ == "MaskableCategoricalDistribution"
        if categorical or isinstance(dist, d.CategoricalDistribution):
            return _head(policy, mean), "logits"
        if isinstance(dist, d.DiagGaussianDistribution | d.StateDependentNoiseDistribution):
            if policy.squash_output:
                return _head(policy, lambda obs: rescale(torch.tanh(mean(obs)))), "action"
            return _head(policy, lambda obs: torch.clamp(mean(obs), low, high)), "action"
        raise NotImplementedError(f"ONNX export of {type(dist).__name__} is not supported")
    if algo == "DQN":
        return _head(policy, lambda obs: policy.q_net(obs).argmax(dim=1)), "action"
    if algo == "QRDQN":
        return _head(
            policy, lambda obs: policy.quantile_net(obs).mean(dim=1).argmax(dim=1)
        ), "action"
    actor = getattr(policy, "actor", None)
    if actor is not None and hasattr(actor, "get_action_dist_params"):  # SAC, TQC, CrossQ
        return _head(
            policy, lambda obs: rescale(torch.tanh(actor.get_action_dist_params(obs)[0]))
        ), "action"
    if algo in ("TD3", "DDPG"):
        return _head(policy, lambda obs: rescale(actor(obs))), "action"
    raise NotImplementedError(
        f"ONNX export of {algo} is not supported; supported: PPO, A2C, TRPO, MaskablePPO, "
        "DQN, QRDQN, SAC, TQC, CrossQ, TD3, DDPG"
    )


def _head_module() -> type:
    import torch

    class Head(torch.nn.Module):
        def __init__(self, policy: Any, fn: Callable[[Any], Any]) -> None:
            super().__init__()
            self.policy = policy
            self.fn = fn

        def forward(self, obs: Any) -> Any:
            return self.fn(obs)

    return Head


def _head(policy: Any, fn: Callable[[Any], Any]) -> Any:
    return _head_module()(policy, fn).eval()


def _tag_onnx(path: Path, algo: str) -> None:
    """Record the convention and the source in the ONNX file's metadata."""
    import onnx

    model = onnx.load(str(path))
    for key, value in {"rlbench.policy_format": "1", "rlbench.source": f"sb3:{algo}"}.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.save(model, str(path))


# ------------------------------------------------------------------------------ module:attr


class ModulePolicy:
    """The policy named by ``"package.module:attribute"`` (the attribute may be dotted).

    The attribute is resolved as follows:

    - a :class:`Policy` instance is used as is (shared by everyone who imports it);
    - a class is instantiated with those of the keyword arguments ``observation_space``,
      ``action_space`` (from ``env``) and ``seed`` that its ``__init__`` names; any other
      required parameter is an error, and so is needing a space without an ``env``. The
      instance is used as a Policy, or wrapped as a callable;
    - any other callable is wrapped by :func:`~rlbench_suite.policies.as_policy`.
    """

    def __init__(
        self,
        target: str,
        env: Any = None,
        seed: int | None = None,
        *,
        agent: str | None = None,
    ) -> None:
        module_name, _, attribute = target.partition(":")
        if not module_name or not attribute:
            raise ValueError(f"expected 'package.module:attribute', got {target!r}")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name and (module_name + ".").startswith(exc.name + "."):
                raise ValueError(
                    f"cannot import module {module_name!r} (from {target!r})"
                ) from None
            raise
        obj: Any = module
        for part in attribute.split("."):
            if not hasattr(obj, part):
                names = [n for n in dir(obj) if not n.startswith("_")]
                close = difflib.get_close_matches(part, names, n=3)
                hint = f"; did you mean: {', '.join(close)}" if close else ""
                raise ValueError(f"{target!r}: {obj.__name__!r} has no attribute {part!r}{hint}")
            obj = getattr(obj, part)
        self.policy = _policy_from_object(obj, target, env, seed, agent)
        inner = identity_of(self.policy)
        self.identity = inner.model_copy(
            update={
                "name": target,
                "kind": "module",
                "extra": {**inner.extra, "inner_kind": inner.kind},
            }
        )

    def reset(self, seed: int | None = None) -> None:
        self.policy.reset(seed)

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        return self.policy.act(observation, info)


def _policy_from_object(
    obj: Any, target: str, env: Any, seed: int | None, agent: str | None
) -> Policy:
    if inspect.isclass(obj):
        try:
            parameters = inspect.signature(obj).parameters
        except (TypeError, ValueError):
            parameters = {}  # type: ignore[assignment]
        kwargs: dict[str, Any] = {}
        wanted = [n for n in ("observation_space", "action_space") if n in parameters]
        if wanted:
            if env is None:
                raise ValueError(f"{target!r} takes {' and '.join(wanted)}: pass an env")
            observation_space, action_space = env_spaces(env, agent)
            given = {"observation_space": observation_space, "action_space": action_space}
            kwargs.update({n: given[n] for n in wanted})
        if "seed" in parameters:
            kwargs["seed"] = seed
        required = [
            n
            for n, p in parameters.items()
            if n not in kwargs
            and p.default is inspect.Parameter.empty
            and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
        ]
        if required:
            raise ValueError(
                f"cannot instantiate {target!r}: it requires {required}; only observation_space,"
                " action_space and seed are passed"
            )
        obj = obj(**kwargs)
    if isinstance(obj, Policy) or callable(obj):
        return as_policy(obj)
    raise ValueError(
        f"{target!r} is a {type(obj).__name__}, not a Policy, a Policy class or a callable"
    )


def env_spaces(env: Any, agent: str | None = None) -> tuple[gym.Space, gym.Space]:
    """(observation space, action space) of a Gymnasium env, or of a PettingZoo env's agent.

    For a PettingZoo env without ``agent``, every agent must have the same spaces.
    """
    if isinstance(getattr(env, "action_space", None), gym.Space):
        return env.observation_space, env.action_space
    agents = list(getattr(env, "possible_agents", []))
    if not agents or not callable(getattr(env, "action_space", None)):
        raise TypeError(f"expected a Gymnasium or PettingZoo env, got {type(env)!r}")
    if agent is not None:
        if agent not in agents:
            raise ValueError(f"unknown agent {agent!r}; the env's agents: {agents}")
        return env.observation_space(agent), env.action_space(agent)
    pairs = [(env.observation_space(a), env.action_space(a)) for a in agents]
    if any(pair != pairs[0] for pair in pairs[1:]):
        raise ValueError(f"agents {agents} have different spaces: pass agent=")
    return pairs[0]


# ---------------------------------------------------------------------------------- joint


class JointPolicy:
    """One policy per agent of a multi-agent environment.

    ``act(observations, infos)`` maps a Parallel env's per-agent dicts to a dict of actions
    (for the agents present in ``observations``); ``for_agent(agent)`` gives the policy of one
    agent (for AEC loops). ``reset(seed)`` resets each distinct policy once, with
    :func:`~rlbench_suite.policies.agent_seed` of ``seed`` and its (first) agent, so agents
    draw independent streams.
    """

    def __init__(self, policies: Mapping[str, Policy | Callable[..., Any]]) -> None:
        if not policies:
            raise ValueError("a JointPolicy needs at least one agent -> policy entry")
        self.policies: dict[str, Policy] = {a: as_policy(p) for a, p in policies.items()}
        identities = {a: identity_of(p) for a, p in self.policies.items()}
        self.identity = PolicyIdentity(
            name="joint(" + ", ".join(f"{a}={i.name}" for a, i in identities.items()) + ")",
            kind="joint",
            train_seeds=sorted({s for i in identities.values() for s in i.train_seeds}),
            tuning_seeds=sorted({s for i in identities.values() for s in i.tuning_seeds}),
            extra={"agents": {a: i.model_dump(mode="json") for a, i in identities.items()}},
        )

    def for_agent(self, agent: str) -> Policy:
        try:
            return self.policies[agent]
        except KeyError:
            raise KeyError(
                f"no policy for agent {agent!r}; agents: {list(self.policies)}"
            ) from None

    def reset(self, seed: int | None = None) -> None:
        done: set[int] = set()
        for agent, policy in self.policies.items():
            if id(policy) not in done:
                done.add(id(policy))
                policy.reset(None if seed is None else agent_seed(seed, agent))

    def act(
        self, observations: Mapping[str, Any], infos: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        infos = infos or {}
        return {
            agent: self.for_agent(agent).act(obs, infos.get(agent) or {})
            for agent, obs in observations.items()
        }


# ------------------------------------------------------------------------------ baselines

BASELINE_FILES = ("policy.onnx", "policy.zip")


def available_baselines() -> list[str]:
    """Names ``NAME`` of the baselines ``baselines/NAME/policy.{onnx,zip}`` in the content."""
    try:
        root = content_dir("baselines")
    except FileNotFoundError:
        return []
    found = {
        p.parent.relative_to(root).as_posix()
        for name in BASELINE_FILES
        for p in root.rglob(name)
        if p.is_file() and p.parent != root
    }
    return sorted(found)


def resolve_baseline(name: str) -> Path:
    """The artifact of baseline ``name``: ``baselines/<name>/policy.onnx``, else ``policy.zip``.

    ``name`` may have ``/`` (``ppo/CartPole-v1``). The ONNX file is preferred: it runs
    without executing code. Its sidecar is ``policy.onnx.meta.json`` (or ``.zip.meta.json``).
    """
    parts = Path(name).parts
    if not name or Path(name).is_absolute() or ".." in parts:
        raise ValueError(f"invalid baseline name {name!r}: expected a relative name like 'ppo-x'")
    try:
        folder = content_dir("baselines") / name
    except FileNotFoundError:
        folder = None
    for file in BASELINE_FILES:
        if folder is not None and (folder / file).is_file():
            return folder / file
    known = available_baselines()
    close = difflib.get_close_matches(name, known, n=3)
    raise ValueError(
        f"unknown baseline {name!r}; available: {', '.join(known) or 'none yet'}"
        + (f"; did you mean: {', '.join(close)}" if close else "")
    )


# ------------------------------------------------------------------------------ make_policy

POLICY_SPECS = (
    "random",
    "sb3:PATH",
    "onnx:PATH",
    "module:package.module:attr (or package.module:attr)",
    "baseline:NAME",
)
"""The accepted ``--policy`` strings."""

_SCHEMES = ("random", "sb3", "onnx", "module", "baseline")


def make_policy(
    spec: str,
    env: Any = None,
    seed: int | None = None,
    *,
    deterministic: bool = True,
    algo: str | None = None,
    agent: str | None = None,
) -> Policy:
    """The policy named by a ``--policy`` string (see :data:`POLICY_SPECS`).

    The spec names *which* policy; how it acts is given by keyword: ``deterministic``
    (SB3, ONNX and baselines; usually the evaluation protocol's flag) and ``algo`` (SB3 only,
    overriding detection). ``env`` (a Gymnasium env, or a PettingZoo env with ``agent``)
    provides the spaces that ``random`` and ``module:`` classes need. ``seed``, if given,
    is passed to ``reset``. The policy's ``identity.spec`` is ``spec``.
    """
    text = spec.strip()
    scheme, sep, rest = text.partition(":")
    if algo is not None and scheme != "sb3":
        raise ValueError(f"algo= applies to 'sb3:PATH' specs only, got {spec!r}")
    accepted = ", ".join(POLICY_SPECS)
    policy: Any
    if text == "random":
        if env is None:
            raise ValueError("policy 'random' needs an env (for its action space)")
        _, action_space = env_spaces(env, agent)
        policy = RandomPolicy(copy.deepcopy(action_space), seed=seed)
    elif scheme in ("sb3", "onnx", "baseline") and sep:
        if not rest:
            raise ValueError(
                f"policy spec {spec!r} names no {'NAME' if scheme == 'baseline' else 'PATH'}"
            )
        kind = scheme
        path = Path(rest).expanduser() if scheme != "baseline" else resolve_baseline(rest)
        if kind == "baseline":
            kind = "sb3" if path.suffix == ".zip" else "onnx"
        if kind == "sb3":
            if not path.is_file() and not path.with_name(path.name + ".zip").is_file():
                raise FileNotFoundError(f"policy file not found: {path} (from spec {spec!r})")
            policy = SB3Policy(path, deterministic=deterministic, algo=algo)
        else:
            if not path.is_file():
                raise FileNotFoundError(f"policy file not found: {path} (from spec {spec!r})")
            space = env_spaces(env, agent)[1] if env is not None else None
            policy = OnnxPolicy(path, deterministic=deterministic, action_space=space)
        if scheme == "baseline":
            policy.identity = policy.identity.model_copy(update={"kind": "baseline", "name": rest})
    elif sep and rest:
        target = rest if scheme == "module" else text
        try:
            policy = ModulePolicy(target, env, seed, agent=agent)
        except ValueError as exc:
            close = difflib.get_close_matches(scheme, _SCHEMES, n=1)
            hint = f"; did you mean '{close[0]}:'?" if close and scheme != "module" else ""
            raise ValueError(f"policy spec {spec!r}: {exc}; accepted: {accepted}{hint}") from None
    else:
        close = difflib.get_close_matches(text, _SCHEMES, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"unknown policy spec {spec!r}; accepted: {accepted}{hint}")
    policy.identity = policy.identity.model_copy(update={"spec": spec})
    if seed is not None:
        policy.reset(seed)
    return policy
