"""`rlbench datasets ...` end to end on a suite card, and the offline env ids."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest
from typer.testing import CliRunner

import rlbench_suite
from rlbench_suite.cli import app
from rlbench_suite.core.dataset_cards import DATA_FILE, get_dataset_card
from rlbench_suite.datasets import load, recover_environment
from rlbench_suite.datasets.cache import dataset_folder
from rlbench_suite.datasets.storage import DatasetFileError
from tests.conftest import served

pytest.importorskip("h5py")
DATASET = "rlbench/CartPole-random-v0"  # the smallest suite dataset: builds in about a second


def run(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RLBENCH_DATA_DIR", str(tmp_path / "data"))
    return tmp_path / "data" / "datasets"


def _corrupt(path, at: float = 0.5) -> None:
    raw = bytearray(path.read_bytes())
    raw[int(len(raw) * at)] ^= 0xFF
    path.write_bytes(bytes(raw))


def test_build_reproduces_the_committed_card_then_verify_finds_corruption(cache):
    card = get_dataset_card(DATASET)
    assert card.built
    result = run("datasets", "build", DATASET)
    assert result.exit_code == 0, result.output
    assert card.content_sha256 in result.output
    folder = dataset_folder(card, cache)
    assert [f.path for f in card.files] == [DATA_FILE, "data/metadata.json"]
    # same versions here: the file bytes match the card too
    result = run("datasets", "verify", DATASET)
    assert result.exit_code == 0 and "ok" in result.output
    _corrupt(folder / DATA_FILE)
    result = run("datasets", "verify", DATASET)
    assert result.exit_code == 1
    assert f"{folder / DATA_FILE}: SHA-256 mismatch: expected {card.files[0].sha256}" in (
        result.output
    )
    assert f"run `rlbench datasets delete {DATASET}` then `rlbench datasets download" in (
        result.output
    )
    with pytest.raises(DatasetFileError, match="corrupt") as info:
        load(DATASET)
    assert str(folder / DATA_FILE) in str(info.value)
    assert run("datasets", "delete", DATASET).exit_code == 0
    assert not folder.exists()


def test_build_write_records_the_build_and_the_cpu_in_the_card(cache, tmp_path, monkeypatch):
    import shutil

    from rlbench_suite.core.dataset_cards import dataset_card_paths, load_dataset_card
    from rlbench_suite.core.provenance import cpu_platform

    copy = tmp_path / "card.toml"
    shutil.copy(dataset_card_paths()[DATASET], copy)
    text = copy.read_text(encoding="utf-8")
    stale = text.replace(get_dataset_card(DATASET).content_sha256, "0" * 64)
    copy.write_text(stale, encoding="utf-8")
    monkeypatch.setattr("rlbench_suite.cli.datasets_commands.dataset_card_paths",
                        lambda: {DATASET: copy})  # fmt: skip
    result = run("datasets", "build", DATASET, "--write")
    assert result.exit_code == 0, result.output
    assert f"card updated: {copy}" in " ".join(result.output.split())
    written = load_dataset_card(copy)
    assert written.content_sha256 == get_dataset_card(DATASET).content_sha256
    assert written.build.cpu == cpu_platform()  # every build says where it ran
    assert written.files == get_dataset_card(DATASET).files
    # a CPU recorded on data that does not depend on it is provenance, not a warning
    from rlbench_suite.datasets.builder import mismatch_cause
    from rlbench_suite.datasets.hints import other_cpu_note

    elsewhere = written.model_copy(update={"build": written.build.model_copy(
        update={"cpu": "x86_64, Another CPU, avx"})})  # fmt: skip
    assert other_cpu_note(elsewhere) is None
    assert "torch" not in mismatch_cause(elsewhere)
    assert "built on x86_64, Another CPU, avx" in mismatch_cause(elsewhere)


def test_list_shows_every_card_its_data_score_and_what_is_cached(cache):
    from rlbench_suite.core.dataset_cards import dataset_cards
    from rlbench_suite.datasets.table import data_score
    from tests.conftest import run_cli

    assert run("datasets", "build", DATASET).exit_code == 0
    # a fresh interpreter, its console as wide as COLUMNS says (this process's console was
    # made at import, at whatever width the test run had)
    done = run_cli("datasets", "list", env={"RLBENCH_DATA_DIR": str(cache.parent),
                                            "COLUMNS": "250"})  # fmt: skip
    assert done.returncode == 0, done.stderr
    cards = dataset_cards()
    assert f"rlbench-suite datasets ({len(cards)})" in done.stdout
    lines = {line.split()[1]: line for line in done.stdout.splitlines()
             if line.startswith("│ rlbench/")}  # fmt: skip
    assert set(lines) == set(cards)
    for dataset_id, line in lines.items():
        cells = [c.strip() for c in line.strip("│ ").split("│")]
        assert cells[-1] == ("yes" if dataset_id == DATASET else "no"), line
        assert cells[-2] == data_score(cards[dataset_id]), line  # one decimal, as the docs
    assert "│ 0.0 " in lines["rlbench/Acrobot-random-v0"]  # its data scores 0.0119

    # a truncated copy is "partly", not "no" (a review: corrupt looked like not cached)
    data_file = dataset_folder(get_dataset_card(DATASET), cache) / DATA_FILE
    data_file.write_bytes(data_file.read_bytes()[:1000])
    result = run("datasets", "list")
    row = next(line for line in result.output.splitlines() if f" {DATASET} " in line)
    assert row.rstrip(" │").endswith("partly"), row
    result = run("datasets", "info", DATASET)
    assert (f"(partly cached or damaged: `rlbench datasets verify {DATASET}` says what is "
            "wrong)") in " ".join(result.output.split())


def test_unknown_ids_suggest_and_offline_mode_uses_only_the_cache(cache):
    result = run("datasets", "info", "rlbench/CartPole-randum-v0")
    assert result.exit_code == 2
    assert "Did you mean: rlbench/CartPole-random-v0" in result.output
    result = run("datasets", "download", DATASET, "--offline")
    assert result.exit_code == 2
    assert "--offline forbids downloading" in result.output and "missing" in result.output
    assert not dataset_folder(get_dataset_card(DATASET), cache).exists()
    result = CliRunner().invoke(app, ["datasets", "download", DATASET, "--offline", "--remote",
                                      str(cache / "mirror")])  # fmt: skip
    assert result.exit_code == 2 and "--offline uses no remote" in result.output
    result = run("datasets", "download", DATASET, "--offline", "--build")  # no network needed
    assert result.exit_code == 0, result.output
    assert "building from source (--offline: no remote tried)" in result.output
    assert run("datasets", "verify", DATASET).exit_code == 0


def test_download_build_falls_back_to_building_from_source(cache):
    result = run("datasets", "download", DATASET, "--build", "--remote", str(cache / "nowhere"))
    assert result.exit_code == 0, result.output
    assert "building from source" in result.output and "verified" in result.output
    assert run("datasets", "download", DATASET, "--offline").exit_code == 0


def test_serve_publish_download_then_the_offline_env(cache, tmp_path):
    card = get_dataset_card(DATASET)
    assert run("datasets", "build", DATASET).exit_code == 0
    mirror = tmp_path / "mirror"
    result = run("datasets", "publish", DATASET, "--to", str(mirror))
    assert result.exit_code == 0 and (mirror / card.id / DATA_FILE).is_file()
    assert run("datasets", "delete", DATASET).exit_code == 0
    with served(mirror) as url:
        result = run("datasets", "download", DATASET, "--remote", url)
        assert result.exit_code == 0, result.output
        for f in card.files:  # piped (not a terminal): one line per finished file
            assert result.output.count(f"{DATASET} {f.path}: ") == 1, result.output
    env = gym.make(DATASET)
    data = env.get_dataset()
    assert data["observations"].shape == (card.steps, 4)
    assert data["next_observations"].shape == (card.steps, 4)
    assert int(data["terminals"].sum() + data["timeouts"].sum()) == card.episodes
    # D4RL's (and minari.get_normalized_score's) 0-1 scale; no warning (only joint data's)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert env.get_normalized_score(card.reference.expert.value) == pytest.approx(1.0)
    assert env.get_normalized_score(card.reference.random.value) == pytest.approx(0.0)
    assert env.get_normalized_score(np.array([card.reference.random.value])) == pytest.approx([0])
    with pytest.raises(TypeError, match=r"team= applies to joint data only; .* holds "
                       r"single-agent data"):  # fmt: skip
        env.get_normalized_score(0.0, team=True)
    assert (env.ref_min_score, env.get_wrapper_attr("ref_max_score")) == (
        card.reference.random.value, card.reference.expert.value)  # D4RL's attributes
    obs, _ = env.reset(seed=1)
    assert env.observation_space.contains(obs)
    env.close()
    dataset = load(DATASET)
    assert dataset.num_episodes == card.episodes
    assert repr(dataset) == f"OfflineDataset({DATASET!r}, episodes={card.episodes}, " \
                            f"steps={card.steps})"  # fmt: skip
    assert float(dataset.episode_returns().mean()) == pytest.approx(card.mean_return)
    online = recover_environment(DATASET)
    assert online.spec.id == card.env_id
    online.close()


def test_every_dataset_card_is_a_registered_offline_id():
    rlbench_suite.register_all()
    from rlbench_suite.core.dataset_cards import dataset_cards

    for dataset_id, card in dataset_cards().items():
        spec = gym.spec(dataset_id)  # the online env's stack, then the dataset's wrapper
        offline = spec.additional_wrappers[-1]
        assert (offline.name, offline.kwargs) == ("rlbench/OfflineDataset-v0",
                                                  {"dataset_id": dataset_id})  # fmt: skip
        assert card.built, f"{dataset_id}: build it with `rlbench datasets build --write`"


def _card_as(monkeypatch, card) -> None:
    """Make the CLI see ``card`` for its id (a card whose hashes the test changed)."""
    from rlbench_suite.cli import datasets_common

    monkeypatch.setattr(datasets_common, "get_dataset_card", lambda _id: card)


def test_a_build_with_another_content_hash_keeps_the_cached_copy(cache, monkeypatch):
    card = get_dataset_card(DATASET)
    assert run("datasets", "build", DATASET).exit_code == 0
    folder = dataset_folder(card, cache)
    before = (folder / DATA_FILE).read_bytes()
    _card_as(monkeypatch, card.model_copy(update={"content_sha256": "0" * 64}))
    result = run("datasets", "build", DATASET)
    assert result.exit_code == 1
    assert "differs from the card's" in result.output and "left as it was" in result.output
    assert (folder / DATA_FILE).read_bytes() == before  # the verified copy is untouched
    assert sorted(p.name for p in folder.parent.iterdir()) == [
        f".{folder.name}.lock", folder.name]  # no staging folder left  # fmt: skip
    _card_as(monkeypatch, card)
    assert run("datasets", "verify", DATASET).exit_code == 0


def test_download_build_with_other_bytes_records_a_local_verification(cache, monkeypatch):
    from rlbench_suite.datasets.cache import VERIFIED_FILE

    real = get_dataset_card(DATASET)
    other = [f.model_copy(update={"sha256": "f" * 64}) for f in real.files]
    card = real.model_copy(update={"files": other})  # as if the card's h5py wrote other bytes
    _card_as(monkeypatch, card)
    result = run("datasets", "download", DATASET, "--build")
    assert result.exit_code == 0, result.output
    assert "recorded as locally verified" in result.output
    assert (dataset_folder(card, cache) / VERIFIED_FILE).is_file()
    for command in (("verify", DATASET), ("download", DATASET, "--offline")):
        result = run("datasets", *command)
        assert result.exit_code == 0, result.output
    assert load(card).card.id == DATASET
    # a local verification of another content hash is not accepted
    stranger = card.model_copy(update={"content_sha256": "0" * 64})
    with pytest.raises(DatasetFileError, match="SHA-256 mismatch"):
        load(stranger)


def test_verify_checks_only_cached_datasets_and_says_not_cached(cache):
    result = run("datasets", "download", DATASET, "--remote", str(cache / "nowhere"))
    assert result.exit_code == 2
    assert not dataset_folder(get_dataset_card(DATASET), cache).exists()  # no empty folders
    result = run("datasets", "verify")
    assert result.exit_code == 0 and "no cached datasets" in result.output
    result = run("datasets", "verify", DATASET)
    assert result.exit_code == 1 and "not cached" in result.output


def test_load_names_the_missing_file_of_a_partly_cached_dataset(cache):
    from rlbench_suite.core.dataset_cards import METADATA_FILE

    assert run("datasets", "build", DATASET).exit_code == 0
    metadata = dataset_folder(get_dataset_card(DATASET), cache) / METADATA_FILE
    metadata.unlink()
    with pytest.raises(DatasetFileError, match="only partly in the cache") as info:
        gym.make(DATASET).get_dataset()
    assert str(metadata) in str(info.value) and f"download {DATASET} --build" in str(info.value)


def test_load_names_a_truncated_file_and_the_command_to_fix_it(cache):
    card = get_dataset_card(DATASET)
    assert run("datasets", "build", DATASET).exit_code == 0
    data = dataset_folder(card, cache) / DATA_FILE
    data.write_bytes(data.read_bytes()[:1000])
    with pytest.raises(DatasetFileError) as info:
        load(DATASET)
    message = str(info.value)
    assert str(data) in message and "truncated" in message
    assert f"rlbench datasets download {DATASET}" in message and "delete" in message


def test_load_download_without_remotes_hints_at_build(cache):
    from rlbench_suite.datasets.remotes import DownloadError

    with pytest.raises(DownloadError, match=f"rlbench datasets download {DATASET} --build"):
        load(DATASET, download=True)
    with pytest.raises(FileNotFoundError, match="--build"):
        load(DATASET)


def test_ctrl_c_during_a_download_says_how_to_resume(cache, monkeypatch):
    from rlbench_suite.datasets import remotes

    card = get_dataset_card(DATASET)
    real = remotes.download

    def interrupted(card, root, *args, **kwargs):
        part = dataset_folder(card, root) / (DATA_FILE + ".part")
        part.parent.mkdir(parents=True)
        part.write_bytes(b"x" * 1234)
        raise KeyboardInterrupt

    monkeypatch.setattr(remotes, "download", interrupted)
    result = run("datasets", "download", DATASET)
    assert result.exit_code == 130
    total = sum(f.size for f in card.files)
    assert ("interrupted; run the same command again to resume (1234 of "
            f"{total} bytes kept)") in result.output  # fmt: skip
    assert "Traceback" not in result.output

    # verify advises resuming, not deleting the kept bytes (a review found it said delete),
    # and with the remote: the card lists none (a review ran the advice without one: it failed)
    resume = (f"a download was interrupted (1234 of {total} bytes kept); resume it with "
              f"`rlbench datasets download {DATASET} --remote URL` (the remote it came from: "
              "the card lists none)")  # fmt: skip
    result = run("datasets", "verify", DATASET)
    assert result.exit_code == 1
    assert f"{DATASET}: {resume}" in " ".join(result.output.split())
    assert "delete" not in result.output
    monkeypatch.setattr(remotes, "download", real)  # with no remote it says how to resume
    result = run("datasets", "download", DATASET)
    assert result.exit_code == 2
    assert f"; {resume}, or build it from source with" in " ".join(result.output.split())
    with pytest.raises(FileNotFoundError, match=re.escape(resume)):
        load(DATASET)


def test_advice_names_the_cache_the_user_gave(tmp_path, cache):
    """A review: `datasets verify ID --cache DIR` said to resume with `rlbench datasets download
    ID --remote URL`, which, run as printed, downloads into the default cache."""
    other = tmp_path / "my cache"
    part = dataset_folder(get_dataset_card(DATASET), other) / (DATA_FILE + ".part")
    part.parent.mkdir(parents=True)
    part.write_bytes(b"x" * 99)
    result = run("datasets", "verify", DATASET, "--cache", str(other))
    assert result.exit_code == 1
    said = " ".join(result.output.split())
    assert f"`rlbench datasets download {DATASET} --remote URL --cache '{other}'`" in said
    part.unlink()
    result = run("datasets", "verify", DATASET, "--cache", str(other))
    assert f"run `rlbench datasets download {DATASET} --build --cache '{other}'`" in " ".join(
        result.output.split())
    with pytest.raises(FileNotFoundError, match=re.escape(f"--build --cache '{other}'`")):
        load(DATASET, root=other)
    # the default cache (RLBENCH_DATA_DIR's) needs no --cache
    with pytest.raises(FileNotFoundError) as refused:
        load(DATASET, root=cache)
    assert "--cache" not in str(refused.value)


def test_a_build_hint_warns_where_a_training_runs_data_was_built_on_another_cpu():
    """A review: on a CPU where a medium-replay card's training run gives other bits, `rlbench
    train` sent the user to `download --build`, which trained for minutes and was refused."""
    from rlbench_suite.core.provenance import cpu_platform
    from rlbench_suite.datasets.hints import build_hint

    card = get_dataset_card("rlbench/CartPole-medium-replay-v0")
    elsewhere = card.model_copy(update={"build": card.build.model_copy(
        update={"cpu": "x86_64, Another CPU, avx"})})  # fmt: skip
    here = card.model_copy(update={"build": card.build.model_copy(
        update={"cpu": cpu_platform()})})  # fmt: skip
    command = "`rlbench datasets download rlbench/CartPole-medium-replay-v0 --build`"
    assert build_hint(here) == command
    hint = build_hint(elsewhere, then=" builds it")
    assert hint.startswith(f"{command} builds it; but its data comes from a torch training run "
                           "on x86_64, Another CPU, avx")  # fmt: skip
    assert "a mirror that has the files serves them (`--remote URL`)" in hint
    policy_card = get_dataset_card(DATASET)  # data a policy plays: the same bits on any CPU
    assert build_hint(policy_card.model_copy(update={"build": elsewhere.build})).endswith(
        "--build`")


