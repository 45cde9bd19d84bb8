"""Rollouts under other CPU kernels: data must rebuild bit for bit on other machines.

Two libraries pick their kernels per processor. numpy's ``@`` (and ``linalg``) call OpenBLAS
(SkylakeX kernels on an Intel Xeon, Haswell on an AMD EPYC), which round differently in the last
bit: an env whose dynamics, rewards or experts went through BLAS emitted other data on another
CPU. numpy's own element-wise functions (``exp``, ``sin``, ...) have code paths per instruction
set (AVX2, AVX-512) as well. ``OPENBLAS_CORETYPE`` and ``NPY_DISABLE_CPU_FEATURES`` make this
machine use other kernels, which is how a test sees a dependence; the AVX-512 paths of a CPU
that has them cannot be run on one that does not.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import numpy as np
import pytest

_ROLLOUT_DIGEST = """
import hashlib, gymnasium as gym, numpy as np, rlbench_suite
from rlbench_suite.policies import make_policy
digest = hashlib.sha256()
for env_id, kwargs, spec in {rollouts!r}:
    env = gym.make(env_id, **kwargs)
    policy = make_policy(spec, env)
    for seed in (0, 1):
        obs, info = env.reset(seed=seed)
        policy.reset(seed)
        for _ in range({steps}):
            obs, reward, terminated, truncated, info = env.step(policy.act(obs, info))
            digest.update(np.asarray(obs, np.float64).tobytes() + np.float64(reward).tobytes())
            if terminated or truncated:
                break
    env.close()
print(digest.hexdigest())
"""


def digests_under_cpu_kernels(
    rollouts: list[tuple[str, dict, str]], steps: int = 100
) -> set[str]:
    """The digests of two seeds' rollouts of each ``(env id, make kwargs, policy spec)``
    (observations and rewards) played three ways: with this CPU's kernels, with the SSE-only
    OpenBLAS kernels any x86-64 runs, and with numpy's baseline code paths (its per-CPU ones
    off); one digest when nothing depends on them. Skips where numpy does not use x86-64
    OpenBLAS (the variables would change nothing)."""
    from numpy._core import _multiarray_umath

    blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]["name"]
    if "openblas" not in blas.lower() or platform.machine() != "x86_64":
        pytest.skip(f"OPENBLAS_CORETYPE picks x86-64 OpenBLAS kernels; numpy here uses {blas} "
                    f"on {platform.machine()}")  # fmt: skip
    code = _ROLLOUT_DIGEST.format(rollouts=rollouts, steps=steps)
    settings = [{}, {"OPENBLAS_CORETYPE": "Prescott"},
                {"NPY_DISABLE_CPU_FEATURES": " ".join(_multiarray_umath.__cpu_dispatch__)}]
    digests = set()
    for setting in settings:
        env = {k: v for k, v in os.environ.items()
               if k not in ("OPENBLAS_CORETYPE", "NPY_DISABLE_CPU_FEATURES")}  # fmt: skip
        done = subprocess.run([sys.executable, "-c", code], env={**env, **setting},
                              capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
        assert done.returncode == 0, done.stderr
        digests.add(done.stdout.strip())
    return digests
