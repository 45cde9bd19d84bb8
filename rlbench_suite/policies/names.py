"""Short, distinct display names for policies, for every table and figure that names them.

A ``--policy`` string may carry a label, ``LABEL=SPEC`` (``EasyBot=module:pkg.duel:EasyBot``);
the label is its name. Otherwise the name is the shortest telling part of the spec:

- ``random`` -> ``random``; ``baseline:NAME`` -> ``NAME``;
- ``sb3:PATH`` / ``onnx:PATH`` -> the file's stem (``runs/ppo/policy.onnx`` -> ``policy``);
- ``module:pkg.mod:Attr`` (or ``pkg.mod:Attr``) -> ``Attr``.

:func:`display_names` names several policies at once and keeps the names distinct: where two
would print alike it gives them more of their spec (``duel:EasyBot``, ``ppo/policy``), and
where even the whole specs are alike it numbers them (``random #2``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from pathlib import PurePath

_LABEL = re.compile(r"^(?P<label>[A-Za-z0-9_][\w.\-]*)=(?P<spec>\S.*)$")


def split_label(text: str) -> tuple[str | None, str]:
    """``(label, spec)`` of a ``--policy`` string: ``"A=random"`` -> ``("A", "random")``.

    A label is letters, digits, ``_``, ``.`` and ``-`` before the first ``=`` (so a spec's
    own ``:`` or ``/`` is never taken for one); without it the label is None.
    """
    match = _LABEL.match(text.strip())
    if match is None:
        return None, text.strip()
    return match["label"], match["spec"].strip()


def _forms(spec: str) -> list[str]:
    """The ways to name ``spec``, shortest first; the last is the spec itself."""
    text = spec.strip()
    scheme, sep, rest = text.partition(":")
    forms: list[str] = []
    if scheme == "baseline" and rest:
        forms = [rest]
    elif scheme in ("sb3", "onnx") and rest:
        parts = PurePath(rest).with_suffix("").parts
        forms = ["/".join(parts[-k:]) for k in range(1, len(parts) + 1)]
    elif sep and rest:
        module, has_attr, attr = (rest if scheme == "module" else text).partition(":")
        if has_attr and attr:
            modules = module.split(".")
            forms = [attr] + [
                f"{'.'.join(modules[-k:])}:{attr}" for k in range(1, len(modules) + 1)
            ]
    return list(dict.fromkeys([*forms, text]))


def display_names(policies: Sequence[str]) -> list[str]:
    """One short name per ``--policy`` string (labels honoured), all distinct.

    Raises ValueError if two policies are given the same label.
    """
    labels = [split_label(text)[0] for text in policies]
    given = Counter(label for label in labels if label is not None)
    twice = sorted(label for label, count in given.items() if count > 1)
    if twice:
        raise ValueError(f"label {twice[0]!r} is given to more than one policy")
    forms = [
        [label] if label else _forms(split_label(text)[1])
        for text, label in zip(policies, labels, strict=True)
    ]
    level = [0] * len(policies)
    while True:
        names = [f[min(k, len(f) - 1)] for f, k in zip(forms, level, strict=True)]
        counts = Counter(names)
        grow = [
            i
            for i, name in enumerate(names)
            if counts[name] > 1 and labels[i] is None and level[i] < len(forms[i]) - 1
        ]
        if not grow:
            break
        for i in grow:
            level[i] += 1
    seen = Counter(name for name, label in zip(names, labels, strict=True) if label)
    for i, name in enumerate(names):
        if labels[i] is None and counts[name] > 1:
            seen[name] += 1
            names[i] = name if seen[name] == 1 else f"{name} #{seen[name]}"
    return names


def display_name(policy: str) -> str:
    """The short name of one ``--policy`` string (see :func:`display_names`)."""
    return display_names([policy])[0]
