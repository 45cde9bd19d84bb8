"""The :class:`Policy` protocol, policy identities, sidecar metadata and the simple adapters.

A policy maps an observation (and the step's ``info``) to an action. It is reset with a
seed at the start of every episode so that stochastic policies are reproducible. Every
adapter has an ``identity`` (:class:`PolicyIdentity`): what it is, where it came from, the
SHA-256 of its artifact, and the seeds and budget it was trained with.

Sidecar metadata
----------------
An artifact ``PATH`` (``policy.zip``, ``policy.onnx``) may have a JSON file next to it named
``PATH.meta.json`` (e.g. ``policy.onnx.meta.json``), validated by :class:`PolicyMetadata`::

    {
      "schema_version": 1,
      "name": "ppo-cartpole",            // optional, defaults to the file's stem
      "algo": "PPO",                     // optional, SB3 algorithm (zip files only)
      "env_id": "rlbench/CartPole-v1",   // optional
      "train_seeds": [0, 1, 2],          // seeds used to train (non-negative integers)
      "tuning_seeds": [100, 101],        // seeds used to tune hyperparameters
      "training_budget_steps": 100000,   // optional, environment steps of training
      "wrappers": [                      // the suite's wrappers the policy was trained through,
        {"name": "rlbench/AdmissibleActions-v1", "kwargs": {"max_actions": 32}},
        {"name": "rlbench/HashedBagOfWords-v0", "kwargs": {}}
      ],                                 // innermost first, on top of gym.make(env_id)
      "extra": {"notes": "anything JSON"}
    }

The harness rebuilds ``wrappers`` on the card's environment before the policy acts, by their
versioned names only (:data:`~rlbench_suite.core.wrapper_names.WRAPPERS`; a file can name no
other code), and records them in the result's policy identity.

Unknown keys are refused, so a misspelt key is an error rather than silently ignored.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal, Protocol, runtime_checkable

import gymnasium as gym
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rlbench_suite.core.cards import WrapperRef
from rlbench_suite.wrappers.masks import get_action_mask


@runtime_checkable
class Policy(Protocol):
    """Anything with ``reset(seed)`` and ``act(observation, info) -> action``."""

    def reset(self, seed: int | None = None) -> None: ...

    def act(self, observation: Any, info: dict[str, Any]) -> Any: ...


POLICY_SCHEMES = ("random", "sb3", "onnx", "module", "baseline")
"""The schemes of ``--policy`` strings (:func:`~rlbench_suite.policies.make_policy`)."""
POLICY_SPECS = (
    "random",
    "sb3:PATH",
    "onnx:PATH",
    "module:package.module:attr (or package.module:attr)",
    "baseline:NAME",
)
"""The accepted ``--policy`` strings, as error messages and help texts list them."""
POLICY_SPECS_TEXT = ", ".join(POLICY_SPECS)

PolicyKind = Literal["random", "callable", "sb3", "onnx", "module", "baseline", "joint"]
Seed = Annotated[int, Field(strict=True, ge=0)]


class PolicyIdentity(BaseModel):
    """What a policy is: recorded in every result next to its scores."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    kind: PolicyKind
    spec: str | None = None
    """The ``--policy`` string it was made from, if any."""
    artifact_sha256: str | None = None
    """SHA-256 of the ``.zip``/``.onnx`` file; None for code-defined policies."""
    train_seeds: list[int] = Field(default_factory=list)
    tuning_seeds: list[int] = Field(default_factory=list)
    training_budget_steps: int | None = None
    wrappers: list[WrapperRef] = Field(default_factory=list)
    """The suite's wrappers the policy acts through, innermost first (see the module doc)."""
    extra: dict[str, Any] = Field(default_factory=dict)


