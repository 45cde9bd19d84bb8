"""Downloads over a real HTTP server on 127.0.0.1: verify, resume, fall back, lock, offline."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rlbench_suite.core.dataset_cards import DATA_FILE
from rlbench_suite.datasets import remotes
from rlbench_suite.datasets.cache import dataset_folder, verify
from rlbench_suite.datasets.offline import load
from rlbench_suite.datasets.remotes import DownloadError, download, publish
from rlbench_suite.datasets.server import DatasetServer, RangeRequestHandler
from tests.dataset_helpers import published_card

pytest.importorskip("aiohttp")
pytest.importorskip("h5py")


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """A small built dataset: (card, the mirror folder holding it)."""
    return published_card(tmp_path_factory.mktemp("source"), episodes=50)


def _sent(server: DatasetServer, interval: float = 0.3) -> int:
    """The server's byte count once it stopped changing (a handler thread counts a body after
    writing it, so the client may have finished a moment before)."""
    sent = -1
    while sent != server.bytes_sent:
        sent = server.bytes_sent
        time.sleep(interval)
    return sent


@pytest.fixture
def server(published):
    served = DatasetServer(published[1]).start()
    yield served
    served.stop()


def test_download_from_a_served_folder_verifies_and_caches(published, server, tmp_path):
    card, _ = published
    seen: list[tuple[str, int, int]] = []
    folder = download(card, tmp_path, [server.url], progress=lambda *a: seen.append(a))
    assert folder == dataset_folder(card, tmp_path)
    assert verify(card, tmp_path) == []
    total = sum(f.size for f in card.files)
    assert _sent(server) == total
    assert seen[-1][1] == seen[-1][2]
    assert not list(folder.rglob("*.part"))
    # a second download finds the verified copy and sends nothing
    download(card, tmp_path, [server.url])
    assert _sent(server) == total


def test_a_checksum_mismatch_is_refused_and_nothing_enters_the_cache(published, tmp_path):
    card, mirror = published
    bad = tmp_path / "bad"
    shutil.copytree(mirror, bad)
    data = bad / card.id / DATA_FILE
    raw = bytearray(data.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    data.write_bytes(bytes(raw))
    served = DatasetServer(bad).start()
    try:
        with pytest.raises(DownloadError) as info:
            download(card, tmp_path / "cache", [served.url])
    finally:
        served.stop()
    message = str(info.value)
    assert "checksum mismatch for data/main_data.hdf5" in message
    assert card.files[0].sha256 in message
    folder = dataset_folder(card, tmp_path / "cache")
    assert not (folder / DATA_FILE).exists()
    assert not list(folder.rglob("*.part"))


def _silent_port() -> tuple[socket.socket, str]:
    """A socket that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    return listener, f"http://127.0.0.1:{listener.getsockname()[1]}"


class Broken(RangeRequestHandler):
    """Answers every request with 500."""

    def send_head(self):
        self.send_error(500, "broken on purpose")


class Slow(RangeRequestHandler):
    """Sends bodies in 32 KiB pieces, one every 50 ms (so a download can be killed half-way)."""

    send_block = 32 << 10

    def send_piece(self, source, offset, count):
        time.sleep(0.05)
        return super().send_piece(source, offset, count)


def test_404_500_and_silence_fall_back_to_the_next_remote(published, server, tmp_path):
    card, mirror = published
    empty = tmp_path / "empty"
    empty.mkdir()
    missing = DatasetServer(empty).start()
    broken = DatasetServer(mirror, handler=Broken).start()
    listener, silent = _silent_port()
    try:
        notices: list[str] = []  # a review: a fallback was silent until every remote failed
        folder = download(card, tmp_path / "cache", [missing.url, broken.url, silent, server.url],
                          timeout=1.0, notice=notices.append)  # fmt: skip
        assert len(notices) == 3 * len(card.files)
        assert notices[0].startswith(f"{missing.url}/") and "404" in notices[0]
        assert notices[0].endswith("; trying the next remote (2 of 4)")
        assert "500" in notices[1] and notices[1].endswith("(3 of 4)")
        assert "timed out" in notices[2] and notices[2].endswith("(4 of 4)")
        assert verify(card, tmp_path / "cache") == []
        assert folder.is_dir()
        with pytest.raises(DownloadError) as info:
            download(card, tmp_path / "other", [missing.url, broken.url, silent], timeout=1.0)
        message = str(info.value)
        for url in (missing.url, broken.url, silent):
            assert url in message
        assert "404" in message and "500" in message and "timed out" in message
    finally:
        missing.stop()
        broken.stop()
        listener.close()


