"""The one HTTP client (`ledger.services.fetch`) against hostile peers: raw sockets on 127.0.0.1, each in a
thread, answering with what a broken or hostile host sends (a huge Content-Length, an endless body, a
drip-feed, a bad status line, a short body, a reset, bad chunks, a redirect loop, a gzip bomb). The monitor
ends with exit 3 and one line; `checkpoint --witness` with one refusal line per witness, within its timeout.
"""

from __future__ import annotations

import gzip
import shutil
import socket
import ssl
import struct
import subprocess
import threading
import time

import pytest

from ledger.core.limits import ANSWERS, NOTE, RECORD
from ledger.log.tiles import MAX_ENTRY, WIDTH
from ledger.services.fetch import Deadline, DeadlineError, UnreachableError, get, post
from tests.conftest import run_ledger


def _head(conn: socket.socket) -> bytes:
    """The request's head and body (a POST's, by its Content-Length), read with a bound."""
    data = b""
    while b"\r\n\r\n" not in data and len(data) < 65536:
        got = conn.recv(4096)
        if not got:
            return data
        data += got
    head, _, body = data.partition(b"\r\n\r\n")
    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    while len(body) < min(length, 1 << 20):
        got = conn.recv(4096)
        if not got:
            break
        body += got
    return head


def _drip(conn, stop, first: bytes) -> None:
    conn.sendall(first)
    for _ in range(240):  # one byte every 0.5 s, for two minutes at most: "forever" to a client
        if stop.wait(0.5):
            return
        conn.sendall(b"x")


def _endless(conn, stop, first: bytes) -> None:
    conn.sendall(first)
    for _ in range(1024):  # 64 MiB at most, in 64 KiB pieces, until the client hangs up
        if stop.is_set():
            return
        conn.sendall(b"x" * 65536)


BOMB = gzip.compress(b"\0" * (128 << 20), 9)  # 128 MiB of zeros in ~127 KiB

BEHAVIOURS = {
    "length": lambda c, s: (c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000\r\n\r\n"), s.wait(30)),
    "endless": lambda c, s: _endless(c, s, b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"),
    "drip": lambda c, s: _drip(c, s, b"HTTP/1.1 200 OK\r\n"),
    "drip-body": lambda c, s: _drip(c, s, b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"),
    "status": lambda c, s: c.sendall(b"HELLO THERE\r\n\r\n"),
    "short": lambda c, s: c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789"),
    "reset": lambda c, s: c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)),
    "chunks": lambda c, s: c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n"),
    "loop": lambda c, s: c.sendall(b"HTTP/1.1 302 Found\r\nLocation: /checkpoint\r\nContent-Length: 0\r\n\r\n"),
    "bad-location": lambda c, s: c.sendall(b"HTTP/1.1 302 Found\r\nLocation: http://[x\r\nContent-Length: 0\r\n\r\n"),
    "bad-port": lambda c, s: c.sendall(b"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:99999/\r\n"
                                       b"Content-Length: 0\r\n\r\n"),
    "gzip": lambda c, s: c.sendall(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: "
                                   + str(len(BOMB)).encode() + b"\r\n\r\n" + BOMB),
}


class Peer:
    """A host on 127.0.0.1 that reads each request and answers it as `behaviour` does, then hangs up."""

    def __init__(self, behaviour: str):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.stop, self.behaviour, self.requests = threading.Event(), BEHAVIOURS[behaviour], 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                continue
            self.requests += 1
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.settimeout(30)
                _head(conn)
                self.behaviour(conn, self.stop)
            except OSError:
                pass  # the client hung up, as it should

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        self.listener.close()


@pytest.fixture
def peer():
    made: list[Peer] = []
    yield lambda behaviour: made.append(Peer(behaviour)) or made[-1]
    for running in made:
        running.close()


@pytest.mark.parametrize("behaviour, said", [
    ("length", "its answer of 1,000,000,000 bytes is over the 65,536-byte limit for a checkpoint"),
    ("endless", "its answer is over the 65,536-byte limit for a checkpoint"),
    ("gzip", f"its answer of {len(BOMB):,} bytes is over the 65,536-byte limit for a checkpoint"),
    ("status", "not an HTTP answer (BadStatusLine"),
    ("short", "the answer ended early (10 bytes read, 100 expected)"),
    ("reset", "Connection reset by peer"),
    ("chunks", "the answer ended early"),
    ("loop", "more than 5 redirects"),
    ("bad-location", "answered 302 to a URL it cannot be (Invalid IPv6 URL)"),
    ("bad-port", "answered 302 to a URL it cannot be (Port out of range 0-65535)"),
])
def test_a_broken_or_hostile_host_is_unreachable_in_one_line(peer, behaviour, said):
    host = peer(behaviour)
    started = time.monotonic()
    with pytest.raises(UnreachableError) as caught:
        get(f"{host.url}/checkpoint", "checkpoint", Deadline(20))
    assert time.monotonic() - started < 5  # refused as it came, not at the deadline
    assert str(caught.value).startswith(f"{host.url}/checkpoint: ") and said in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("behaviour", ["drip", "drip-body"])
def test_a_drip_feed_is_cut_at_the_deadline_of_the_whole_run(peer, behaviour):
    host = peer(behaviour)
    started = time.monotonic()
    with pytest.raises(DeadlineError) as caught:
        get(f"{host.url}/checkpoint", "checkpoint", Deadline(1.5))
    assert 1.4 < time.monotonic() - started < 2.5
    assert str(caught.value) == (f"{host.url}/checkpoint: no whole answer within the run's deadline of 1.5 s "
                                 f"(--timeout)")


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl makes the test certificate")
def test_over_tls_a_drip_feed_is_cut_too_and_a_certificate_is_checked(tmp_path, monkeypatch):
    made = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "key.pem", "-out",
                           "cert.pem", "-days", "1", "-subj", "/CN=localhost", "-addext",
                           "subjectAltName=IP:127.0.0.1"], cwd=tmp_path, capture_output=True, timeout=60)
    assert made.returncode == 0, made.stderr
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    listener, stop = socket.create_server(("127.0.0.1", 0)), threading.Event()
    url = f"https://127.0.0.1:{listener.getsockname()[1]}/checkpoint"

    def serve() -> None:
        for _ in range(2):
            conn, _ = listener.accept()
            try:
                with context.wrap_socket(conn, server_side=True) as tls:
                    tls.settimeout(30)
                    _head(tls)
                    _drip(tls, stop, b"HTTP/1.1 200 OK\r\n")
            except OSError:
                pass  # the client hung up, as it should

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        with pytest.raises(UnreachableError, match="TLS failed .*self.signed"):
            get(url, "checkpoint", Deadline(5))  # not trusted
        monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "cert.pem"))
        started = time.monotonic()
        with pytest.raises(DeadlineError):
            get(url, "checkpoint", Deadline(1.5))
        assert 1.4 < time.monotonic() - started < 2.5
    finally:
        stop.set()
        listener.close()
        thread.join(5)