class PolicyMetadata(BaseModel):
    """The sidecar ``<artifact>.meta.json`` (format in the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    name: str | None = None
    algo: str | None = None
    env_id: str | None = None
    train_seeds: list[Seed] = Field(default_factory=list)
    tuning_seeds: list[Seed] = Field(default_factory=list)
    training_budget_steps: Annotated[int, Field(strict=True, ge=0)] | None = None
    wrappers: list[WrapperRef] = Field(default_factory=list)
    extra: dict[str, Any] = Field(default_factory=dict)


class PolicyMetadataError(ValueError):
    """A sidecar metadata file that is not valid JSON or does not match :class:`PolicyMetadata`."""


def metadata_path(artifact: str | Path) -> Path:
    """The sidecar path of ``artifact``: ``<artifact>.meta.json``."""
    artifact = Path(artifact)
    return artifact.with_name(artifact.name + ".meta.json")


def load_metadata(artifact: str | Path) -> PolicyMetadata | None:
    """Read ``<artifact>.meta.json``; None if there is none, :class:`PolicyMetadataError` if bad."""
    path = metadata_path(artifact)
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise PolicyMetadataError(f"policy metadata {path} is not valid JSON: {exc}") from None
    try:
        return PolicyMetadata.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"field {'.'.join(map(str, e['loc'])) or '<root>'!r}: {e['msg']}"
            + (f" (got {e['input']!r})" if e["type"] != "missing" else "")
            for e in exc.errors()
        )
        accepted = ", ".join(PolicyMetadata.model_fields)
        raise PolicyMetadataError(
            f"malformed policy metadata {path}: {problems}; accepted fields: {accepted}"
        ) from None


def write_metadata(artifact: str | Path, metadata: PolicyMetadata) -> Path:
    """Write ``<artifact>.meta.json`` atomically (a temporary file renamed into place)."""
    path = metadata_path(artifact)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(metadata.model_dump_json(indent=2, exclude_defaults=True) + "\n")
    tmp.replace(path)
    return path


def file_sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def artifact_identity(
    path: Path, kind: PolicyKind, metadata: PolicyMetadata | None, **extra: Any
) -> PolicyIdentity:
    """The identity of a policy loaded from the file ``path`` with sidecar ``metadata``."""
    meta = metadata or PolicyMetadata()
    return PolicyIdentity(
        name=meta.name or path.stem,
        kind=kind,
        artifact_sha256=file_sha256(path),
        train_seeds=list(meta.train_seeds),
        tuning_seeds=list(meta.tuning_seeds),
        training_budget_steps=meta.training_budget_steps,
        wrappers=list(meta.wrappers),
        extra={**({"env_id": meta.env_id} if meta.env_id else {}), **extra, **meta.extra},
    )


def identity_of(policy: Any) -> PolicyIdentity:
    """``policy.identity`` if it has one, else a ``callable`` identity named after its type."""
    identity = getattr(policy, "identity", None)
    if isinstance(identity, PolicyIdentity):
        return identity
    cls = type(policy)
    return PolicyIdentity(name=cls.__qualname__, kind="callable", extra={"module": cls.__module__})


class RandomPolicy:
    """Uniformly random actions from ``action_space``, restricted to the action mask if any."""

    def __init__(self, action_space: gym.Space, seed: int | None = None) -> None:
        self.action_space = action_space
        self.action_space.seed(seed)
        self.identity = PolicyIdentity(
            name="random", kind="random", extra={"action_space": repr(action_space)}
        )

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.action_space.seed(seed)

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        mask = get_action_mask(observation, info)
        if mask is None:
            return self.action_space.sample()
        return self.action_space.sample(mask=mask)


class CallablePolicy:
    """Adapts ``fn(observation, info) -> action`` (or ``fn(observation)``) to :class:`Policy`.

    ``reset(seed)`` calls ``fn.reset(seed)`` if ``fn`` has one.
    """

    def __init__(self, fn: Callable[..., Any], *, takes_info: bool = True) -> None:
        self.fn = fn
        self.takes_info = takes_info
        name = getattr(fn, "__qualname__", None) or type(fn).__qualname__
        module = getattr(fn, "__module__", None) or type(fn).__module__
        self.identity = PolicyIdentity(name=name, kind="callable", extra={"module": module})

    def reset(self, seed: int | None = None) -> None:
        reset = getattr(self.fn, "reset", None)
        if callable(reset):
            reset(seed)

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        return self.fn(observation, info) if self.takes_info else self.fn(observation)


def as_policy(obj: Policy | Callable[..., Any]) -> Policy:
    """Return ``obj`` if it already is a :class:`Policy`, else wrap a callable.

    A callable taking one positional argument gets ``fn(observation)``; one taking two (or
    ``*args``) gets ``fn(observation, info)``.
    """
    if isinstance(obj, Policy) and not inspect.isclass(obj):
        return obj
    if callable(obj):
        return CallablePolicy(obj, takes_info=_positional_arity(obj) != 1)
    raise TypeError(
        f"expected a Policy (reset(seed), act(observation, info)) or a callable, got {type(obj)!r}"
    )


def _positional_arity(fn: Callable[..., Any]) -> int | None:
    """How many positional arguments ``fn`` takes (None if unbounded or unknown)."""
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters):
        return None
    return sum(p.kind in kinds for p in parameters)


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
