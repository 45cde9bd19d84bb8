"""ONNX files as policies (:class:`OnnxPolicy`) and :func:`export_sb3_to_onnx`.

onnxruntime (and, for export, torch and onnx) are imported only when needed.

The ONNX policy convention (what :class:`OnnxPolicy` runs and :func:`export_sb3_to_onnx`
writes):

- an input named ``obs``, ``float32``, of shape ``(batch, *observation_shape)``;
  observations are fed as they come from the environment (a ``Discrete`` observation is a
  ``(batch,)`` vector of indices); any preprocessing (one-hot, image scaling) is in the graph;
- a recurrent policy (an LSTM, e.g. RecurrentPPO's) has a second input, ``state``,
  ``float32`` ``(batch, *state_shape)`` with a fixed ``state_shape``, and a second output,
  ``state_out``, of the same shape: the state after this step. The runner feeds zeros at the
  start of each episode (``reset``) and each step's ``state_out`` to the next step;
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

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from rlbench_suite.policies.core import artifact_identity, load_metadata
from rlbench_suite.wrappers.masks import coerce_action, get_action_mask, split_masked_observation


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
        inputs = {i.name: i for i in self.session.get_inputs()}
        outputs = {o.name for o in self.session.get_outputs()}
        if set(inputs) not in ({"obs"}, {"obs", "state"}) or any(
            i.type != "tensor(float)" for i in inputs.values()
        ):
            got = [(i.name, i.type) for i in inputs.values()]
            raise ValueError(
                f"ONNX policy {path} must have one float32 input named 'obs' (and, if "
                f"recurrent, a float32 'state' with a 'state_out' output), got {got}"
            )
        self.state_shape: tuple[int, ...] | None = None
        if "state" in inputs:
            shape = tuple(inputs["state"].shape[1:])
            if "state_out" not in outputs or not all(isinstance(n, int) for n in shape):
                raise ValueError(
                    f"ONNX policy {path} has a 'state' input, so it needs a 'state_out' output "
                    f"and a fixed state shape; got outputs {sorted(outputs)}, shape {shape}"
                )
            self.state_shape = shape
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
        self.obs_shape = tuple(inputs["obs"].shape[1:])
        self._rng = np.random.default_rng()
        self._state = self._initial_state()
        self.identity = artifact_identity(path, "onnx", metadata, output=self.output)

    def __getstate__(self) -> dict[str, Any]:  # picklable: the session is opened again
        return {k: v for k, v in self.__dict__.items() if k != "session"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.session = _onnx_session(self.path)

    def _initial_state(self) -> np.ndarray | None:
        shape = self.state_shape
        return None if shape is None else np.zeros((1, *shape), dtype=np.float32)

    def reset(self, seed: int | None = None) -> None:
        """Start an episode: a recurrent policy's state goes back to zeros."""
        self._state = self._initial_state()
        if seed is not None:
            self._rng = np.random.default_rng(seed)

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        observation, info = split_masked_observation(observation, info or {})
        obs = np.asarray(observation, dtype=np.float32)[None]
        feed = {"obs": obs}
        if self._state is not None:
            feed["state"] = self._state
        names = [self.output] if self._state is None else [self.output, "state_out"]
        try:
            out, *state = self.session.run(names, feed)
        except Exception as exc:
            raise ValueError(
                f"ONNX policy {self.path} failed on an observation of shape {obs.shape[1:]} "
                f"(its input 'obs' has shape (batch, *{self.obs_shape})): {exc}"
            ) from None
        if state:
            self._state = state[0]
        out = out[0]
        if self.output == "logits":
            action: Any = np.int64(self._choose(np.asarray(out, np.float64), info))
        elif np.issubdtype(out.dtype, np.integer) and out.ndim == 0:
            action = np.int64(out)
        else:
            action = out
        return action if self.action_space is None else coerce_action(action, self.action_space)

    @property
    def batchable(self) -> bool:
        """Whether :meth:`act_batch` gives what :meth:`act` gives row by row: no recurrent
        state, and no sampling (an ``action`` head, or greedy ``logits``)."""
        return self.state_shape is None and (self.output == "action" or self.deterministic)

    def act_batch(self, observations: Any) -> np.ndarray:
        """The actions for a batch of observations (rows, no action masks) in one run: for a
        :attr:`batchable` policy, those :meth:`act` gives one row at a time."""
        if not self.batchable:
            raise ValueError(f"ONNX policy {self.path} is recurrent or samples its actions; "
                             "act_batch needs a stateless greedy policy (use act)")
        obs = np.asarray(observations, dtype=np.float32)
        (out,) = self.session.run([self.output], {"obs": obs})
        if self.output == "logits":  # widening to float64 (as act does) keeps the order
            return np.asarray(out).argmax(axis=1).astype(np.int64)
        if np.issubdtype(out.dtype, np.integer) and out.ndim == 1:
            return out.astype(np.int64)
        return out

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


