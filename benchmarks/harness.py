"""The benchmark registry and the interleaved measurement.

A benchmark is a function decorated with :func:`benchmark` that returns :class:`Case`
objects: a few :class:`Variant` workloads and the :class:`Comparison` rows to report.
:func:`measure` runs every variant of a case in rounds (A, B, C, B, C, A, ...; the starting
variant rotates), so machine noise hits all variants alike, and keeps each round's time per
unit of work. :func:`compare` turns those times into table rows (medians over rounds).
"""

from __future__ import annotations

import gc
import importlib
import pkgutil
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol


class Workload(Protocol):
    """Does ``n`` units of work per call (e.g. ``n`` environment steps).

    A workload whose work cannot be cut to exactly ``n`` units (``n`` whole episodes, of
    varying length, when the unit is steps) returns how many units it did; the time is
    divided by that instead of ``n``.
    """

    def __call__(self, n: int) -> int | Timed | None: ...


@dataclass(frozen=True)
class Timed:
    """What a workload returns when it measures its own time: ``units`` done in ``seconds``.

    For work whose cost is not the whole call, e.g. a training run timed to the moment it
    reached a goal, leaving out the evaluations that found that moment.
    """

    units: int
    seconds: float


CLOCKS: dict[str, Callable[[], int]] = {"cpu": time.thread_time_ns, "wall": time.perf_counter_ns}


@dataclass(frozen=True)
class Settings:
    """How to measure: rounds per case, a scale on each case's work per round, the clock.

    ``clock="cpu"`` (this thread's CPU time) leaves out time the thread waits while other
    processes run, which a shared machine has plenty of; ``"wall"`` is elapsed time.
    """

    rounds: int = 100
    scale: float = 1.0
    warmup_fraction: float = 0.2
    clock: str = "cpu"
    quick: bool = False

    def __post_init__(self) -> None:
        if self.clock not in CLOCKS:
            raise ValueError(f"unknown clock {self.clock!r}; accepted: {', '.join(CLOCKS)}")

    @classmethod
    def for_mode(cls, quick: bool, clock: str = "cpu") -> Settings:
        if quick:
            return cls(rounds=6, scale=0.2, clock=clock, quick=True)
        return cls(clock=clock)


@dataclass(frozen=True)
class Variant:
    """One thing to time: ``setup()`` builds a fresh :class:`Workload` (not timed)."""

    name: str
    setup: Callable[[], Workload]


@dataclass(frozen=True)
class Comparison:
    """A table row: subject's cost over peer's cost; ``goal`` is the highest acceptable ratio,
    or with ``at_least`` the lowest (e.g. a speed-up: the slow variant's cost over the fast one's).
    """

    subject: str
    peer: str
    goal: float | None = None
    at_least: bool = False


@dataclass(frozen=True)
class Case:
    """Variants measured together in one interleaved run, and the rows they give.

    ``rounds`` and ``clock``, where set, override the settings' for this case: for cases
    whose chunks take seconds (fewer rounds) or whose work runs outside this thread, e.g.
    in worker processes (``clock="wall"``). ``warmup=False`` skips the warm-up call (for
    workloads where one call is a whole run, e.g. one training seed).
    """

    env: str
    variants: list[Variant]
    comparisons: list[Comparison]
    work_per_round: int
    unit: str = "steps"
    rounds: int | None = None
    clock: str | None = None
    warmup: bool = True

    def __post_init__(self) -> None:
        if self.clock is not None and self.clock not in CLOCKS:
            raise ValueError(f"case {self.env!r}: unknown clock {self.clock!r}")
        if self.rounds is not None and self.rounds < 1:
            raise ValueError(f"case {self.env!r}: rounds must be at least 1")
        names = [v.name for v in self.variants]
        if len(set(names)) != len(names):
            raise ValueError(f"case {self.env!r}: variant names repeat: {names}")
        for c in self.comparisons:
            for name in (c.subject, c.peer):
                if name not in names:
                    raise ValueError(f"case {self.env!r}: unknown variant {name!r}; have {names}")


@dataclass
class Row:
    """One measured comparison, as printed and written to JSON."""

    benchmark: str
    env: str
    subject: str
    peer: str
    unit: str
    subject_rate: float  # units per second, from the median time per unit
    peer_rate: float
    ratio: float  # median subject time / median peer time; > 1 means the subject is slower
    ratio_p25: float  # quartiles of the per-round ratios (a noise indicator; inclusive)
    ratio_p75: float
    goal: float | None
    met: bool | None
    rounds: int
    work_per_round: int
    subject_detail: dict[str, Any] = field(default_factory=dict)
    peer_detail: dict[str, Any] = field(default_factory=dict)
    clock: str = "cpu"  # the clock this row was measured with
    goal_at_least: bool = False  # the goal is a lower bound (a speed-up), not an upper one


