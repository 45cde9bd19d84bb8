"""The site as a dataset remote, through ``rlbench leaderboard serve`` (uvicorn on 127.0.0.1):
the /datasets page lists every card, files are served with byte ranges and nothing outside
the cards' files, `rlbench datasets download --remote <site>` ends verified, and the static
export carries the page and the files."""

from __future__ import annotations

import hashlib
import html
import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from rlbench_suite.core.dataset_cards import dataset_cards
from tests.leaderboard_support import cached_dataset, serve_cli

pytestmark = pytest.mark.slow
DATASET = "rlbench/CartPole-medium-v0"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """(base URL, card, environment of the server) with one small dataset in its cache."""
    root = tmp_path_factory.mktemp("datasets-site")
    content, data = root / "content", root / "data"
    card = cached_dataset(content, data)
    (data / "datasets" / "secret.txt").write_text("not a dataset file")
    env = {"RLBENCH_CONTENT_ROOT": str(content), "RLBENCH_DATA_DIR": str(data)}
    with serve_cli(data, "--no-seed", "--no-worker", env=env) as (base, _):
        yield base, card, env


def file_bytes(site, path: str) -> bytes:
    _, card, env = site
    return (Path(env["RLBENCH_DATA_DIR"]) / "datasets" / card.id / path).read_bytes()


def test_the_page_lists_every_card_with_sizes_hashes_and_links(site):
    base, card, _ = site
    page = httpx.get(base + "/datasets").text
    for other in dataset_cards():
        assert f'<tr id="{other}">' in page
    row = page.split(f'<tr id="{DATASET}">', 1)[1].split("</tr>", 1)[0]
    for f in card.files:
        assert f'<a class="download" href="/{DATASET}/{f.path}" download>' in row
        assert f.sha256 in row and f"{f.size} bytes" in row
    assert "not on this server" not in row
    other = page.split('<tr id="rlbench/Acrobot-expert-v0">', 1)[1].split("</tr>", 1)[0]
    assert "not on this server" in other
    assert "rlbench datasets build rlbench/Acrobot-expert-v0" in other
    assert 'class="download"' not in other
    assert html.escape(f"--remote {base}") in page
    # the page says how many are here, and how its operator adds the others
    assert f"1 of {len(dataset_cards())} datasets are on this server." in page
    # one build command, the one beside each dataset (the review found a second, --build)
    assert "--build" not in page
    said = "building it with the command shown beside it (<code>rlbench datasets build ID</code>)"
    assert said in page
    builds = set(re.findall(r"<code>(rlbench datasets \w+) ", page))
    assert builds == {"rlbench datasets build", "rlbench datasets download"}
    assert re.findall(r"<code>rlbench datasets download ([^<]*)</code>", page) == [
        f"ID --remote {html.escape(base)}", "ID --remote URL"]  # fmt: skip


def test_files_are_served_whole_and_by_byte_range(site):
    base, card, _ = site
    url = f"{base}/{DATASET}/{card.files[0].path}"
    whole = file_bytes(site, card.files[0].path)
    answer = httpx.get(url)
    assert answer.status_code == 200 and answer.content == whole
    assert answer.headers["accept-ranges"] == "bytes"
    part = httpx.get(url, headers={"Range": "bytes=10-99"})
    assert part.status_code == 206 and part.content == whole[10:100]
    assert part.headers["content-range"] == f"bytes 10-99/{len(whole)}"
    tail = httpx.get(url, headers={"Range": "bytes=-7"})
    assert tail.status_code == 206 and tail.content == whole[-7:]
    past = httpx.get(url, headers={"Range": f"bytes={len(whole)}-"})
    assert past.status_code == 416 and past.headers["content-range"] == f"bytes */{len(whole)}"
    invalid = httpx.get(url, headers={"Range": "lines=1-2"})  # ignored: the whole file
    assert invalid.status_code == 200 and invalid.content == whole
    head = httpx.head(url)
    assert head.status_code == 200 and head.headers["content-length"] == str(len(whole))


@pytest.mark.parametrize(
    "path",
    [
        f"/{DATASET}/..%2F..%2Fsecret.txt",
        f"/{DATASET}/data/..%2F..%2F..%2Fsecret.txt",
        "/rlbench/..%2Fsecret.txt/x",
        f"/{DATASET}/data/main_data.hdf5.part",
        f"/{DATASET}/data",
        f"/{DATASET}/%2Fetc%2Fpasswd",
        "/rlbench/Acrobot-expert-v0/data/main_data.hdf5",  # a card's file the server lacks
    ],
)
def test_nothing_but_the_cards_files_is_served(site, path):
    base = site[0]
    with httpx.Client() as client:
        answer = client.send(client.build_request("GET", base + path))
    assert answer.status_code == 404, (path, answer.text[:200])
    assert "not a dataset file" not in answer.text and "root:" not in answer.text


def test_datasets_download_from_the_site_ends_verified(site, tmp_path):
    base, card, env = site
    cache = tmp_path / "cache"
    done = subprocess.run(
        [sys.executable, "-m", "rlbench_suite.cli", "datasets", "download", DATASET,
         "--remote", base, "--cache", str(cache)],
        env={**os.environ, "RLBENCH_CONTENT_ROOT": env["RLBENCH_CONTENT_ROOT"]},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{DATASET}: verified" in done.stdout
    for f in card.files:
        got = (cache / DATASET / f.path).read_bytes()
        assert hashlib.sha256(got).hexdigest() == f.sha256


def test_the_static_export_has_the_page_and_the_files(site, tmp_path):
    _, card, env = site
    out = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "rlbench_suite.cli", "leaderboard", "export", str(out)],
        env={**os.environ, **env}, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    page = (out / "datasets" / "index.html").read_text()
    assert f'href="/{DATASET}/{card.files[0].path}"' in page
    for f in card.files:
        exported = (out / DATASET / f.path).read_bytes()
        assert hashlib.sha256(exported).hexdigest() == f.sha256
    assert not (out / "secret.txt").exists()


def test_a_listed_file_linked_out_of_the_cache_is_refused(site, tmp_path):
    base, _, env = site
    other = dataset_cards()["rlbench/Acrobot-expert-v0"]
    listed = other.files[-1]
    outside = tmp_path / "outside.bin"
    outside.write_bytes(b"x" * listed.size)  # the card's size: only the link's target is wrong
    link = Path(env["RLBENCH_DATA_DIR"]) / "datasets" / other.id / listed.path
    link.parent.mkdir(parents=True)
    link.symlink_to(outside)
    try:
        answer = httpx.get(f"{base}/{other.id}/{listed.path}")
        assert answer.status_code == 404
    finally:
        link.unlink()