def export_sb3_to_onnx(
    model: Any, path: str | Path, *, opset: int = 17, obs_normalization: Any = None
) -> Path:
    """Write an SB3 model's deterministic policy to ``path`` in the suite's ONNX convention.

    ``obs_normalization``, a ``VecNormalize`` (or anything with ``obs_rms``, ``epsilon`` and
    ``clip_obs``) the model was trained behind, is put into the graph, which then takes the
    raw observations: ``clip((obs - mean) / sqrt(var + epsilon), -clip_obs, clip_obs)``.

    Supported: PPO, A2C, TRPO, MaskablePPO, RecurrentPPO (with a ``state`` input and a
    ``state_out`` output), with ``logits`` for ``Discrete`` actions and the clipped or
    rescaled Gaussian mean as ``action`` for ``Box``; DQN, QRDQN (the greedy ``action``), SAC,
    TQC, TD3, DDPG (the rescaled deterministic ``action``); observations ``Box`` or
    ``Discrete``. Uses torch's TorchScript-based exporter (``dynamo=False``), which needs no
    ``onnxscript``; the dynamo exporter is the fallback where that one is gone.
    """
    head, output = _onnx_head(model)
    if obs_normalization is not None:
        head = _normalized(head, obs_normalization)
    space = model.observation_space
    if not isinstance(space, gym.spaces.Box | gym.spaces.Discrete):
        raise NotImplementedError(
            f"ONNX export supports Box and Discrete observation spaces, got {space}"
        )
    model.policy.set_training_mode(False)
    source = f"sb3:{type(model).__name__}"
    lstm = getattr(model.policy, "lstm_actor", None)
    state_shape = None if lstm is None else (2, lstm.num_layers, lstm.hidden_size)
    return export_module_to_onnx(
        head, path, space.shape, output, source, opset=opset, state_shape=state_shape
    )


