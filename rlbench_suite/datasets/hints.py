"""The commands a dataset message tells its reader to run, said one way everywhere.

A printed command acts on the cache folder the reader named (``--cache``, or ``root`` in the
Python API) where that is not the default one; and a build from source of data a torch training
run gave carries the CPU caveat (:func:`other_cpu_note`): on another kind of processor the run
may give other bits, and the build is then refused after training.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from rlbench_suite.core.dataset_cards import DatasetCard
from rlbench_suite.core.provenance import cpu_platform
from rlbench_suite.paths import datasets_dir


def datasets_command(args: str, root: Path | None = None) -> str:
    """```rlbench datasets ARGS``` in backticks, with ``--cache ROOT`` where ``root`` is not
    the default cache, so that the command acts on the same cache."""
    tail = ""
    if root is not None and Path(root).absolute() != datasets_dir().absolute():
        tail = f" --cache {shlex.quote(str(root))}"
    return f"`rlbench datasets {args}{tail}`"


def cpu_dependence(card: DatasetCard) -> str | None:
    """Why ``card``'s bits depend on the processor, where they are known to (a training run's
    data: torch's kernels sum in other orders on other processors); None otherwise (the envs
    and policies of the other data give the same bits on any CPU: ``tests/cpu_kernels.py``)."""
    if card.source.training is not None:
        return "a torch training run's data, whose bits depend on the CPU too"
    return None


def other_cpu_note(card: DatasetCard) -> str | None:
    """Before a build: a line saying it may not give the card's hash, when the card's data
    depends on the processor and records another CPU than this one (None otherwise)."""
    why = cpu_dependence(card)
    if why is None or card.build.cpu in (None, cpu_platform()):
        return None
    after = "after training" if card.source.training is not None else "then"
    return (f"note: {card.id} is {why}: built on {card.build.cpu}; this machine is "
            f"{cpu_platform()}, where it may give other bits, and the build is refused {after} "
            "(a mirror that has the files serves them: --remote URL)")  # fmt: skip


def build_hint(card: DatasetCard, root: Path | None = None, then: str = "") -> str:
    """The command that builds ``card``'s data from source into the cache, followed by ``then``
    (what it does), and by the CPU caveat where the card's data depends on the processor and
    was built on another one."""
    said = datasets_command(f"download {card.id} --build", root) + then
    if other_cpu_note(card) is None:
        return said
    return (f"{said}; but its data comes from a torch training run on {card.build.cpu}, and on "
            f"this machine ({cpu_platform()}) the build may give other bits and is then refused "
            "after training: a mirror that has the files serves them (`--remote URL`)")
