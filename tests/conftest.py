"""Shared fixtures: a writable copy of the card folder, subprocess helpers."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# the leaderboard tests' fixtures (a PostgreSQL cluster per test process, databases, corpus)
# and the offline tests' data dir of small built datasets
pytest_plugins = ["tests.leaderboard_support", "tests.offline_support"]


@pytest.fixture(scope="session", autouse=True)
def sb3_logs_under_pytest_temp(tmp_path_factory):
    """The tests' own SB3 models (``learn_ppo`` and others) log under pytest's temp dir: SB3's
    default logger makes a ``SB3-<date-time>`` folder in the system temp dir on every
    ``learn()`` and never removes it. The suite's models log nowhere
    (``policies.sb3.without_log_folder``; ``test_train``'s resume test unsets this to see it)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SB3_LOGDIR", str(tmp_path_factory.mktemp("sb3-logs")))
        yield


@pytest.fixture(autouse=True)
def no_signal_remembered():
    """Each test starts with no Ctrl-C or SIGTERM remembered (``rlbench_suite.interrupts``):
    a signal one test sent would make another's errors read as interruptions."""
    from rlbench_suite import interrupts

    interrupts._received.clear()
    interrupts.cancel_redelivery()
    yield
    interrupts._received.clear()
    interrupts.cancel_redelivery()


@pytest.fixture
def content_copy(tmp_path: Path) -> Path:
    """A copy of the content folders; point RLBENCH_CONTENT_ROOT at it in subprocesses."""
    for name in ("envs", "datasets", "baselines", "leaderboard"):
        shutil.copytree(REPO / name, tmp_path / name)
    return tmp_path


def load_script(name: str):
    """``scripts/<name>.py`` loaded from its file as a module (registered in ``sys.modules``
    under ``<name>_script``, so its dataclasses and pickling work)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"{name}_script", REPO / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def run_python(code: str, env: dict[str, str] | None = None, cwd: Path | None = None):
    """Run ``code`` in a fresh interpreter of this venv; return the CompletedProcess."""
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )


def run_cli(*args: str, env: dict[str, str] | None = None):
    """Run the ``rlbench`` command in a fresh interpreter."""
    return subprocess.run(
        [sys.executable, "-m", "rlbench_suite.cli", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
    )


def as_a_foreground_job() -> None:
    """``preexec_fn`` for a child a test interrupts with SIGINT: Ctrl-C at its default, as in a
    terminal's foreground job. A shell starts a background job (``cmd &``, as a CI script may
    run the tests) with SIGINT ignored, every process below inherits that, and the suite's
    handler rightly leaves an ignored SIGINT ignored (``interrupts.install``): the child would
    never stop."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def learn_ppo(vector_env, steps: int = 2000):
    """Train a small SB3 PPO for ``steps`` on a Gymnasium VectorEnv (SAME_STEP autoreset)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("stable_baselines3")
    from stable_baselines3 import PPO

    from rlbench_suite.wrappers.sb3 import VectorEnvToSB3

    torch.set_num_threads(1)
    model = PPO(
        "MlpPolicy",
        VectorEnvToSB3(vector_env),
        n_steps=256,
        batch_size=128,
        n_epochs=1,
        seed=0,
        device="cpu",
    )
    model.learn(steps)
    return model


@contextlib.contextmanager
def served(folder: Path):
    """``rlbench datasets serve FOLDER`` in a subprocess on 127.0.0.1 and a free port: yields
    its base URL, stops it at the end."""
    server = subprocess.Popen(
        [sys.executable, "-m", "rlbench_suite.cli", "datasets", "serve", str(folder),
         "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        url = server.stdout.readline().split(" at ")[1].split()[0]
        assert url.startswith("http://127.0.0.1:")
        yield url
    finally:
        server.terminate()
        server.wait(timeout=10)
