"""``rlbench leaderboard``: init, import of the zoo's results, tokens, on a real database."""

from __future__ import annotations

import json
import re
import sqlite3

from tests.conftest import run_cli
from tests.leaderboard_support import REPO, ZOO_RESULTS


def test_init_import_and_tokens_on_the_embedded_database(tmp_path):
    env = {"RLBENCH_DATA_DIR": str(tmp_path)}
    done = run_cli("leaderboard", "init", env=env)
    assert done.returncode == 0, done.stderr
    database = tmp_path / "leaderboard" / "leaderboard.sqlite"
    assert str(database) in done.stdout and " environments, " in done.stdout
    with sqlite3.connect(database) as connection:
        envs = connection.execute("SELECT count(*) FROM environments").fetchone()[0]
    assert f"{envs} environments" in done.stdout and envs > 100

    done = run_cli("leaderboard", "import", str(REPO / "baselines" / "results"), env=env)
    assert done.returncode == 0, done.stderr
    assert f"imported {len(ZOO_RESULTS)} new, 0 already there, 0 refused" in done.stdout
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    done = run_cli("leaderboard", "import", str(ZOO_RESULTS[0]), str(broken), env=env)
    assert done.returncode == 1
    assert "imported 0 new, 1 already there, 1 refused" in done.stdout
    assert f"refused {broken}: not a readable JSON file" in done.stdout
    with sqlite3.connect(database) as connection:
        assert connection.execute("SELECT count(*) FROM results").fetchone()[0] == len(ZOO_RESULTS)
    cartpole = REPO / "baselines/results/CartPole-v1/ppo/seed-0/result.json"
    done = run_cli("leaderboard", "import", str(cartpole), "--verify", env=env)
    assert done.returncode == 0, done.stderr
    assert "imported 0 new, 1 already there, 0 refused; 1 verification job queued" in done.stdout
    with sqlite3.connect(database) as connection:
        assert connection.execute("SELECT state FROM verification_jobs").fetchall() == [("queued",)]
    refused = run_cli("leaderboard", "serve", "--no-seed", "--verify-zoo", "--port", "0", env=env)
    assert refused.returncode == 2 and "--verify-zoo needs --seed" in refused.stderr

    created = run_cli("leaderboard", "token", "create", "alice", env=env)
    assert created.returncode == 0, created.stderr
    value = created.stdout.split()[-1]
    assert value.startswith("rlb_") and len(value) > 40
    with sqlite3.connect(database) as connection:
        stored = connection.execute("SELECT token_sha256 FROM api_tokens").fetchall()
    assert len(stored) == 1 and value not in stored[0][0]
    again = run_cli("leaderboard", "token", "create", "alice", env=env)
    assert again.returncode == 2 and "a token named 'alice' exists already" in again.stderr
    assert run_cli("leaderboard", "token", "revoke", "alice", env=env).returncode == 0
    twice = run_cli("leaderboard", "token", "revoke", "alice", env=env)
    assert twice.returncode == 0 and "'alice' was already revoked on" in twice.stdout
    listed = run_cli("leaderboard", "token", "list", env=env)
    assert "alice" in listed.stdout and "revoked" in listed.stdout and value not in listed.stdout


def test_a_bad_database_url_is_refused_clearly(tmp_path):
    done = run_cli("leaderboard", "init", "--db", "mysql://u@localhost/x")
    assert done.returncode == 2
    assert "unsupported database 'mysql'; accepted: sqlite:///PATH or postgresql://" in done.stderr


def test_serve_shows_the_zoo_results_on_a_fresh_database(tmp_path):
    import httpx

    from tests.leaderboard_support import serve_cli

    with serve_cli(tmp_path) as (base, server):
        home = httpx.get(f"{base}/", timeout=30)
        assert home.status_code == 200
        assert f"{len(ZOO_RESULTS)} results (0 verified)" in home.text
        page = httpx.get(f"{base}/envs/rlbench/CartPole-v1", timeout=30)
        assert '<td><a href="/methods/zoo-ppo">zoo-ppo</a>' in page.text
    output = server.communicate(timeout=30)[0]
    assert f"zoo results: {len(ZOO_RESULTS)} new, 0 there, 0 refused" in output
    assert f"serving sqlite:///{tmp_path}/leaderboard/leaderboard.sqlite" in output


