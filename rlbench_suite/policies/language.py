"""A language-model agent for the text games: prompt in, command out, retries on bad replies.

:class:`LanguageModelPolicy` keeps the recent history of the episode (observations and its
own commands), builds a standard prompt from it (:func:`build_prompt`), and calls a
user-supplied ``generate(prompt) -> str``. The reply is parsed for a command
(:func:`parse_command`: the text after ``Action:``, else the first non-empty line); a reply
that does not parse, is too long, or names a command outside ``info["admissible_commands"]``
is retried with a note saying what was wrong, up to ``max_retries`` times, then the policy
falls back to the first admissible command (or ``fallback``). Nothing here calls a
network: ``generate`` is whatever the user passes (the tests use a scripted fake).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from rlbench_suite.policies.core import PolicyIdentity

SYSTEM_PROMPT = (
    "You are playing a text game. Read the history and the latest observation, then reply "
    "with exactly one command on a line of its own, as 'Action: <command>'."
)
_ACTION = re.compile(r"action\s*:\s*(.+)", re.IGNORECASE)


def build_prompt(
    history: Sequence[tuple[str, str]],
    admissible: Sequence[str] | None = None,
    system: str = SYSTEM_PROMPT,
) -> str:
    """The prompt: instructions, the history (``("observation"|"action", text)``), choices."""
    lines = [system, ""]
    for role, text in history:
        lines.append(f"{'Observation' if role == 'observation' else 'Action'}: {text}")
    if admissible:
        lines += ["", "Admissible commands: " + ", ".join(admissible)]
    lines += ["", "Action:"]
    return "\n".join(lines)


def parse_command(
    reply: str, admissible: Sequence[str] | None = None, max_length: int = 256
) -> tuple[str | None, str]:
    """``(command, "")`` from a model's reply, or ``(None, why it was refused)``."""
    if not isinstance(reply, str) or not reply.strip():
        return None, "the reply was empty"
    match = _ACTION.search(reply)
    text = match.group(1) if match else next(line for line in reply.splitlines() if line.strip())
    command = " ".join(text.strip().strip("\"'`.").split())
    if not command:
        return None, "no command was found after 'Action:'"
    if len(command) > max_length:
        return None, f"the command was longer than {max_length} characters"
    if admissible:
        lookup = {c.lower(): c for c in admissible}
        if command.lower() not in lookup:
            return None, f"'{command}' is not one of the admissible commands"
        command = lookup[command.lower()]
    return command, ""


class LanguageModelPolicy:
    """A :class:`~rlbench_suite.policies.Policy` that asks ``generate`` for each command.

    Args:
        generate: ``prompt -> reply``, e.g. a call to a local model or an API client.
        max_history: how many of the latest observation/command pairs the prompt shows.
        max_retries: extra attempts after a reply that does not parse.
        fallback: the command used when every attempt failed and nothing is admissible.
        name: recorded in the policy's identity.
    """

    def __init__(
        self,
        generate: Callable[[str], str],
        *,
        max_history: int = 8,
        max_retries: int = 2,
        fallback: str = "look",
        system: str = SYSTEM_PROMPT,
        name: str = "language-model",
    ) -> None:
        if not callable(generate):
            raise TypeError(f"generate must be a callable prompt -> str, got {generate!r}")
        if max_history < 1 or max_retries < 0:
            raise ValueError("max_history must be at least 1 and max_retries at least 0")
        self.generate, self.system, self.fallback = generate, system, fallback
        self.max_history, self.max_retries = max_history, max_retries
        self.history: list[tuple[str, str]] = []
        self.failed_replies = 0
        self.identity = PolicyIdentity(name=name, kind="callable")

    def reset(self, seed: int | None = None) -> None:
        self.history = []

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        self.history.append(("observation", str(observation)))
        admissible = info.get("admissible_commands")
        prompt = build_prompt(self.history[-2 * self.max_history :], admissible, self.system)
        command, why = None, ""
        for attempt in range(self.max_retries + 1):
            asked = prompt if attempt == 0 else f"{prompt}\n(Your last reply was refused: {why}.)"
            command, why = parse_command(self.generate(asked), admissible)
            if command is not None:
                break
            self.failed_replies += 1
        if command is None:
            command = admissible[0] if admissible else self.fallback
        self.history.append(("action", command))
        return command
