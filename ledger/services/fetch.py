"""The one HTTP client of the project (as python-tuf's `fetcher.download_bytes(url, max_length)`): the monitor's
GETs of a log's checkpoint, tiles and records, and a log's POSTs to its witnesses.

Every answer has a cap by its kind (`LIMITS`), checked while reading: a Content-Length over it is refused
before a byte of the body is read, and a body that streams past it is cut there. Every request runs under a
`Deadline` for the whole run, not per read: each read of the socket waits at most the time left, and a peer
that drip-feeds its answer (a byte every few seconds) is cut when the deadline passes. Every failure to get
a whole HTTP answer (no connection, a reset, a bad status line, a short or badly chunked body, a redirect
loop) is `Unreachable`: one line, exit 3.

It must never: read a body without a cap, wait past its deadline, decompress (it asks for `identity`), follow
more than MAX_REDIRECTS redirects or one to another scheme than http(s), nor print a URL's user or password.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import time
from email.message import Message
from urllib.parse import urljoin, urlsplit

from ledger.core.errors import StoreError
from ledger.log.tiles import MAX_ENTRY, WIDTH

KiB, MiB = 1024, 1024 * 1024
# The largest answer of each kind, in bytes (docs/security.md's limits table).
LIMITS = {
    "checkpoint": 64 * KiB,  # a note with its signatures: four times a witness's 16 KiB request
    "tile": WIDTH * 32,  # a full hash tile: 256 hashes of 32 bytes
    "entry bundle": WIDTH * (2 + MAX_ENTRY),  # 256 entries, each as large as its uint16 length prefix allows
    "record": 32 * MiB,  # a citation record or its integrity evidence (the largest test record: ~0.1 MiB)
    "witness answer": 64 * KiB,  # a cosignature line, a size, or a reason
}
MAX_REDIRECTS = 5
READ = 64 * KiB  # bytes asked of the socket per read: between reads the deadline is checked


class Unreachable(StoreError):
    """The log or witness cannot be read: no answer, a refused connection, a server error, a broken HTTP
    answer, one over its cap or past the deadline, a folder without a checkpoint. Exit 3; nothing is saved."""


class Late(Unreachable):
    """The deadline passed before the whole answer came."""


class Deadline:
    """A point in time every request of a run must be done by: `seconds` from now."""

    def __init__(self, seconds: float):
        self.seconds, self.end = seconds, time.monotonic() + seconds

    def left(self, what: str) -> float:
        """Seconds left before the deadline.
        Raises: Late, naming `what`, when none are."""
        left = self.end - time.monotonic()
        if left <= 0:
            raise Late(f"{what}: no whole answer within the run's deadline of {self.seconds:g} s (--timeout)")
        return left


def shown(url: str) -> str:
    """`url` as an error line may quote it: without a user or password."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    return parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]).geturl()


def get(url: str, kind: str, deadline: Deadline) -> bytes | None:
    """The body of a GET of `url` (a 200), at most LIMITS[kind] bytes; None for a 404 or 410. Redirects are
    followed, at most MAX_REDIRECTS.
    Raises: Unreachable (Late past the deadline) for any other answer or none."""
    for _ in range(MAX_REDIRECTS + 1):
        status, headers, body = _request("GET", url, None, kind, deadline)
        if status in (301, 302, 303, 307, 308) and headers.get("Location"):
            target = urljoin(url, headers["Location"])
            if urlsplit(target).scheme not in ("http", "https"):
                raise Unreachable(f"{shown(url)}: answered {status} to a URL that is not http(s)")
            url = target
            continue
        if status in (404, 410):
            return None
        if status != 200:
            raise Unreachable(f"{shown(url)}: answered {status}")
        return body
    raise Unreachable(f"{shown(url)}: more than {MAX_REDIRECTS} redirects")


def post(url: str, body: bytes, kind: str, deadline: Deadline) -> tuple[int, str, bytes]:
    """(status, content type, body at most LIMITS[kind] bytes) of a POST of `body` as text/plain: a refusal's
    status is an answer too; redirects are not followed.
    Raises: Unreachable (Late past the deadline) when no whole answer comes."""
    status, headers, answer = _request("POST", url, body, kind, deadline)
    return status, headers.get("Content-Type", ""), answer