def test_eval_submit_evaluates_then_submits_the_result_and_its_onnx(db_url, tmp_path):
    import hashlib

    from sqlalchemy import select

    from rlbench_suite.leaderboard.models import Result, Submission
    from rlbench_suite.leaderboard.startup import prepare_database
    from rlbench_suite.leaderboard.tokens import create_token
    from rlbench_suite.leaderboard.worker import run_pending
    from tests.leaderboard_support import live_server

    onnx = REPO / "baselines/policies/CartPole-v1/ppo/seed-0/policy.onnx"
    factory = prepare_database(db_url)
    with factory.begin() as session:
        _, token = create_token(session, "eval")
    env = {"RLBENCH_DATA_DIR": str(tmp_path), "RLBENCH_LEADERBOARD_TOKEN": token}
    out = tmp_path / "result.json"
    with live_server(db_url) as (base, _):
        done = run_cli("eval", "rlbench/CartPole-v1", "--policy", f"onnx:{onnx}", "--workers",
                       "1", "--out", str(out), "--submit", "--server", base,
                       "--method", "my-ppo", env=env)  # fmt: skip
        alone = run_cli("eval", "rlbench/CartPole-v1", "--policy", "random", "--workers", "1",
                        "--submit", "--server", base, env=env)  # fmt: skip
    assert alone.returncode == 0, alone.stdout + alone.stderr
    assert "random is not an ONNX file: submitting the result alone" in alone.stdout
    assert "result stored (self-reported)" in alone.stdout and "queued" not in alone.stdout
    assert done.returncode == 0, done.stdout + done.stderr
    assert token not in done.stdout + done.stderr
    stored = [line for line in done.stdout.splitlines() if line.startswith("result stored")]
    assert len(stored) == 1 and f"{base}/results/" in stored[0], done.stdout
    result_id = int(stored[0].rsplit("/", 1)[1])
    assert "queued for verification" in done.stdout
    digest = hashlib.sha256(onnx.read_bytes()).hexdigest()
    with factory() as session:
        row = session.get(Result, result_id)
        assert row.method.name == "my-ppo" and row.artifact_sha256 == digest
        assert row.verification == "self-reported"
        assert row.document == json.loads(out.read_text()) | {"verification": "self-reported"}
        policy = session.scalars(select(Submission).where(Submission.kind == "policy")).one()
        assert policy.artifact_sha256 == digest and policy.method.name == "my-ppo"
    # the worker re-evaluates the uploaded ONNX: the submitted row is reproduced, so verified
    assert [state for _, state in run_pending(factory)] == ["done"]
    with factory() as session:
        assert session.get(Result, result_id).verification == "verified"
    factory.kw["bind"].dispose()


def test_eval_submit_is_refused_before_evaluating_without_server_or_token(tmp_path):
    env = {"RLBENCH_DATA_DIR": str(tmp_path), "RLBENCH_LEADERBOARD_TOKEN": "",
           "XDG_CONFIG_HOME": str(tmp_path / "config")}  # fmt: skip
    args = ("eval", "rlbench/CartPole-v1", "--policy", "random", "--out", str(tmp_path / "r.json"))
    done = run_cli(*args, "--submit", env=env)
    assert done.returncode == 2
    assert "--submit needs --server URL" in done.stderr
    done = run_cli(*args, "--submit", "--server", "http://127.0.0.1:9", env=env)
    assert done.returncode == 2
    assert "no token: set RLBENCH_LEADERBOARD_TOKEN" in done.stderr
    done = run_cli(*args, "--server", "http://127.0.0.1:9", env=env)
    assert done.returncode == 2 and "add --submit" in done.stderr
    assert not (tmp_path / "r.json").exists()
    # a protocol the leaderboard would refuse after the evaluation is refused before it
    env["RLBENCH_LEADERBOARD_TOKEN"] = "a-token"
    done = run_cli(*args, "--episodes", "5", "--submit", "--server", "http://127.0.0.1:9",
                   env=env)  # fmt: skip
    assert done.returncode == 2 and not (tmp_path / "r.json").exists()
    message = " ".join(done.stderr.split())
    assert "ranks rlbench/CartPole-v1 only under its card's protocol" in message
    assert re.search(r"episodes: 5 vs the card's \d+;", message)


