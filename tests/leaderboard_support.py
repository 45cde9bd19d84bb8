"""Fixtures of the leaderboard tests: one throwaway PostgreSQL cluster per test process
(pytest-xdist workers each start their own, on their own port), a fresh database per test on
SQLite and on PostgreSQL, and the zoo's committed results as a corpus (imported once per test
process and backend, then copied into each test's database)."""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

REPO = Path(__file__).resolve().parents[1]
ZOO_RESULTS = sorted(REPO.glob("baselines/results/**/result.json"))
"""Every committed result: the zoo's and the offline baselines' (on offline ids)."""
CARTPOLE_ZOO_RESULT = next(p for p in ZOO_RESULTS if "/results/CartPole-v1/" in p.as_posix())
"""A zoo result on the online CartPole-v1 (its card's protocol: 50 episodes)."""


def list_all_results(client, **params) -> list[dict]:
    """Every row of ``GET /api/results`` with ``params``, page by page (at most 500 a page)."""
    rows: list[dict] = []
    while True:
        page = client.get("/api/results", params={**params, "limit": 500, "offset": len(rows)})
        assert page.status_code == 200, page.text
        rows += page.json()
        if len(rows) >= int(page.headers["x-total-count"]):
            return rows


def _pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _as_postgres(args: list[str]) -> list[str]:
    """Run as the ``postgres`` user when we are root (PostgreSQL refuses to run as root)."""
    if os.geteuid() != 0:
        return args
    if shutil.which("runuser"):
        return ["runuser", "-u", "postgres", "--", *args]
    return ["su", "postgres", "-c", " ".join(args)]


class PostgresUnavailable(RuntimeError):
    """PostgreSQL cannot run here (not installed, or no user to run it as)."""


@contextlib.contextmanager
def postgres_cluster() -> Iterator[str]:
    """A throwaway PostgreSQL cluster on 127.0.0.1 and a free port, under a temporary folder,
    stopped and removed after; yields its server URL. :class:`PostgresUnavailable` where it
    cannot run; RuntimeError (with its log) where it does not start."""
    bin_dir = _pg_bin()
    if bin_dir is None:
        raise PostgresUnavailable(
            "PostgreSQL is not installed (scripts/setup.sh installs it as root: "
            "apt-get install postgresql)"
        )
    if os.geteuid() == 0:
        try:
            import pwd

            pw = pwd.getpwnam("postgres")
        except KeyError:
            raise PostgresUnavailable(
                "PostgreSQL is installed but there is no 'postgres' user to run it as"
            ) from None
    root = Path(tempfile.mkdtemp(prefix="rlbench-pg-"))
    data = root / "data"
    if os.geteuid() == 0:
        os.chown(root, pw.pw_uid, pw.pw_gid)
    port = _free_port()
    log = root / "server.log"
    subprocess.run(
        _as_postgres(
            [
                str(bin_dir / "initdb"),
                "-D",
                str(data),
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
                "-E",
                "UTF8",
            ]
        ),
        check=True,
        capture_output=True,
        timeout=120,
    )
    options = f"-p {port} -k {root} -h 127.0.0.1 -c fsync=off -c max_connections=200"
    started = subprocess.run(
        _as_postgres(
            [str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options, "-w", "start"]
        ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    if started.returncode != 0:
        detail = log.read_text() if log.exists() else started.stderr
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"PostgreSQL did not start: {detail[-2000:]}")
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}"
    finally:
        subprocess.run(
            _as_postgres([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]),
            capture_output=True,
            timeout=120,
        )
        shutil.rmtree(root, ignore_errors=True)


def admin_engine(server: str):
    """An autocommit engine on the cluster's ``postgres`` database (CREATE and DROP DATABASE)."""
    from sqlalchemy import create_engine

    return create_engine(
        f"{server}/postgres".replace("postgresql://", "postgresql+psycopg://"),
        isolation_level="AUTOCOMMIT",
    )