def test_sigterm_during_a_download_says_how_to_resume_too(cache, monkeypatch):
    """A review: SIGTERM (``SystemExit(143)`` from the suite's handler) exited without the line
    Ctrl-C prints, and during ``--build`` would have been told to resume kept bytes."""
    import signal

    from rlbench_suite import interrupts
    from rlbench_suite.datasets import builder, remotes

    monkeypatch.setattr(interrupts, "_received", [])  # the handler's record, this test's own

    def terminated(card, root, *args, **kwargs):
        part = dataset_folder(card, root) / (DATA_FILE + ".part")
        part.parent.mkdir(parents=True, exist_ok=True)
        part.write_bytes(b"x" * 99)
        interrupts._received.append(signal.SIGTERM)
        raise SystemExit(143)

    monkeypatch.setattr(remotes, "download", terminated)
    result = run("datasets", "download", DATASET)
    total = sum(f.size for f in get_dataset_card(DATASET).files)
    assert result.exit_code == 143
    assert f"interrupted; run the same command again to resume (99 of {total} bytes kept)" in (
        result.output)  # fmt: skip
    def no_remote(*args, **kwargs):
        raise remotes.DownloadError("no remote")

    def terminated_build(*args, **kwargs):  # during --build's build
        return terminated(get_dataset_card(DATASET), cache)

    monkeypatch.setattr(remotes, "download", no_remote)
    monkeypatch.setattr(builder, "build", terminated_build)
    result = run("datasets", "download", DATASET, "--build")
    assert result.exit_code == 143
    assert "a build starts over" in result.output and "bytes kept" not in result.output