def test_submit_checks_the_policy_file_before_sending_anything(tmp_path):
    """Before, the Result was stored and then a raw [Errno 2] came; a policy file that was
    not the result's own was accepted and counted as a second run."""
    env = {"RLBENCH_DATA_DIR": str(tmp_path), "RLBENCH_LEADERBOARD_TOKEN": "a-token"}
    result = REPO / "baselines/results/CartPole-v1/ppo/seed-0/result.json"
    other = REPO / "baselines/policies/CartPole-v1/ppo/seed-1/policy.onnx"
    server = ("--server", "http://127.0.0.1:9")  # nothing listens: nothing may be sent
    done = run_cli("submit", str(result), *server, "--policy", str(tmp_path / "nope.onnx"),
                   env=env)  # fmt: skip
    assert done.returncode == 2 and "nope.onnx: no such file" in " ".join(done.stderr.split())
    done = run_cli("submit", str(result), *server, "--policy", str(other), env=env)
    message = " ".join(done.stderr.split())
    assert done.returncode == 2 and "is not the policy the result was evaluated with" in message
    # metadata the server would refuse (a wrapper's nested kwargs) is said before sending
    doc = json.loads(result.read_text())
    doc["policy"]["wrappers"] = [{"name": "rlbench/KitchenOwnContribution-v0",
                                  "kwargs": {"bonus": {"pot": 2.0}}}]  # fmt: skip
    nested = tmp_path / "nested.json"
    nested.write_text(json.dumps(doc))
    own = REPO / "baselines/policies/CartPole-v1/ppo/seed-0/policy.onnx"
    done = run_cli("submit", str(nested), *server, "--policy", str(own), env=env)
    message = " ".join(done.stderr.split())
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "the policy's metadata (from the result's policy record) would be refused: " \
        "wrappers.0.kwargs.bonus: must be a number, true/false, a string or null (a wrapper's " \
        "kwargs are flat), not an object; nothing was sent" in message


def test_migrate_names_the_revisions_and_goes_back_only_when_asked(tmp_path):
    from rlbench_suite.leaderboard.migrate import revisions

    database = tmp_path / "m.sqlite"
    db = ("--db", f"sqlite:///{database}")

    def tables() -> set[str]:
        with sqlite3.connect(database) as connection:
            rows = connection.execute("SELECT name FROM sqlite_master WHERE type='table'")
            return {name for (name,) in rows} - {"alembic_version"}

    bogus = run_cli("leaderboard", "migrate", *db, "--revision", "bogus")
    assert bogus.returncode == 2 and "Traceback" not in bogus.stderr
    accepted = ", ".join(["head", "base", *revisions()])
    assert bogus.stderr.strip().splitlines() == [
        f"error: unknown revision 'bogus'; accepted: {accepted}"
    ]
    up = run_cli("leaderboard", "migrate", *db)
    assert up.returncode == 0 and f"schema (empty) -> {revisions()[-1]}" in up.stdout, up.stderr
    made = tables()
    assert {"results", "methods", "environments"} <= made
    refused = run_cli("leaderboard", "migrate", *db, "--revision", "base")
    assert refused.returncode == 2 and "pass --downgrade to do it" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and tables() == made
    down = run_cli("leaderboard", "migrate", *db, "--revision", "base", "--downgrade")
    assert down.returncode == 0 and f"{revisions()[-1]} -> (empty)" in down.stdout, down.stderr
    assert tables() == set()
    again = run_cli("leaderboard", "migrate", *db)
    assert again.returncode == 0 and tables() == made


def test_export_writes_the_site_without_warnings(tmp_path):
    db = ("--db", f"sqlite:///{tmp_path / 'e.sqlite'}")
    cartpole = REPO / "baselines/results/CartPole-v1/ppo/seed-0/result.json"
    assert run_cli("leaderboard", "import", str(cartpole), *db).returncode == 0
    done = run_cli("leaderboard", "export", str(tmp_path / "site"), *db)
    assert done.returncode == 0 and done.stderr == "", done.stderr  # no deprecation warning
    pages = int(re.search(r"exported (\d+) pages", done.stdout).group(1))
    assert pages == len(list((tmp_path / "site").rglob("index.html"))) > 10
    assert (tmp_path / "site/methods/zoo-ppo/index.html").is_file()