def create_database(server: str, name: str) -> str:
    """A new database ``name`` on the cluster at ``server``; returns its URL."""
    from sqlalchemy import text

    admin = admin_engine(server)
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return f"{server}/{name}"


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """A PostgreSQL cluster on 127.0.0.1 for this test process; yields its server URL."""
    try:
        cluster = postgres_cluster()
        url = cluster.__enter__()
    except PostgresUnavailable as exc:
        pytest.skip(f"{exc}; the SQLite half of these tests still ran")
    except RuntimeError as exc:
        pytest.fail(str(exc))
    try:
        yield url
    finally:
        cluster.__exit__(None, None, None)


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database: a SQLite file, or a new database on the test cluster."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'leaderboard.sqlite'}"
        return
    server = request.getfixturevalue("postgres_server")
    from sqlalchemy import text

    name = "lb_" + uuid.uuid4().hex[:12]
    url = create_database(server, name)
    admin = admin_engine(server)
    try:
        yield url
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def leaderboard_cards(ids: tuple[str, ...] | None = None):
    """The catalog's cards and the offline ids' (all, or those with ``ids``) and the registry's
    spec hash."""
    import rlbench_suite  # noqa: F401  (registers the cards)
    from rlbench_suite.leaderboard.catalog_sync import board_cards
    from rlbench_suite.registry import spec_hash

    every = board_cards()
    chosen = [c for c in every if ids is None or c.id in ids]
    return chosen, spec_hash


ZOO_ENVS = tuple(
    sorted(
        {json.loads(p.read_text(encoding="utf-8"))["env_id"] for p in ZOO_RESULTS}
        | {"rlbench/CartPole-v1", "rlbench/Acrobot-v1", "rlbench/MountainCar-v0"}
    )
)
"""The envs of the committed zoo results (the zoo grows), and those the tests name."""


@pytest.fixture(scope="session")
def random_results(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Real Results of the random policy (the harness, the card's protocol) on two zoo envs."""
    from rlbench_suite.evaluation import evaluate

    folder = tmp_path_factory.mktemp("random-results")
    paths = []
    for env_id in ("rlbench/CartPole-v1", "rlbench/Acrobot-v1"):
        path = folder / f"{env_id.split('/')[1]}.json"
        evaluate(env_id, "random", workers=1, out=path)
        paths.append(path)
    return paths


class ZooDatabases:
    """The zoo's results imported once per test process and backend (a template database),
    then copied into each test's fresh database: importing them took 8 to 20 s a test, and
    over 200 tests start from them. A copy is the template's rows, ids and sequences."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.templates: dict[str, str] = {}

    def _template(self, kind: str, server: str | None) -> str:
        if kind not in self.templates:
            from rlbench_suite.leaderboard.importer import import_files
            from rlbench_suite.leaderboard.startup import prepare_database

            if server is None:
                url = f"sqlite:///{self.folder / 'zoo-template.sqlite'}"
            else:
                url = create_database(server, "zoo_template_" + uuid.uuid4().hex[:12])
            cards, spec_hash = leaderboard_cards(ZOO_ENVS)
            factory = prepare_database(url, cards, spec_hash)
            assert import_files(factory, ZOO_RESULTS).refused == []
            factory.kw["bind"].dispose()  # a PostgreSQL template takes no open connection
            self.templates[kind] = url
        return self.templates[kind]

    def copy_into(self, db_url: str) -> None:
        """Make the fresh, empty database at ``db_url`` (:func:`db_url`) the zoo's."""
        import sqlite3
        from contextlib import closing

        from sqlalchemy import text

        if db_url.startswith("sqlite:///"):
            template = self._template("sqlite", None).removeprefix("sqlite:///")
            with closing(sqlite3.connect(template)) as source, closing(
                sqlite3.connect(db_url.removeprefix("sqlite:///"))
            ) as target:
                source.backup(target)
            return
        server, name = db_url.rsplit("/", 1)
        template = self._template("postgresql", server).rsplit("/", 1)[1]
        admin = admin_engine(server)
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))
            connection.execute(text(f'CREATE DATABASE "{name}" TEMPLATE "{template}"'))
        admin.dispose()