class _Socket(socket.socket):
    """A socket whose every read waits at most the time left before the deadline."""

    deadline: Deadline
    what: str

    def recv_into(self, buffer, nbytes=0, flags=0):
        self.settimeout(self.deadline.left(self.what))
        return super().recv_into(buffer, nbytes, flags)


class _TLSSocket(ssl.SSLSocket):
    """The same over TLS (its reads do not go through the plain socket's)."""

    deadline: Deadline
    what: str

    def recv_into(self, buffer, nbytes=None, flags=0):
        self.settimeout(self.deadline.left(self.what))
        return super().recv_into(buffer, nbytes, flags)


class _Connection(http.client.HTTPConnection):
    """One request's connection, its socket reads bounded by the deadline."""

    def __init__(self, parts, deadline: Deadline, what: str):
        tls = parts.scheme == "https"
        super().__init__(parts.hostname, parts.port or (443 if tls else 80), timeout=deadline.left(what))
        self.tls, self.deadline, self.what = tls, deadline, what

    def connect(self) -> None:
        raw = socket.create_connection((self.host, self.port), self.deadline.left(self.what))
        sock = _Socket(raw.family, raw.type, raw.proto, fileno=raw.detach())
        sock.deadline, sock.what = self.deadline, self.what
        if self.tls:
            context = ssl.create_default_context()
            context.sslsocket_class = _TLSSocket
            sock.settimeout(self.deadline.left(self.what))  # the handshake: each of its reads
            sock = context.wrap_socket(sock, server_hostname=self.host)
            sock.deadline, sock.what = self.deadline, self.what
        self.sock = sock


def _request(method: str, url: str, body: bytes | None, kind: str, deadline: Deadline) -> tuple[int, Message, bytes]:
    """(status, headers (names in any case), body) of one request, the body read up to LIMITS[kind] while the
    deadline holds.
    Raises: Unreachable."""
    what, limit = shown(url), LIMITS[kind]
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise Unreachable(f"{what}: not an http:// or https:// URL")
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    headers = {"Accept-Encoding": "identity", "Connection": "close", "User-Agent": "ledger"}
    if body is not None:
        headers["Content-Type"] = "text/plain"
    connection = None
    try:
        connection = _Connection(parts, deadline, what)
        connection.request(method, target, body=body, headers=headers)
        response = connection.getresponse()
        length = response.getheader("Content-Length")
        if length is not None and length.strip().isdigit() and int(length) > limit:
            raise Unreachable(f"{what}: its answer of {int(length):,} bytes is over the {limit:,}-byte limit for "
                              f"a {kind}")
        chunks, size = [], 0
        while chunk := response.read1(min(READ, limit + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise Unreachable(f"{what}: its answer is over the {limit:,}-byte limit for a {kind}")
            deadline.left(what)
        if response.length:  # what the Content-Length announced and the connection's end did not bring
            raise Unreachable(f"{what}: the answer ended early ({size:,} bytes read, {size + response.length:,} "
                              f"expected)")
        return response.status, response.headers, b"".join(chunks)
    except Unreachable:
        raise
    except (socket.timeout, TimeoutError):
        raise Late(f"{what}: no whole answer within the run's deadline of {deadline.seconds:g} s "
                   f"(--timeout)") from None
    except http.client.IncompleteRead as exc:
        told = f"{len(exc.partial) + exc.expected:,} expected" if exc.expected is not None else "more expected"
        raise Unreachable(f"{what}: the answer ended early ({len(exc.partial):,} bytes read, {told})") from None
    except ssl.SSLError as exc:  # before ValueError: a certificate that does not verify is both
        raise Unreachable(f"{what}: TLS failed ({getattr(exc, 'verify_message', None) or exc.reason or exc})") from None
    except (http.client.HTTPException, ValueError) as exc:
        raise Unreachable(f"{what}: not an HTTP answer ({type(exc).__name__}: {str(exc)[:80]!r})") from None
    except OSError as exc:
        raise Unreachable(f"{what}: {exc.strerror or exc}") from None
    finally:
        if connection is not None:
            connection.close()