def test_load_with_download_warns_of_each_remote_it_falls_back_from(published, server, tmp_path):
    """A review: ``load(..., download=True)`` fell back across remotes silently (the CLI
    prints a note for each)."""
    card, _ = published
    empty = tmp_path / "empty"
    empty.mkdir()
    missing = DatasetServer(empty).start()
    try:
        listed = card.model_copy(update={"remotes": [missing.url, server.url]})
        with pytest.warns(UserWarning) as caught:
            dataset = load(listed, download=True, root=tmp_path / "cache")
    finally:
        missing.stop()
    lines = [str(w.message) for w in caught]
    assert len(lines) == len(card.files)
    assert {w.filename for w in caught} == {__file__}  # the caller's line, not the library's
    assert lines[0].startswith(f"{card.id}: {missing.url}/") and "404" in lines[0]
    assert lines[0].endswith("; trying the next remote (2 of 2)")
    assert dataset.num_steps == card.steps

def _download_in_subprocess(card, cache: Path, url: str, tmp_path: Path):
    card_file = tmp_path / "card.json"
    card_file.write_text(card.model_dump_json())
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from rlbench_suite.core.dataset_cards import DatasetCard\n"
        "from rlbench_suite.datasets import remotes\n"
        f"card = DatasetCard.model_validate_json(Path({str(card_file)!r}).read_text())\n"
        f"remotes.download(card, Path({str(cache)!r}), [{url!r}])\n"
        "print('done')\n"
    )
    return subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )


def test_a_killed_download_resumes_from_its_offset(published, tmp_path):
    card, mirror = published
    slow = DatasetServer(mirror, handler=Slow).start()
    cache = tmp_path / "cache"
    part = dataset_folder(card, cache) / (DATA_FILE + ".part")
    chunk = remotes.CHUNK  # the real piece size: the file is several pieces long
    assert card.files[0].size > 2 * chunk
    try:
        proc = _download_in_subprocess(card, cache, slow.url, tmp_path)
        deadline = time.monotonic() + 60
        while not (part.exists() and part.stat().st_size >= chunk):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.02)
        proc.kill()
        proc.wait()
        _sent(slow, 1.0)  # the killed client's request in flight ends (into a broken pipe)
        offset = part.stat().st_size
        assert 0 < offset < card.files[0].size
        slow.bytes_sent = 0
        download(card, cache, [slow.url])
        total = sum(f.size for f in card.files)
        assert _sent(slow) == total - offset  # only the missing bytes were sent
        assert verify(card, cache) == []
    finally:
        slow.stop()


def test_two_concurrent_downloaders_end_with_one_correct_file(published, tmp_path):
    card, mirror = published
    slow = DatasetServer(mirror, handler=Slow).start()
    cache = tmp_path / "cache"
    try:
        procs = [_download_in_subprocess(card, cache, slow.url, tmp_path) for _ in range(2)]
        outputs = [p.communicate(timeout=120) for p in procs]
        assert [p.returncode for p in procs] == [0, 0], outputs
        assert verify(card, cache) == []
        assert _sent(slow) == sum(f.size for f in card.files)  # one download, not two
        assert not list(dataset_folder(card, cache).rglob("*.part"))
    finally:
        slow.stop()


def test_local_folder_and_file_url_remotes(published, tmp_path):
    card, mirror = published
    for remote, cache in ((str(mirror), tmp_path / "a"), (mirror.as_uri(), tmp_path / "b")):
        download(card, cache, [remote])
        assert verify(card, cache) == []


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_publish_to_and_download_from_s3_on_a_local_moto_server(published, tmp_path,
                                                                monkeypatch):  # fmt: skip
    pytest.importorskip("s3fs")
    moto_server = pytest.importorskip("moto.server")
    card, _ = published
    port = _free_port()
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    try:
        for key, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"),
                           ("AWS_DEFAULT_REGION", "us-east-1"),
                           ("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")):  # fmt: skip
            monkeypatch.setenv(key, value)
        import s3fs

        s3fs.S3FileSystem.clear_instance_cache()
        s3fs.S3FileSystem().mkdir("mirror-bucket")
        source = published_cache(published, tmp_path)
        urls = publish(card, "s3://mirror-bucket/datasets", source)
        assert urls[0] == f"s3://mirror-bucket/datasets/{card.id}/{DATA_FILE}"
        cache = tmp_path / "from-s3"
        download(card, cache, ["s3://mirror-bucket/missing", "s3://mirror-bucket/datasets"])
        assert verify(card, cache) == []
    finally:
        server.stop()


