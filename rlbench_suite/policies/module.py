"""``module:attr`` targets as policies: :class:`ModulePolicy`."""

from __future__ import annotations

import difflib
import importlib
import inspect
from typing import Any

from rlbench_suite.policies.core import Policy, as_policy, env_spaces, identity_of
from rlbench_suite.policies.moved_modules import MOVED_MODULES


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
        module_name = MOVED_MODULES.get(module_name, module_name)  # specs from before a move
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