def test_caps_and_answers_that_hold(peer):
    host = peer("short")
    # One table (ledger.core.limits): a record the ledger takes is never too large to fetch.
    assert ANSWERS["tile"].size == WIDTH * 32 == 8192 and ANSWERS["entry bundle"].size == WIDTH * (2 + MAX_ENTRY)
    assert ANSWERS["record"] == RECORD and ANSWERS["checkpoint"] == NOTE
    with pytest.raises(DeadlineError):
        get(f"{host.url}/checkpoint", "checkpoint", Deadline(0))
    assert host.requests == 0  # a passed deadline sends nothing
    with pytest.raises(UnreachableError, match="^ftp://127.0.0.1/x: not an http:// or https:// URL$"):
        get("ftp://127.0.0.1/x", "checkpoint", Deadline(5))
    with pytest.raises(UnreachableError) as caught:
        get("http://user:secret@127.0.0.1:1/checkpoint", "checkpoint", Deadline(5))
    # Through the one URL redactor (ledger.core.redact.redact_url): the password hidden, the user kept.
    assert "secret" not in str(caught.value)
    assert str(caught.value).startswith("http://user:***@127.0.0.1:1/checkpoint: ")


@pytest.mark.parametrize("behaviour", ["status", "short", "reset", "length", "drip"])
def test_the_monitor_exits_3_with_one_line(keyed, peer, behaviour):
    host = peer(behaviour)
    started = time.monotonic()
    result = keyed("monitor", host.url, "--verifier-key", "ledger.vkey", "--state", "state", "--timeout", "1")
    assert time.monotonic() - started < 3
    assert result.exit_code == 3 and result.stdout == ""
    assert result.stderr.startswith(f"ledger: {host.url}/checkpoint: ") and result.stderr.count("\n") == 1


def test_a_published_folder_is_read_up_to_its_caps(keyed, tmp_path):
    made = keyed("publish", "--as-of", "2026-09-03", "out", "--key", "ledger.key")
    assert made.exit_code == 0, made.stderr
    (tmp_path / "out" / "checkpoint").unlink()
    (tmp_path / "out" / "checkpoint").symlink_to("/dev/zero")
    zero = keyed("monitor", "out", "--verifier-key", "ledger.vkey", "--state", "state")
    assert zero.exit_code == 3 and zero.stderr == "ledger: out/checkpoint: not a regular file\n"
    (tmp_path / "out" / "checkpoint").unlink()
    (tmp_path / "out" / "checkpoint").write_bytes(b"x" * (64 * 1024 + 1))
    big = keyed("monitor", "out", "--verifier-key", "ledger.vkey", "--state", "state")
    assert big.exit_code == 3 and big.stderr == "ledger: out/checkpoint: over the 65,536-byte limit for a checkpoint\n"
    assert not (tmp_path / "state" / "checkpoint").exists()