def published_cache(published, tmp_path: Path) -> Path:
    """A cache holding the published dataset (downloaded from its mirror folder)."""
    card, mirror = published
    cache = tmp_path / "source-cache"
    download(card, cache, [str(mirror)])
    return cache


def _bad_mirror(published, tmp_path: Path, keep: float) -> Path:
    """A copy of the mirror whose data file is corrupt and cut to ``keep`` of its length."""
    card, mirror = published
    bad = tmp_path / "bad-mirror"
    shutil.copytree(mirror, bad)
    data = bad / card.id / DATA_FILE
    raw = bytearray(data.read_bytes())
    raw[: len(raw) // 4] = bytes(len(raw) // 4)  # garbage at the start
    data.write_bytes(bytes(raw[: int(len(raw) * keep)]))
    return bad


def test_a_bad_first_mirror_does_not_block_a_good_second(published, server, tmp_path):
    card, _ = published
    bad = _bad_mirror(published, tmp_path, keep=0.5)  # ends early: that remote fails
    cache = tmp_path / "cache"
    download(card, cache, [str(bad), server.url])
    assert verify(card, cache) == []
    # the good remote sent the whole data file: the bad remote's bytes were dropped, not
    # resumed (its metadata file was good and kept)
    assert _sent(server) == card.files[0].size


def test_a_stale_part_is_fetched_again_from_byte_0(published, server, tmp_path):
    card, _ = published
    cache = tmp_path / "cache"
    part = dataset_folder(card, cache) / (DATA_FILE + ".part")
    part.parent.mkdir(parents=True)
    part.write_bytes(b"stale" * 1000)  # an earlier download's bytes of another file
    download(card, cache, [server.url])
    assert verify(card, cache) == []
    assert not part.exists()


def test_a_stale_part_is_named_when_the_retry_fails(published, server, tmp_path, monkeypatch):
    card, _ = published
    cache = tmp_path / "cache"
    part = dataset_folder(card, cache) / (DATA_FILE + ".part")
    part.parent.mkdir(parents=True)
    part.write_bytes(b"stale" * 1000)
    calls = []
    real = remotes.fetch_file

    def fetch_once(url, part, size, *args, **kwargs):  # the retry from byte 0 fails
        calls.append(url)
        if len(calls) == 2:
            part.write_bytes(b"x" * 100)  # some bytes arrive, then the remote fails
            raise ConnectionResetError("connection reset")
        return real(url, part, size, *args, **kwargs)

    monkeypatch.setattr(remotes, "fetch_file", fetch_once)
    with pytest.raises(DownloadError) as info:
        download(card, cache, [server.url])
    message = str(info.value)
    assert "after resuming main_data.hdf5 from byte 5000 (the bytes kept" in message
    assert "connection reset" in message
    # the failed remote's bytes were dropped, and the kept bytes put back: they may be right
    assert part.read_bytes() == b"stale" * 1000


def test_a_failed_remote_drops_only_the_bytes_it_added(tmp_path):
    part = tmp_path / "f.part"
    part.write_bytes(b"a" * 10)
    source = tmp_path / "src"
    source.write_bytes(b"a" * 10 + b"b" * 5)  # ends at 15 bytes, 20 expected
    with pytest.raises(EOFError):
        remotes.fetch_file(str(source), part, 20)
    assert part.stat().st_size == 15  # fetch_file appends; _fetch_verified cuts back
    remotes._cut_back(part, 10)
    assert part.read_bytes() == b"a" * 10
    remotes._cut_back(part, 0)
    assert not part.exists()


def test_a_failed_download_leaves_no_empty_folders_or_files(published, tmp_path):
    card, _ = published
    empty = tmp_path / "empty"
    empty.mkdir()
    cache = tmp_path / "cache"
    with pytest.raises(DownloadError) as info:
        download(card, cache, [str(empty)])
    assert "not found" in str(info.value) and "404" not in str(info.value)  # a folder: no HTTP
    assert not dataset_folder(card, cache).exists()
    assert [p.name for p in cache.rglob("*")] == ["rlbench", f".{card.id.split('/')[1]}.lock"]


def test_publish_uploads_under_a_temporary_name_then_renames(published, tmp_path, monkeypatch):
    from fsspec.implementations.local import LocalFileSystem

    card, _ = published
    source = published_cache(published, tmp_path)
    puts, moves = [], []
    real_put, real_mv = LocalFileSystem.put_file, LocalFileSystem.mv
    monkeypatch.setattr(
        LocalFileSystem,
        "put_file",
        lambda self, lpath, rpath, **kw: (puts.append(rpath), real_put(self, lpath, rpath, **kw))[
            1
        ],
    )
    monkeypatch.setattr(LocalFileSystem, "mv",
                        lambda self, a, b, **kw: (moves.append((a, b)),
                                                  real_mv(self, a, b, **kw))[1])  # fmt: skip
    out = tmp_path / "published"
    publish(card, str(out), source)
    finals = [str(out / card.id / f.path) for f in card.files]
    assert [b for _, b in moves] == finals
    assert [a for a, _ in moves] == puts and not set(puts) & set(finals)
    assert sorted(p.name for p in (out / card.id / "data").iterdir()) == sorted(
        Path(f.path).name for f in card.files
    )


def _get(url: str, headers: dict | None = None):
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.headers, answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, b""


def test_serve_refuses_symlinks_out_listings_and_part_files(published, tmp_path):
    card, mirror = published
    served_dir = tmp_path / "served"
    shutil.copytree(mirror, served_dir)
    secret = tmp_path / "secret.txt"
    secret.write_text("not yours")
    (served_dir / "escape.txt").symlink_to(secret)
    (served_dir / "escape-dir").symlink_to(tmp_path, target_is_directory=True)
    data = served_dir / card.id / DATA_FILE
    (data.parent / "main_data.hdf5.part").write_bytes(b"partial")
    (served_dir / "rlbench" / ".x.lock").write_text("")
    served = DatasetServer(served_dir).start()
    try:
        for path in (
            "/escape.txt",
            "/escape-dir/secret.txt",
            "/",
            f"/{card.id}/",
            f"/{card.id}/data",
            f"/{card.id}/{DATA_FILE}.part",
            "/rlbench/.x.lock",
        ):
            assert _get(served.url + path)[0] == 404, path
        status, _, body = _get(f"{served.url}/{card.id}/{DATA_FILE}")
        assert status == 200 and body == data.read_bytes()
    finally:
        served.stop()


def test_serve_answers_an_invalid_range_with_the_whole_file(published, server):
    card, mirror = published
    url = f"{server.url}/{card.id}/{DATA_FILE}"
    whole = (mirror / card.id / DATA_FILE).read_bytes()
    status, headers, body = _get(url, {"Range": "bytes=x-y"})
    assert status == 200 and body == whole
    status, headers, body = _get(url, {"Range": "bytes=0-9"})
    assert status == 206 and body == whole[:10]
    assert headers.get_all("Accept-Ranges") == ["bytes"]  # once, not twice


def test_an_unknown_protocol_lists_the_accepted_ones(published, tmp_path):
    card, _ = published
    with pytest.raises(DownloadError) as info:
        download(card, tmp_path / "cache", ["foo://mirror"])
    assert "Protocol not known: foo" in str(info.value)
    assert "a folder, file://, http://, https:// or s3://" in str(info.value)


def test_a_server_named_without_its_scheme_is_said_to_be_read_as_a_folder():
    """A review: `--remote 127.0.0.1:18765` answered only "not found"."""
    from rlbench_suite.datasets.remotes import describe_error

    for url in ("127.0.0.1:18765/rlbench/x", "localhost:8000/rlbench/x"):
        assert describe_error(FileNotFoundError(), url) == (
            "not found (read as a folder: a server's URL needs http:// or https://)")
    assert describe_error(FileNotFoundError(), "mirror/rlbench/x") == "not found"
    assert describe_error(FileNotFoundError(), "http://h:1/x") == "not found (404)"
