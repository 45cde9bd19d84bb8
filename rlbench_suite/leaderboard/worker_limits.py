"""What one verification may use (CPU time, wall time, memory), and how ``rlbench leaderboard
verify`` is told: light (no database, no harness), so the CLI shows these defaults."""

from __future__ import annotations

from dataclasses import dataclass

GIB = 1024**3


@dataclass(frozen=True)
class WorkerLimits:
    """What one verification may use."""

    cpu_s: int = 600
    wall_s: float = 900.0
    memory_bytes: int = 4 * GIB

    @property
    def memory_gb(self) -> float:
        return self.memory_bytes / GIB

    @classmethod
    def from_options(cls, cpu_s: int, wall_s: float, memory_gb: float) -> WorkerLimits:
        """The limits the CLI's ``--cpu-s``, ``--wall-s`` and ``--memory-gb`` name."""
        return cls(cpu_s=cpu_s, wall_s=wall_s, memory_bytes=int(memory_gb * GIB))

    def options(self) -> list[str]:
        """The same as ``rlbench leaderboard verify`` options (read back exactly)."""
        return ["--cpu-s", str(self.cpu_s), "--wall-s", repr(self.wall_s),
                "--memory-gb", repr(self.memory_gb)]  # fmt: skip