Benchmark = Callable[[Settings], list[Case]]
BENCHMARKS: dict[str, Benchmark] = {}


def benchmark(name: str) -> Callable[[Benchmark], Benchmark]:
    """Register a benchmark function under ``name`` (shown in the table's first column)."""

    def register(fn: Benchmark) -> Benchmark:
        if name in BENCHMARKS:
            raise ValueError(f"benchmark {name!r} is already registered")
        BENCHMARKS[name] = fn
        return fn

    return register


def discover() -> dict[str, Benchmark]:
    """Import every ``benchmarks/bench_*.py`` module and return the registry."""
    import benchmarks

    for info in pkgutil.iter_modules(benchmarks.__path__):
        if info.name.startswith("bench_"):
            importlib.import_module(f"benchmarks.{info.name}")
    return BENCHMARKS


def measure(
    case: Case, settings: Settings, advance: Callable[[], None] = lambda: None
) -> tuple[dict[str, list[float]], dict[str, dict[str, Any]]]:
    """Time every variant of ``case`` in interleaved rounds.

    Returns (seconds per unit for each round, by variant) and (details of each workload:
    ``describe()`` as ``"workload"`` and the items of ``stats()``, where it has them).
    ``advance`` is called after each timed chunk (for progress bars).
    """
    n = max(1, round(case.work_per_round * settings.scale))
    workloads: dict[str, Workload] = {}
    try:
        for v in case.variants:
            workloads[v.name] = v.setup()
        warmup = max(1, round(n * settings.warmup_fraction))
        for work in workloads.values() if case.warmup else ():
            work(warmup)
        times: dict[str, list[float]] = {name: [] for name in workloads}
        names = list(workloads)
        clock = CLOCKS[case.clock or settings.clock]
        for r in range(case.rounds or settings.rounds):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                gc.collect()  # earlier garbage is not billed to this chunk
                start = clock()
                done = workloads[name](n)
                elapsed = clock() - start
                if isinstance(done, Timed):  # the workload timed itself
                    elapsed, done = round(done.seconds * 1e9), done.units
                units = n if done is None else done
                if units <= 0:
                    raise RuntimeError(f"case {case.env!r}: {name!r} reported {units} units")
                times[name].append(elapsed / 1e9 / units)
                advance()
        return times, {name: _details(work) for name, work in workloads.items()}
    finally:
        for work in workloads.values():
            close = getattr(work, "close", None)
            if close is not None:
                close()


def _details(work: Workload) -> dict[str, Any]:
    describe, stats = getattr(work, "describe", None), getattr(work, "stats", None)
    return {
        **({"workload": str(describe())} if describe else {}),
        **(dict(stats()) if stats else {}),
    }


def compare(
    bench: str,
    case: Case,
    settings: Settings,
    times: dict[str, list[float]],
    details: dict[str, dict[str, Any]],
) -> list[Row]:
    """One :class:`Row` per comparison of ``case`` from the per-round times of :func:`measure`."""
    n = max(1, round(case.work_per_round * settings.scale))
    rows = []
    for c in case.comparisons:
        subject, peer = statistics.median(times[c.subject]), statistics.median(times[c.peer])
        ratio = subject / peer
        paired = [s / p for s, p in zip(times[c.subject], times[c.peer], strict=True)]
        # inclusive: within the rounds' range (the default extrapolates past it with few
        # rounds, below 0 where two rounds differ much)
        q = (statistics.quantiles(paired, n=4, method="inclusive") if len(paired) > 1
             else [paired[0]] * 3)
        rows.append(
            Row(
                benchmark=bench,
                env=case.env,
                subject=c.subject,
                peer=c.peer,
                unit=case.unit,
                subject_rate=1.0 / subject,
                peer_rate=1.0 / peer,
                ratio=ratio,
                ratio_p25=q[0],
                ratio_p75=q[2],
                goal=c.goal,
                goal_at_least=c.at_least,
                met=_met(ratio, c),
                rounds=case.rounds or settings.rounds,
                work_per_round=n,
                subject_detail=details.get(c.subject, {}),
                peer_detail=details.get(c.peer, {}),
                clock=case.clock or settings.clock,
            )
        )
    return rows


def _met(ratio: float, comparison: Comparison) -> bool | None:
    if comparison.goal is None:
        return None
    return ratio >= comparison.goal if comparison.at_least else ratio <= comparison.goal