@pytest.fixture(scope="session")
def zoo_databases(tmp_path_factory: pytest.TempPathFactory) -> ZooDatabases:
    """This test process's zoo templates (:class:`ZooDatabases`)."""
    return ZooDatabases(tmp_path_factory.mktemp("zoo-template"))


def zoo_factory(db_url: str, zoo_databases: ZooDatabases):
    """A session factory of the database at ``db_url``, made a copy of the zoo's."""
    from rlbench_suite.leaderboard.startup import prepare_database

    zoo_databases.copy_into(db_url)
    return prepare_database(db_url)  # migrated already: checks the schema is the latest


@pytest.fixture
def seeded(db_url: str, random_results: list[Path], zoo_databases: ZooDatabases):
    """A migrated database with the zoo envs, the zoo's results and the random results."""
    from rlbench_suite.leaderboard.importer import import_files

    factory = zoo_factory(db_url, zoo_databases)
    report = import_files(factory, random_results)
    assert report.refused == []
    yield factory
    factory.kw["bind"].dispose()


def make_onnx(custom_domain: str | None = None, loop: bool = False) -> bytes:
    """A tiny CartPole ONNX policy (obs -> logits), one with a custom operator, or one whose
    graph loops (nearly) forever."""
    from onnx import TensorProto, helper

    weights = helper.make_tensor("w", TensorProto.FLOAT, [4, 2], [0.1] * 8)
    opsets = [helper.make_opsetid("", 17)]
    nodes = [helper.make_node("MatMul", ["obs", "w"], ["logits" if not loop else "start"])]
    initializers = [weights]
    if custom_domain is not None:
        nodes = [helper.make_node("Boom", ["obs", "w"], ["logits"], domain=custom_domain)]
        opsets.append(helper.make_opsetid(custom_domain, 1))
    if loop:
        body = helper.make_graph(
            [
                helper.make_node("Identity", ["cond"], ["cond_out"]),
                helper.make_node("Identity", ["v"], ["v_out"]),
            ],
            "spin",
            [
                helper.make_tensor_value_info("i", TensorProto.INT64, []),
                helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
                helper.make_tensor_value_info("v", TensorProto.FLOAT, ["batch", 2]),
            ],
            [
                helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
                helper.make_tensor_value_info("v_out", TensorProto.FLOAT, ["batch", 2]),
            ],
        )
        initializers += [
            helper.make_tensor("trips", TensorProto.INT64, [], [2**62]),
            helper.make_tensor("yes", TensorProto.BOOL, [], [True]),
        ]
        nodes.append(helper.make_node("Loop", ["trips", "yes", "start"], ["logits"], body=body))
    graph = helper.make_graph(
        nodes,
        "policy",
        [helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 2])],
        initializer=initializers,
    )
    return helper.make_model(graph, opset_imports=opsets).SerializeToString()


@pytest.fixture
def app_client(db_url: str, zoo_databases: ZooDatabases):
    """A TestClient of the site over a database holding the zoo's results, a live token
    ``alice`` and a revoked token ``mallory``; yields (client, factory, alice's token,
    mallory's token)."""
    from fastapi.testclient import TestClient

    from rlbench_suite.leaderboard.app import create_app
    from rlbench_suite.leaderboard.limits import Limits
    from rlbench_suite.leaderboard.tokens import create_token, revoke_token

    factory = zoo_factory(db_url, zoo_databases)
    with factory.begin() as session:
        _, alice = create_token(session, "alice")
        _, mallory = create_token(session, "mallory")
        revoke_token(session, "mallory")
    limits = Limits(result_bytes=256 * 1024, policy_bytes=64 * 1024, submissions_per_minute=8)
    with TestClient(create_app(factory, limits)) as client:
        yield client, factory, alice, mallory
    factory.kw["bind"].dispose()


