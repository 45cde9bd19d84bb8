"""``rlbench leaderboard serve`` runs the verification worker beside uvicorn: a fresh serve and
``rlbench submit --policy`` give a verified row with no second command, and the worker stops
with the server, whether it is stopped or killed outright."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import run_cli
from tests.leaderboard_support import REPO, serve_cli, wait_until_serving

pytestmark = pytest.mark.slow


def children(pid: int) -> list[int]:
    """The child processes of ``pid`` (Linux: /proc/<pid>/task/*/children)."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not reaped, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


def gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def worker_of(server) -> int:
    found = children(server.pid)
    assert len(found) == 1, f"expected one child (the worker) of serve, found {found}"
    return found[0]


def test_serve_verifies_a_submitted_onnx_without_a_second_command(db_url, tmp_path):
    created = run_cli("leaderboard", "token", "create", "me", "--db", db_url)
    assert created.returncode == 0, created.stderr
    token = created.stdout.split()[-1]
    result = REPO / "baselines/results/CartPole-v1/ppo/seed-1/result.json"
    policy = REPO / "baselines/policies/CartPole-v1/ppo/seed-1/policy.onnx"
    with serve_cli(tmp_path, "--db", db_url, "--no-seed") as (base, server):
        worker = worker_of(server)
        done = run_cli("submit", str(result), "--policy", str(policy), "--server", base,
                       env={"RLBENCH_LEADERBOARD_TOKEN": token})  # fmt: skip
        assert done.returncode == 0, done.stderr
        status_url = done.stdout.split("queued for verification: ")[1].split()[0]
        deadline = time.monotonic() + 300
        while (job := httpx.get(status_url).json()["job"])["state"] in ("queued", "running"):
            assert time.monotonic() < deadline, f"not verified within 300 s: {job}"
            time.sleep(0.5)
        assert job["state"] == "done" and job["error"] is None, job
        rows = httpx.get(f"{base}/api/results", params={"env": "rlbench/CartPole-v1"}).json()
        # one row: the submitted result, which the worker's re-run reproduced (its evidence)
        submitted = int(done.stdout.split(f"{base}/results/")[1].split()[0])
        assert [(r["id"], r["verification"]) for r in rows] == [(submitted, "verified")]
        assert job["verifies"] == submitted and job["result"] != submitted
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=60) == 128 + signal.SIGTERM
    assert not alive(worker), "the worker outlived a stopped serve"
    output = server.stdout.read()
    assert "verification worker stopped (exit 0)" in output  # serve stopped it, cleanly
    assert token not in output


def test_killing_serve_stops_its_worker(tmp_path):
    with serve_cli(tmp_path, "--no-seed") as (_, server):
        worker = worker_of(server)
        server.kill()  # SIGKILL: serve runs no clean-up of its own
        server.wait(timeout=30)
        assert gone_within(worker, 15), "the worker outlived a killed serve"


def test_no_worker_runs_none(tmp_path):
    with serve_cli(tmp_path, "--no-seed", "--no-worker") as (_, server):
        assert children(server.pid) == []
        server.terminate()
        assert "no verification worker" in server.stdout.read()


def test_a_taken_port_is_refused_in_one_line_before_any_work(tmp_path):
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        started = time.monotonic()
        done = run_cli("leaderboard", "serve", "--port", str(port),
                       env={"RLBENCH_DATA_DIR": str(tmp_path)})  # fmt: skip
        took = time.monotonic() - started
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""  # no "serving ...", no zoo import
    assert done.stderr.strip().splitlines() == [
        f"error: cannot serve on 127.0.0.1:{port} (Address already in use); pass another "
        "--port (0: any free port)"
    ]
    assert not (tmp_path / "leaderboard").exists(), "the database was made before the refusal"
    print(f"refused in {took:.1f} s")


def test_port_0_serves_on_a_free_port_and_says_which(tmp_path):
    import re
    import subprocess
    import sys

    command = [sys.executable, "-m", "rlbench_suite.cli", "leaderboard", "serve", "--port", "0",
               "--no-seed", "--no-worker"]  # fmt: skip
    env = {**os.environ, "RLBENCH_DATA_DIR": str(tmp_path), "COLUMNS": "200"}
    server = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)  # fmt: skip
    try:
        line = server.stdout.readline()
        found = re.search(r"on http://127\.0\.0\.1:(\d+)/", line)
        assert found and found.group(1) != "0", line
        base = f"http://127.0.0.1:{found.group(1)}"
        wait_until_serving(base, server)
        assert httpx.get(f"{base}/api/envs").status_code == 200
    finally:
        server.terminate()
        server.wait(timeout=60)


def test_a_worker_stopped_mid_job_puts_the_job_back_in_the_queue(app_client, db_url):
    import json
    import os
    import subprocess
    import sys

    from rlbench_suite.leaderboard.models import VerificationJob
    from tests.leaderboard_support import make_onnx

    client, factory, alice, _ = app_client
    metadata = {"env_id": "rlbench/CartPole-v1", "method": "spinner"}
    posted = client.post(
        "/api/submissions",
        headers={"Authorization": f"Bearer {alice}"},
        files={"policy": ("spin.onnx", make_onnx(loop=True))},
        data={"metadata": json.dumps(metadata)},
    )
    assert posted.status_code == 202, posted.text
    job_id = posted.json()["job"]
    worker = subprocess.Popen(
        [sys.executable, "-m", "rlbench_suite.cli", "leaderboard", "verify", "--poll-s", "0.2"],
        env={**os.environ, "RLBENCH_LEADERBOARD_DB": db_url},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while True:  # until the job is claimed and its evaluation runs in a child process
            with factory() as session:
                state = session.get(VerificationJob, job_id).state
            evaluating = children(worker.pid)
            if state == "running" and evaluating:
                break
            assert time.monotonic() < deadline and worker.poll() is None, worker.stdout.read()
            time.sleep(0.2)
        time.sleep(1)
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=60) == 0, worker.stdout.read()
    finally:
        if worker.poll() is None:
            worker.kill()
    assert all(gone_within(pid, 15) for pid in evaluating)
    with factory() as session:
        job = session.get(VerificationJob, job_id)
        assert (job.state, job.attempts, job.error) == ("queued", 1, None)


def test_serve_passes_its_limits_to_the_worker(tmp_path):
    import json

    from tests.leaderboard_support import make_onnx

    env = {"RLBENCH_DATA_DIR": str(tmp_path)}
    created = run_cli("leaderboard", "token", "create", "me", env=env)
    assert created.returncode == 0, created.stderr
    token = created.stdout.split()[-1]
    limits = ("--cpu-s", "77", "--wall-s", "4", "--memory-gb", "1.5")
    with serve_cli(tmp_path, "--no-seed", *limits) as (base, server):
        worker = worker_of(server)
        argv = Path(f"/proc/{worker}/cmdline").read_bytes().decode().split("\0")
        given = {argv[i]: argv[i + 1] for i, arg in enumerate(argv) if arg.startswith("--")}
        assert (given["--cpu-s"], given["--wall-s"], given["--memory-gb"]) == ("77", "4.0", "1.5")
        posted = httpx.post(
            f"{base}/api/submissions",
            headers={"Authorization": f"Bearer {token}"},
            files={"policy": ("spin.onnx", make_onnx(loop=True))},
            data={"metadata": json.dumps({"env_id": "rlbench/CartPole-v1", "method": "spin"})},
        )
        assert posted.status_code == 202, posted.text
        deadline = time.monotonic() + 180
        while (job := httpx.get(posted.json()["url"]).json()["job"])["state"] != "failed":
            assert job["state"] in ("queued", "running") and time.monotonic() < deadline, job
            time.sleep(0.5)
        # the loop is stopped by serve's wall-time limit, not the worker's default 900 s
        assert job["error"] == "stopped: wall-time limit of 4 s exceeded"
        server.terminate()
    output = server.stdout.read()
    assert "each verification gets 77 CPU s, 4 wall s, 1.5 GiB" in output
