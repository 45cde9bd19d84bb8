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
from rlbench_suite.datasets.cache import dataset_folder, verify
from rlbench_suite.datasets.remotes import DownloadError, download, publish
from rlbench_suite.datasets.server import DatasetServer, RangeRequestHandler
from tests.dataset_helpers import built_card, small_card

pytest.importorskip("aiohttp")
pytest.importorskip("h5py")


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """A small built dataset: (card, the mirror folder holding it)."""
    root = tmp_path_factory.mktemp("source")
    card = built_card(small_card(episodes=40, epsilon=0.3), root / "cache")
    mirror = root / "mirror"
    publish(card, str(mirror), root / "cache")
    return card, mirror


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
    assert server.bytes_sent == total
    assert seen[-1][1] == seen[-1][2]
    assert not list(folder.rglob("*.part"))
    # a second download finds the verified copy and sends nothing
    download(card, tmp_path, [server.url])
    assert server.bytes_sent == total


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
    """Pauses before every answer (so a download can be killed half-way)."""

    def send_head(self):
        time.sleep(0.15)
        return super().send_head()


def test_404_500_and_silence_fall_back_to_the_next_remote(published, server, tmp_path):
    card, mirror = published
    empty = tmp_path / "empty"
    empty.mkdir()
    missing = DatasetServer(empty).start()
    broken = DatasetServer(mirror, handler=Broken).start()
    listener, silent = _silent_port()
    try:
        folder = download(card, tmp_path / "cache",
                          [missing.url, broken.url, silent, server.url], timeout=1.0)
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


def _download_in_subprocess(card, cache: Path, url: str, chunk: int, tmp_path: Path):
    card_file = tmp_path / "card.json"
    card_file.write_text(card.model_dump_json())
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from rlbench_suite.core.dataset_cards import DatasetCard\n"
        "from rlbench_suite.datasets import remotes\n"
        f"remotes.CHUNK = {chunk}\n"
        f"card = DatasetCard.model_validate_json(Path({str(card_file)!r}).read_text())\n"
        f"remotes.download(card, Path({str(cache)!r}), [{url!r}])\n"
        "print('done')\n"
    )
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=os.environ.copy())


def test_a_killed_download_resumes_from_its_offset(published, tmp_path):
    card, mirror = published
    slow = DatasetServer(mirror, handler=Slow).start()
    cache = tmp_path / "cache"
    part = dataset_folder(card, cache) / (DATA_FILE + ".part")
    chunk = 16384
    try:
        proc = _download_in_subprocess(card, cache, slow.url, chunk, tmp_path)
        deadline = time.monotonic() + 60
        while not (part.exists() and part.stat().st_size >= 3 * chunk):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.02)
        proc.kill()
        proc.wait()
        time.sleep(1.0)  # the killed client's request in flight ends (into a broken pipe)
        offset = part.stat().st_size
        assert 0 < offset < card.files[0].size
        slow.bytes_sent = 0
        download(card, cache, [slow.url])
        total = sum(f.size for f in card.files)
        assert slow.bytes_sent == total - offset  # only the missing bytes were sent
        assert verify(card, cache) == []
    finally:
        slow.stop()


def test_two_concurrent_downloaders_end_with_one_correct_file(published, tmp_path):
    card, mirror = published
    slow = DatasetServer(mirror, handler=Slow).start()
    cache = tmp_path / "cache"
    try:
        procs = [_download_in_subprocess(card, cache, slow.url, 16384, tmp_path)
                 for _ in range(2)]
        outputs = [p.communicate(timeout=120) for p in procs]
        assert [p.returncode for p in procs] == [0, 0], outputs
        assert verify(card, cache) == []
        assert slow.bytes_sent == sum(f.size for f in card.files)  # one download, not two
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
        for path in ("/escape.txt", "/escape-dir/secret.txt", "/", f"/{card.id}/",
                     f"/{card.id}/data", f"/{card.id}/{DATA_FILE}.part", "/rlbench/.x.lock"):
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