def test_ctrl_c_during_download_build_says_a_build_starts_over(cache, monkeypatch):
    from rlbench_suite.datasets import builder

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(builder, "build", interrupted)
    result = run("datasets", "download", DATASET, "--build")
    assert result.exit_code == 130
    assert (f"interrupted while building {DATASET} from source; a build starts over: run the "
            "same command again") in result.output  # fmt: skip
    assert "bytes kept" not in result.output


def test_ctrl_c_during_build_says_it_starts_over(cache, monkeypatch):
    """A review: `rlbench datasets build` exited 130 on Ctrl-C without a word."""
    from rlbench_suite.datasets import builder

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(builder, "build", interrupted)
    result = run("datasets", "build", DATASET)
    assert result.exit_code == 130
    assert (f"interrupted while building {DATASET}; a build starts over (the cached copy, if "
            "any, is as it was): run the same command again") in " ".join(result.output.split())


def test_download_goes_on_past_a_failure_and_lists_it(cache):
    result = run("datasets", "download", DATASET, "rlbench/CartPole-expert-v0", "--remote",
                 str(cache / "nowhere"))  # fmt: skip
    assert result.exit_code == 1
    assert result.output.count("no remote delivered") == 2
    assert f"failed: {DATASET}, rlbench/CartPole-expert-v0" in result.output