def test_checkpoint_witness_returns_within_its_timeout_whatever_witnesses_do(keyed, peer, tmp_path):
    hosts = {kind: peer(kind) for kind in ("drip", "drip-body", "status", "short", "reset", "endless")}
    options = []
    for kind, host in hosts.items():
        (tmp_path / kind).mkdir()
        assert run_ledger("keygen", "--cosigner", f"{kind}.example", cwd=tmp_path / kind).returncode == 0
        options += ["--witness", f"{host.url}={tmp_path / kind / 'witness.vkey'}"]
    started = time.monotonic()
    refused = keyed("checkpoint", "--key", "ledger.key", "--timeout", "2", *options)
    took = time.monotonic() - started
    assert took < 3, took  # S plus a second
    assert refused.exit_code == 1 and refused.stdout == "", refused.stderr
    said = dict(line.split(": ", 2)[1:] for line in refused.stderr.strip().split("\n")[:-1])
    url = {kind: f"{host.url}/add-checkpoint" for kind, host in hosts.items()}
    assert said["witness drip.example"] == said["witness drip-body.example"] == "no answer within 2 s"
    assert said["witness status.example"].startswith(f"unreachable at {url['status']}: not an HTTP answer")
    assert said["witness short.example"] == (f"unreachable at {url['short']}: the answer ended early (10 bytes "
                                             f"read, 100 expected)")
    assert said["witness reset.example"] == f"unreachable at {url['reset']}: Connection reset by peer"
    assert said["witness endless.example"] == (f"unreachable at {url['endless']}: its answer is over the "
                                               f"65,536-byte limit for a witness answer")
    assert len(said) == 6


@pytest.fixture
def blackhole():
    """A listening socket on 127.0.0.1 whose accept queue is full and never drained (backlog 0, one connection
    held): the kernel drops further SYNs, so a connect to it waits as one to a blackholed address does."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    filler = socket.create_connection(listener.getsockname(), timeout=5)
    probe = socket.socket()
    probe.settimeout(0.3)
    with pytest.raises(OSError):  # the trick holds on this kernel: a connect now waits
        probe.connect(listener.getsockname())
    probe.close()
    yield listener.getsockname()
    filler.close()
    listener.close()


def test_every_address_of_a_name_shares_the_one_deadline(blackhole, monkeypatch):
    """A name resolving to three addresses that never answer a SYN: the connects share the deadline (one
    S in all), not create_connection's S for each (3 S)."""
    resolved = [(socket.AF_INET, socket.SOCK_STREAM, 6, "", blackhole)] * 3
    monkeypatch.setattr(socket, "getaddrinfo", lambda *args, **kwargs: resolved)
    started = time.monotonic()
    with pytest.raises(DeadlineError, match=r"^http://blackholed\.test/checkpoint: no whole answer within"):
        get("http://blackholed.test/checkpoint", "checkpoint", Deadline(1))
    assert time.monotonic() - started < 1.8


def test_a_name_that_never_resolves_is_cut_at_the_deadline(monkeypatch):
    """getaddrinfo has no timeout (a DNS server that never answers): it is waited for the time left only."""
    release = threading.Event()
    monkeypatch.setattr(socket, "getaddrinfo", lambda *args, **kwargs: release.wait(30) and [])
    started = time.monotonic()
    try:
        with pytest.raises(DeadlineError):
            get("http://unresolved.test/checkpoint", "checkpoint", Deadline(1))
        assert time.monotonic() - started < 1.8
    finally:
        release.set()


def test_a_peer_that_never_reads_a_post_is_cut_at_the_deadline():
    """A witness that accepts and never reads: the request's send waits the time left, not forever."""
    listener = socket.create_server(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/add-checkpoint"
    raised: list[BaseException] = []

    def send() -> None:
        try:
            post(url, b"x" * (64 << 20), "witness answer", Deadline(1))  # past any socket buffer
        except BaseException as exc:  # noqa: BLE001 (handed to the test's thread)
            raised.append(exc)

    thread = threading.Thread(target=send, daemon=True)
    started = time.monotonic()
    thread.start()
    conn, _ = listener.accept()
    try:
        thread.join(5)
        assert not thread.is_alive(), "the send outlived its deadline"
        assert time.monotonic() - started < 2.5
        assert len(raised) == 1 and isinstance(raised[0], DeadlineError), raised
    finally:
        conn.close()  # a send still blocked (without the fix) gets a reset and ends
        listener.close()
        thread.join(5)


@pytest.mark.parametrize("url, said", [
    ("http://[::1", "Invalid IPv6 URL"),
    ("http://127.0.0.1:99999", "Port out of range"),
])
def test_a_bad_url_the_user_gives_is_exit_2_in_one_line(keyed, tmp_path, url, said):
    (tmp_path / "w").mkdir()
    assert run_ledger("keygen", "--cosigner", "w.example", cwd=tmp_path / "w").returncode == 0
    witness = keyed("checkpoint", "--key", "ledger.key", "--witness", f"{url}=w/witness.vkey")
    assert witness.exit_code == 2 and witness.stdout == "", witness.stderr
    assert witness.stderr.startswith(f"ledger: --witness '{url}': {said}") and witness.stderr.count("\n") == 1
    monitor = keyed("monitor", url, "--verifier-key", "ledger.vkey", "--state", "state")
    assert monitor.exit_code == 2 and monitor.stdout == "", monitor.stderr
    assert monitor.stderr.startswith(f"ledger: the log's URL '{url}': {said}") and monitor.stderr.count("\n") == 1
