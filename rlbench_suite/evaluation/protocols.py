"""The protocols the harness runs: a card's default, checked against its registration.

The protocol schema itself is a contract (:mod:`rlbench_suite.core.protocol`); this module
adds what needs the registered environment: its spec hash.
"""

from __future__ import annotations

from typing import Any

from rlbench_suite.core.cards import EnvCard
from rlbench_suite.core.offline_cards import resolve_card
from rlbench_suite.core.protocol import EvalProtocol
from rlbench_suite.evaluation.workers import EvaluationError
from rlbench_suite.registry import spec_hash, wrapper_specs


class ProtocolMismatchError(EvaluationError):
    """A protocol that does not describe the environment as it is registered now."""


def default_protocol(
    env: str | EnvCard,
    episodes: int | None = None,
    seeds: list[int] | None = None,
    deterministic: bool | None = None,
    reset_options: dict[str, Any] | None = None,
) -> EvalProtocol:
    """The card's default protocol (see :meth:`EvalProtocol.for_card`) for its registered spec."""
    card = resolve_card(env)
    return EvalProtocol.for_card(card, spec_hash(card), episodes, seeds, deterministic,
                                 reset_options)  # fmt: skip


def current_protocol(card: EnvCard, protocol: EvalProtocol) -> EvalProtocol:
    """``protocol`` as the harness runs it on ``card``'s registered environment.

    A version 2 protocol must name the registered spec hash; a version 1 protocol (from a
    result written before version 2) must restate the registered wrapper stack and step
    limit, and comes back as the equivalent version 2 protocol. Anything else is a
    :class:`ProtocolMismatchError`: the harness evaluates the registered environment, so
    only a protocol's episodes, seeds, determinism and reset options can be chosen.
    """
    if protocol.env_id != card.id:
        raise ProtocolMismatchError(f"the protocol is for {protocol.env_id}, not {card.id}")
    registered = spec_hash(card)
    restated = protocol.wrappers is not None or protocol.max_episode_steps is not None
    if protocol.version == 1 or restated:
        stack = [{"name": w.name, "kwargs": w.kwargs} for w in wrapper_specs(card)]
        if (protocol.wrappers, protocol.max_episode_steps) != (stack, card.max_episode_steps):
            raise ProtocolMismatchError(
                f"the protocol's wrapper stack or step limit differs from {card.id}'s "
                "registered ones; the harness evaluates the registered environment, so only "
                "the episodes, seeds, determinism and reset options of a protocol can be changed"
            )
    if protocol.version >= 2 and protocol.spec_hash != registered:
        raise ProtocolMismatchError(
            f"the protocol names spec hash {str(protocol.spec_hash)[:12]} but {card.id} is "
            f"registered with {registered[:12]}: the environment changed since the protocol "
            "was written"
        )
    if protocol.version >= 2 and not restated:
        return protocol
    return EvalProtocol.for_card(card, registered, seeds=protocol.seeds,
                                 deterministic=protocol.deterministic,
                                 reset_options=protocol.reset_options)  # fmt: skip