def test_serve_and_download_refuse_out_of_range_options_and_a_taken_port(cache):
    import socket

    for args, option in ((("serve", str(cache), "--port", "99999"), "'--port'"),
                         (("download", DATASET, "--timeout", "-1"), "'--timeout'")):  # fmt: skip
        result = CliRunner().invoke(app, ["datasets", *args])
        assert result.exit_code == 2 and option in result.output, result.output
    cache.mkdir(parents=True)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(app, ["datasets", "serve", str(cache), "--port", str(port)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"cannot listen on 127.0.0.1:{port}" in result.output


def test_publish_failures_are_one_line(cache, monkeypatch):
    from rlbench_suite.datasets import remotes

    class NoCredentialsError(Exception):  # botocore's, as s3fs raises it
        def __str__(self) -> str:
            return "Unable to locate credentials"

    def no_credentials(*args, **kwargs):
        raise NoCredentialsError

    monkeypatch.setattr(remotes, "publish", no_credentials)
    result = run("datasets", "publish", DATASET, "--to", "s3://bucket/datasets")
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "Unable to locate credentials" in lines[0], result.output
    assert "AWS_ACCESS_KEY_ID" in lines[0]


def test_publish_to_a_folder_that_cannot_be_made_says_where_and_why(cache, tmp_path):
    """A review: ``publish --to /proc/x`` answered "not found", a reader's wording."""
    assert run("datasets", "build", DATASET).exit_code == 0
    (tmp_path / "file").write_text("in the way")
    result = run("datasets", "publish", DATASET, "--to", str(tmp_path / "file" / "m"))
    assert result.exit_code == 2 and "Traceback" not in result.output
    text = " ".join(result.output.split())
    assert f"cannot publish {DATASET} to {tmp_path / 'file' / 'm'}: cannot write " in text
    assert text.endswith(": Not a directory")
    assert (tmp_path / "file").read_text() == "in the way"


def test_an_empty_remote_is_refused_not_read_as_the_filesystem_root(cache, monkeypatch):
    """A review: ``publish --to ""`` (an unset shell variable) and ``--to file://`` wrote the
    dataset under /rlbench/...; ``download --remote ""`` read from there."""
    from rlbench_suite.datasets import remotes

    assert run("datasets", "build", DATASET).exit_code == 0
    written: list[str] = []
    monkeypatch.setattr(remotes, "file_url", lambda *a: written.append(a) or "/nowhere")
    for args in (["publish", DATASET, "--to", ""], ["publish", DATASET, "--to", "file://"],
                 ["download", DATASET, "--remote", ""], ["download", DATASET, "--remote", "s3://"]):
        result = run("datasets", *args)
        assert result.exit_code == 2, (args, result.output)
        assert "names no remote: a remote is a folder, file://" in result.output
    assert written == []  # refused before any URL was made
    with pytest.raises(ValueError, match="names no remote"):
        remotes.download(get_dataset_card(DATASET), cache.parent / "other", [""])


@pytest.mark.parametrize("remote", ["mirror", "./mirror", "/srv/mirror", r"C:\\mirror",
                                    "s3://bucket", "s3://bucket/datasets", "file:///srv/m",
                                    "http://127.0.0.1:8765", "127.0.0.1:8765", "/"])
def test_remotes_that_name_a_place_are_accepted(remote):
    from rlbench_suite.datasets.remotes import check_remote

    assert check_remote(remote) == remote


@pytest.mark.parametrize("remote", ["", "  ", "file://", "file:///", "s3://", "s3:///",
                                    "http://", "https:///"])
def test_remotes_that_name_no_place_are_refused(remote):
    from rlbench_suite.datasets.remotes import check_remote

    with pytest.raises(ValueError, match="names no remote"):
        check_remote(remote)


def test_publish_of_a_corrupt_cached_copy_names_the_file_and_the_fix(cache, tmp_path):
    card = get_dataset_card(DATASET)
    assert run("datasets", "build", DATASET).exit_code == 0
    data = dataset_folder(card, cache) / card.files[0].path
    data.write_bytes(data.read_bytes()[:-10])  # truncated
    result = run("datasets", "publish", DATASET, "--to", str(tmp_path / "mirror"))
    assert result.exit_code == 2 and "Traceback" not in result.output
    text = " ".join(result.output.split())
    assert data.name in text and "truncated" in text and "nothing was published" in text
    assert f"rlbench datasets download {DATASET} --build" in text
    assert not (tmp_path / "mirror").exists() or not any((tmp_path / "mirror").rglob("*.*"))


def test_delete_removes_the_lock_file_a_failed_download_left(cache, tmp_path):
    """A review: after a download that failed (no data, only the lock file), ``delete`` said
    "not cached" and left the lock file, though the docs say it removes it."""
    card = get_dataset_card(DATASET)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run("datasets", "download", DATASET, "--remote", str(empty)).exit_code == 2
    folder = dataset_folder(card, cache)
    lock = folder.parent / f".{folder.name}.lock"
    assert lock.exists() and not folder.exists()
    result = run("datasets", "delete", DATASET)
    assert result.exit_code == 0
    assert " ".join(result.output.split()) == (
        f"not cached: {folder} (removed the lock file a download left: {lock})")
    assert not lock.exists()
    assert " ".join(run("datasets", "delete", DATASET).output.split()) == f"not cached: {folder}"
    from rlbench_suite.datasets.remotes import dataset_lock

    with dataset_lock(card, cache):  # a download going on (before its first byte): left alone
        result = run("datasets", "delete", DATASET)
        assert result.exit_code == 0 and lock.exists()
        assert " ".join(result.output.split()) == (
            f"not cached: {folder} (another process is downloading it: lock {lock}; left alone)")


def test_delete_removes_the_lock_file(cache):
    card = get_dataset_card(DATASET)
    assert run("datasets", "build", DATASET).exit_code == 0
    folder = dataset_folder(card, cache)
    assert run("datasets", "delete", DATASET).exit_code == 0
    assert not folder.exists() and not (folder.parent / f".{folder.name}.lock").exists()


def test_download_says_when_it_waits_for_another_process(cache):
    import threading

    from rlbench_suite.datasets.remotes import dataset_lock

    card = get_dataset_card(DATASET)
    held, done = threading.Event(), threading.Event()

    def hold() -> None:  # another downloader holding the dataset's lock for a second
        with dataset_lock(card, cache):
            held.set()
            done.wait(1.0)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(10)
    result = run("datasets", "download", DATASET, "--remote", str(cache / "nowhere"))
    holder.join()
    assert "waiting for another process downloading it" in result.output
    assert result.exit_code == 2  # then it went on (and found no remote)


def test_ctrl_c_while_another_process_downloads_keeps_no_claim_on_its_bytes(cache, monkeypatch):
    """Interrupted while another downloader holds the lock, the line says that download goes
    on; the ``.part`` bytes in the cache are the other's, not 'kept' by this command."""
    import threading

    from rlbench_suite.datasets import remotes
    from rlbench_suite.datasets.remotes import dataset_lock

    card = get_dataset_card(DATASET)
    part = dataset_folder(card, cache) / (DATA_FILE + ".part")
    held, done = threading.Event(), threading.Event()

    def hold() -> None:  # the other downloader, 1234 bytes in
        with dataset_lock(card, cache):
            part.parent.mkdir(parents=True)
            part.write_bytes(b"x" * 1234)
            held.set()
            done.wait(30)

    def waiting(*args, **kwargs):  # Ctrl-C while this one waits for the lock
        raise KeyboardInterrupt

    monkeypatch.setattr(remotes, "download", waiting)
    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(10)
        result = run("datasets", "download", DATASET)
        verified = run("datasets", "verify", DATASET)  # its bytes are not to resume, either
    finally:
        done.set()
        holder.join()
    assert (f"{DATASET}: another process is downloading it now (lock "
            f"{dataset_lock(card, cache).lock_file}): wait for it") in " ".join(
                verified.output.split())  # fmt: skip
    assert "resume" not in verified.output
    assert result.exit_code == 130
    lock = dataset_lock(card, cache).lock_file
    assert (f"interrupted while another process downloads {DATASET} (lock {lock}); it goes "
            "on: run the same command again to wait for it") in " ".join(result.output.split())
    assert "bytes kept" not in result.output
    assert part.stat().st_size == 1234


def test_a_piped_build_prints_progress_lines(cache, monkeypatch):
    """Piped (no terminal, no bar), a build says how far it is, at most every PIPED_EVERY_S
    seconds (here: every update), on stderr beside the summary."""
    from rlbench_suite.cli import common

    monkeypatch.setattr(common, "PIPED_EVERY_S", -1.0)
    card = get_dataset_card(DATASET)
    result = run("datasets", "build", DATASET)
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if line.startswith(f"build {DATASET}:")]
    assert lines and lines[-1].startswith(f"build {DATASET}: {card.source.episodes}/")


def test_other_bytes_of_the_cards_data_are_accepted_and_changed_files_refused(cache, monkeypatch):
    import h5py

    from rlbench_suite.datasets.cache import VERIFIED_FILE

    real = get_dataset_card(DATASET)
    assert run("datasets", "build", DATASET).exit_code == 0
    result = run("datasets", "verify", DATASET)  # the card's own bytes: a plain ok
    assert result.output.strip() == f"{DATASET}: ok (2 files, content hash matches)"
    folder = dataset_folder(real, cache)
    data, meta = folder / DATA_FILE, folder / "data" / "metadata.json"
    # a card re-recorded by a newer writer: other bytes of the data file, the same content hash
    newer = [f.model_copy(update={"sha256": "f" * 64, "size": f.size + 1})
             if f.path == DATA_FILE else f for f in real.files]  # fmt: skip
    card = real.model_copy(update={"files": newer})
    assert load(card).num_episodes == real.episodes  # load checks the data and goes on
    assert (folder / VERIFIED_FILE).is_file()
    _card_as(monkeypatch, card)
    result = run("datasets", "verify", DATASET)
    assert result.exit_code == 0, result.output
    (folder / VERIFIED_FILE).unlink()
    result = run("datasets", "verify", DATASET)  # verify reads the data back and agrees
    assert result.exit_code == 0 and (folder / VERIFIED_FILE).is_file(), result.output
    # and says so: `list` had said "partly" (another size), and a plain "ok" left it unexplained
    assert "ok (2 files, content hash matches; the data file is not the card's bytes" in " ".join(
        result.output.split())  # fmt: skip
    assert "locally verified, and `publish` needs the card's bytes" in " ".join(
        result.output.split())  # fmt: skip
    # Minari's metadata edited: refused by load and verify, whatever the data holds
    (folder / VERIFIED_FILE).unlink()
    original = meta.read_bytes()
    meta.write_bytes(original.replace(b'"ref_max_score": 500.0', b'"ref_max_score": 99999.0'))
    assert meta.read_bytes() != original
    with pytest.raises(DatasetFileError, match=r"metadata\.json: size"):
        load(card)
    assert run("datasets", "verify", DATASET).exit_code == 1
    assert not (folder / VERIFIED_FILE).exists()
    meta.write_bytes(original)
    # one reward changed: another dataset, refused with the content hashes, nothing recorded
    with h5py.File(data, "r+") as f:
        rewards = f["episode_0/rewards"]
        rewards[0] = rewards[0] + 1.0
    with pytest.raises(DatasetFileError, match=r"episodes are not the card's: content hash"):
        load(card)
    result = run("datasets", "verify", DATASET)
    assert result.exit_code == 1 and "episodes are not the card's" in result.output
    assert not (folder / VERIFIED_FILE).exists()


def test_a_cache_that_cannot_be_a_folder_is_one_line_not_a_traceback(cache, tmp_path, monkeypatch):
    """A review: `--cache FILE` (or RLBENCH_DATA_DIR naming a file) gave build and download a
    NotADirectoryError traceback."""
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine\n")
    for args in (["datasets", "build", DATASET, "--cache", str(a_file)],
                 ["datasets", "download", DATASET, "--cache", str(a_file / "sub")]):  # fmt: skip
        result = run(*args)
        assert result.exit_code == 2, result.output
        assert f"error: --cache {a_file if 'build' in args else a_file / 'sub'} cannot be a " \
            "folder: a file is in the way" in " ".join(result.output.split())
        assert "Traceback" not in result.output
    for args in (["list"], ["info", DATASET], ["verify"], ["delete", DATASET]):  # read only
        result = run("datasets", *args, "--cache", str(a_file))  # verify said "no cached datasets"
        assert result.exit_code == 2, (args, result.output)
        assert f"error: --cache {a_file} cannot be a folder: a file is in the way" in " ".join(
            result.output.split())
    monkeypatch.setenv("RLBENCH_DATA_DIR", str(a_file))
    result = run("datasets", "download", DATASET, "--build")
    assert result.exit_code == 2
    assert f"error: the dataset cache {a_file / 'datasets'} cannot be a folder" in result.output
    assert a_file.read_text() == "mine\n"


def test_a_bad_download_timeout_variable_is_named_not_blamed_on_a_remote(cache, monkeypatch):
    monkeypatch.setenv("RLBENCH_DOWNLOAD_TIMEOUT", "abc")
    result = run("datasets", "download", DATASET, "--remote", "http://127.0.0.1:9")
    assert result.exit_code == 2
    assert result.output.strip() == ("error: RLBENCH_DOWNLOAD_TIMEOUT='abc': expected a "
                                     "positive number of seconds (the default is 30)")  # fmt: skip
    offline = run("datasets", "download", DATASET, "--offline")  # reads no remote: not asked
    assert offline.exit_code == 2 and "is not complete in the cache" in offline.output
    assert "RLBENCH_DOWNLOAD_TIMEOUT" not in offline.output
    with pytest.raises(ValueError, match="RLBENCH_DOWNLOAD_TIMEOUT='0'"):
        monkeypatch.setenv("RLBENCH_DOWNLOAD_TIMEOUT", "0")
        from rlbench_suite.datasets.remotes import download

        download(get_dataset_card(DATASET), cache, ["http://127.0.0.1:9"])
    assert not dataset_folder(get_dataset_card(DATASET), cache).exists()


def test_asking_whether_another_process_downloads_creates_nothing(tmp_path):
    from rlbench_suite.datasets.remotes import lock_held_elsewhere

    card = get_dataset_card(DATASET)
    assert lock_held_elsewhere(card, tmp_path / "cache") is None
    assert not (tmp_path / "cache").exists()
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine\n")
    assert lock_held_elsewhere(card, a_file) is None  # a cache that cannot be one: no one


def test_verify_of_an_unreadable_file_does_not_advise_running_verify(cache):
    """A review: verify's own line ended "run `rlbench datasets verify` and download or build
    it again" (the reader's advice, for callers other than verify)."""
    assert run("datasets", "build", DATASET).exit_code == 0
    data_file = dataset_folder(get_dataset_card(DATASET), cache) / DATA_FILE
    raw = bytearray(data_file.read_bytes())
    raw[40:60] = b"\xff" * 20  # the root group's header: h5py cannot open it
    data_file.write_bytes(bytes(raw))
    result = run("datasets", "verify", DATASET)
    assert result.exit_code == 1
    text = " ".join(result.output.split())
    assert "not a readable dataset file, truncated or corrupt" in text
    assert "rlbench datasets verify" not in text
    assert f"run `rlbench datasets delete {DATASET}` then" in text


def test_without_the_writers_package_reading_works_and_a_build_names_the_extra(cache, tmp_path):
    """A review: with ``deflate`` (the HDF5 writer's compressor) not installed, every dataset
    command, ``list`` too, was a traceback; now only writing needs it, and says which extra."""
    assert run("datasets", "build", DATASET).exit_code == 0
    blocker = tmp_path / "blocker"  # ``import deflate`` fails as in an environment without it
    blocker.mkdir()
    (blocker / "deflate.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'deflate'\", name='deflate')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(blocker), *sys.path])}
    cli = [sys.executable, "-m", "rlbench_suite.cli", "datasets"]

    def rlbench(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*cli, *args], env=env, capture_output=True, text=True,
                              timeout=300)  # fmt: skip

    for args in (["list"], ["info", DATASET], ["verify", DATASET]):
        done = rlbench(*args)
        assert done.returncode == 0 and "Traceback" not in done.stderr, (args, done.stderr)
    built = rlbench("build", "rlbench/CartPole-expert-v0")  # compressed arrays: needs deflate
    assert built.returncode == 2, built.stderr
    assert built.stderr.strip() == ("error: No module named 'deflate': this command needs it "
                                    "(pip install 'rlbench-suite[datasets]')")  # fmt: skip
    assert not dataset_folder(get_dataset_card("rlbench/CartPole-expert-v0"), cache).exists()


def test_help_lists_the_commands_in_a_users_order():
    """A review: ``download`` came last in ``rlbench datasets --help`` (after ``serve``), as its
    module registers it last."""
    from rlbench_suite.cli.datasets_common import COMMAND_ORDER

    result = run("datasets", "--help")
    assert result.exit_code == 0, result.output
    listed = re.findall(r"^\W*([a-z]+)\s{2,}\S", result.output.split("Commands")[1], re.M)
    assert listed == list(COMMAND_ORDER)
    assert listed.index("download") == 2
