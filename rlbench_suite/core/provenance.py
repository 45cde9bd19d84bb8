"""Where a result came from: package versions, git commit, machine, command line, times."""

from __future__ import annotations

import datetime as dt
import functools
import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from pydantic import BaseModel, ConfigDict

PACKAGES = (
    "rlbench-suite",
    # environments and simulators
    "gymnasium", "pettingzoo", "mpe2", "minigrid", "mujoco", "pybullet", "box2d", "pygame",
    "chess",
    # numerics, learning and policy artifacts
    "numpy", "scipy", "torch", "stable-baselines3", "sb3-contrib", "onnx", "onnxruntime",
    # data, distribution and the contracts' own libraries
    "minari", "h5py", "deflate", "ray", "pydantic",
)  # fmt: skip
"""The distributions a result can depend on, recorded (with versions) in every provenance,
printed by ``rlbench doctor`` and by the benchmarks. A test keeps it complete against the
package's declared dependencies."""


class Provenance(BaseModel):
    """Enough to re-run an evaluation and to tell why two runs might differ."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    packages: dict[str, str]
    git_commit: str | None = None
    git_dirty: bool | None = None
    python: str
    platform: str
    cpu: str
    cpu_count: int
    command: list[str]
    started: dt.datetime
    finished: dt.datetime | None = None


def git(*args: str) -> str | None:
    """Output of ``git ARGS`` in the suite's checkout, or None (no git, not a checkout)."""
    root = Path(__file__).resolve().parents[2]  # rlbench_suite/core/provenance.py -> checkout
    try:
        proc = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def cpu_model() -> str:
    """The CPU's model name (from /proc/cpuinfo on Linux)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


SIMD_LEVELS = ("avx", "avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16", "amx_tile", "asimd",
               "sve")
"""The /proc/cpuinfo flags that pick between torch's (and MKL's) CPU kernels."""


def cpu_platform() -> str:
    """The machine, CPU model and SIMD levels, e.g. ``x86_64, Intel(R) Xeon(R) Processor, avx
    avx2 fma avx512f``: what decides the bits of a torch training run once the package
    versions are fixed (its kernels take other paths, summing in other orders, on other
    processors)."""
    flags: set[str] = set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                flags = set(line.split(":", 1)[1].split())
                break
    except OSError:
        pass
    levels = " ".join(f for f in SIMD_LEVELS if f in flags) or "no SIMD flags read"
    return f"{platform.machine()}, {cpu_model()}, {levels}"


@functools.cache
def package_versions() -> dict[str, str]:
    """Versions of the installed packages that matter for results (read once per process)."""
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def program(argv0: str) -> str:
    """The program of a command as a reader would type it: ``rlbench`` for the CLI (its
    console script or ``python -m rlbench_suite.cli``), not a path on this machine."""
    path = argv0.replace("\\", "/")
    if path.rsplit("/", 1)[-1] == "rlbench" or path.endswith("rlbench_suite/cli/__main__.py"):
        return "rlbench"
    return argv0


def collect(started: dt.datetime | None = None, command: list[str] | None = None) -> Provenance:
    """The provenance of the current process (``finished`` is filled in at the end)."""
    packages = dict(package_versions())
    commit = git("rev-parse", "HEAD")
    return Provenance(
        packages=packages,
        git_commit=commit,
        git_dirty=bool(git("status", "--porcelain", "--untracked-files=no")) if commit else None,
        python=platform.python_version(),
        platform=platform.platform(),
        cpu=cpu_model(),
        cpu_count=os.cpu_count() or 1,
        command=list(command if command is not None else [program(sys.argv[0]), *sys.argv[1:]]),
        started=started or dt.datetime.now(dt.UTC),
    )
