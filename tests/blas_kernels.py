"""Rollouts under other BLAS kernels: data must rebuild bit for bit on other machines.

numpy's ``@`` (and ``linalg``) call OpenBLAS, which picks its kernels per processor (SkylakeX
on an Intel Xeon, Haswell on an AMD EPYC); they round differently in the last bit, so an env
whose dynamics, rewards or experts go through BLAS emits other data on another CPU.
``OPENBLAS_CORETYPE`` forces another kernel set on this machine, which is how a test sees it.
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


def digests_under_blas_kernels(rollouts: list[tuple[str, dict, str]], steps: int = 100) -> set[str]:
    """The digests of two seeds' rollouts of each ``(env id, make kwargs, policy spec)``
    (observations and rewards), played with this CPU's OpenBLAS kernels and with the SSE-only
    ones any x86-64 runs; one digest when nothing depends on the kernels. Skips where numpy
    does not use x86-64 OpenBLAS (the variable would change nothing)."""
    blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]["name"]
    if "openblas" not in blas.lower() or platform.machine() != "x86_64":
        pytest.skip(f"OPENBLAS_CORETYPE picks x86-64 OpenBLAS kernels; numpy here uses {blas} "
                    f"on {platform.machine()}")  # fmt: skip
    code = _ROLLOUT_DIGEST.format(rollouts=rollouts, steps=steps)
    digests = set()
    for coretype in (None, "Prescott"):
        env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
        if coretype is not None:
            env["OPENBLAS_CORETYPE"] = coretype
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                              text=True, timeout=300, check=False)  # fmt: skip
        assert done.returncode == 0, done.stderr
        digests.add(done.stdout.strip())
    return digests