def export_module_to_onnx(
    module: Any,
    path: str | Path,
    obs_shape: tuple[int, ...],
    output: str,
    source: str,
    *,
    opset: int = 17,
    state_shape: tuple[int, ...] | None = None,
) -> Path:
    """Write a torch module mapping raw ``obs`` to ``output`` (``action`` or ``logits``) to
    ``path`` in the suite's ONNX convention (module docstring), tagged with ``source``.

    With ``state_shape`` the module is recurrent: ``(obs, state) -> (output, state_out)``.
    """
    import torch

    if output not in ("action", "logits"):
        raise ValueError(f"output must be 'action' or 'logits', got {output!r}")
    path = Path(path)
    inputs: tuple[Any, ...] = (torch.zeros((1, *obs_shape), dtype=torch.float32),)
    names = {"obs": "obs", output: output}
    if state_shape is not None:
        inputs += (torch.zeros((1, *state_shape), dtype=torch.float32),)
        names |= {"state": "state", "state_out": "state_out"}
    kwargs: dict[str, Any] = {
        "input_names": [n for n in names if n in ("obs", "state")],
        "output_names": [n for n in names if n not in ("obs", "state")],
        "dynamic_axes": {name: {0: "batch"} for name in names},
        "opset_version": opset,
    }
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*legacy TorchScript-based ONNX export")
        warnings.filterwarnings("ignore", message=".*will be removed", category=DeprecationWarning)
        warnings.filterwarnings("ignore", message=".*batch_size other than 1", category=UserWarning)
        warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
        try:
            torch.onnx.export(module, inputs, str(path), dynamo=False, **kwargs)
        except (TypeError, RuntimeError, NotImplementedError):
            torch.onnx.export(module, inputs, str(path), dynamo=True, **kwargs)
    _tag_onnx(path, source)
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

    # ActorCriticPolicy (RecurrentPPO's policy too) and sb3-contrib's
    # MaskableActorCriticPolicy (not a subclass of it)
    if isinstance(policy, ActorCriticPolicy) or algo == "MaskablePPO":
        dist = policy.action_dist
        categorical = type(dist).__name__ == "MaskableCategoricalDistribution"
        if categorical or isinstance(dist, d.CategoricalDistribution):
            output, finish = "logits", (lambda mean: mean)
        elif isinstance(dist, d.DiagGaussianDistribution | d.StateDependentNoiseDistribution):
            output = "action"
            if policy.squash_output:
                finish = lambda mean: rescale(torch.tanh(mean))  # noqa: E731
            else:
                finish = lambda mean: torch.clamp(mean, low, high)  # noqa: E731
        else:
            raise NotImplementedError(f"ONNX export of {type(dist).__name__} is not supported")
        if getattr(policy, "lstm_actor", None) is not None:
            return _head(policy, lambda obs, state: _lstm_step(policy, obs, state, finish)), output

        def actor(obs: Any) -> Any:
            features = policy.extract_features(obs, policy.pi_features_extractor)
            return finish(policy.action_net(policy.mlp_extractor.forward_actor(features)))

        return _head(policy, actor), output
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
        "RecurrentPPO, "
        "DQN, QRDQN, SAC, TQC, CrossQ, TD3, DDPG"
    )


def _lstm_step(policy: Any, obs: Any, state: Any, finish: Callable[[Any], Any]) -> Any:
    """One step of a RecurrentPPO actor: ``state`` is ``(batch, 2, layers, hidden)``, the
    LSTM's hidden and cell states; returns the exported output and the next state."""
    import torch
    from stable_baselines3.common.policies import BasePolicy

    features = BasePolicy.extract_features(policy, obs, policy.pi_features_extractor)
    hidden = state[:, 0].transpose(0, 1).contiguous()  # (layers, batch, hidden)
    cell = state[:, 1].transpose(0, 1).contiguous()
    out, (hidden, cell) = policy.lstm_actor(features.unsqueeze(0), (hidden, cell))
    latent = policy.mlp_extractor.forward_actor(out.squeeze(0))
    next_state = torch.stack((hidden.transpose(0, 1), cell.transpose(0, 1)), dim=1)
    return finish(policy.action_net(latent)), next_state


def _normalized(head: Any, normalizer: Any) -> Any:
    """``head`` behind VecNormalize's observation normalization (its current statistics)."""
    import torch

    mean = torch.as_tensor(normalizer.obs_rms.mean, dtype=torch.float32)
    std = torch.sqrt(torch.as_tensor(normalizer.obs_rms.var, dtype=torch.float32)
                     + normalizer.epsilon)  # fmt: skip
    clip = float(normalizer.clip_obs)
    return _head(head, lambda obs, *state: head(torch.clamp((obs - mean) / std, -clip, clip),
                                                 *state))  # fmt: skip


def _head_module() -> type:
    import torch

    class Head(torch.nn.Module):
        def __init__(self, policy: Any, fn: Callable[[Any], Any]) -> None:
            super().__init__()
            self.policy = policy
            self.fn = fn

        def forward(self, obs: Any, *state: Any) -> Any:  # state: recurrent heads only
            return self.fn(obs, *state)

    return Head


def _head(policy: Any, fn: Callable[[Any], Any]) -> Any:
    return _head_module()(policy, fn).eval()


def _tag_onnx(path: Path, source: str) -> None:
    """Record the convention and the source in the ONNX file's metadata."""
    import onnx

    model = onnx.load(str(path))
    for key, value in {"rlbench.policy_format": "1", "rlbench.source": source}.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.save(model, str(path))