SERVER_SCRIPT = """
import sys, uvicorn
from rlbench_suite.core.catalog import cards
from rlbench_suite.registry import spec_hash
from rlbench_suite.leaderboard.app import create_app
from rlbench_suite.leaderboard.limits import Limits
from rlbench_suite.leaderboard.startup import prepare_database
url, port = sys.argv[1], int(sys.argv[2])
ids = {"rlbench/CartPole-v1", "rlbench/Acrobot-v1", "rlbench/Pendulum-v1"}
factory = prepare_database(url, [c for c in cards().values() if c.id in ids], spec_hash)
app = create_app(factory, Limits(submissions_per_minute=100_000))
uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
"""


def wait_until_serving(
    base: str, process: subprocess.Popen, log: IO[str] | None = None, seconds: float = 120
) -> None:
    """Wait until the server at ``base`` answers; fail with its output (its stdout, or
    ``log`` where it writes there) if it exits."""
    import time

    import httpx

    deadline = time.monotonic() + seconds
    while True:
        if process.poll() is not None:
            if log is not None:
                log.seek(0)
            output = (log or process.stdout).read()
            raise RuntimeError(f"the server exited: {output[-2000:]}")
        try:
            httpx.get(f"{base}/api/envs", timeout=5)
            return
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the server did not answer within {seconds} s") from None
            time.sleep(0.2)


@contextlib.contextmanager
def live_server(url: str, script: str = SERVER_SCRIPT) -> Iterator[tuple[str, subprocess.Popen]]:
    """The leaderboard served by uvicorn on 127.0.0.1 in a child process: (base URL, process).
    ``script`` is run with the database URL and the port as its arguments."""
    import sys

    port = _free_port()
    # the server's output goes to a file (a pipe nobody reads would block it once full) and
    # is printed when it stops, so a failing test shows the server's tracebacks
    with tempfile.TemporaryFile("w+") as log:
        process = subprocess.Popen(
            [sys.executable, "-c", script, url, str(port)], stdout=log, stderr=subprocess.STDOUT
        )
        base = f"http://127.0.0.1:{port}"
        try:
            wait_until_serving(base, process, log)
            yield base, process
        finally:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=30)
            log.seek(0)
            print(f"--- the server's output ---\n{log.read()[-20000:]}")


@contextlib.contextmanager
def serve_cli(
    data_dir: Path, *args: str, env: dict[str, str] | None = None
) -> Iterator[tuple[str, subprocess.Popen]]:
    """``rlbench leaderboard serve`` on a free port with ``data_dir`` as the data directory
    (and ``args``, ``env`` added); yields (base URL, process) once it answers, and stops it
    after."""
    import sys

    port = _free_port()
    env = {**os.environ, **(env or {}), "RLBENCH_DATA_DIR": str(data_dir)}
    command = [
        sys.executable,
        "-m",
        "rlbench_suite.cli",
        "leaderboard",
        "serve",
        "--port",
        str(port),
        *args,
    ]
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        wait_until_serving(f"http://127.0.0.1:{port}", process)
        yield f"http://127.0.0.1:{port}", process
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=60)


def cached_dataset(content_root: Path, data_dir: Path):
    """A small real dataset built into ``data_dir``'s cache, its card written over the
    catalog's ``rlbench/CartPole-medium-v0`` in a copy of the dataset cards under
    ``content_root`` (point ``RLBENCH_CONTENT_ROOT`` at it); returns the card."""
    import tomlkit

    from tests.dataset_helpers import built_card, small_card

    shutil.copytree(REPO / "datasets", content_root / "datasets")
    card = built_card(small_card(episodes=3), data_dir / "datasets")
    document = card.model_dump(mode="json", exclude_none=True)
    target = content_root / "datasets" / "CartPole" / "medium.toml"
    target.write_text(tomlkit.dumps(document), encoding="utf-8")
    return card


def with_returns(data: dict, returns: list[float]) -> dict:
    """``data`` (a Result's JSON) with these returns and the figures its card computes from
    them: the server refuses a result whose figures disagree with its own episodes."""
    from rlbench_suite.core.offline_cards import resolve_card
    from rlbench_suite.core.summary import with_figures

    data["returns"] = [float(r) for r in returns]
    return with_figures(resolve_card(data["env_id"]), data)
