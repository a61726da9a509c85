"""The one HTTP client of the project (as python-tuf's `fetcher.download_bytes(url, max_length)`): the monitor's
GETs of a log's checkpoint, tiles and records, and a log's POSTs to its witnesses.

Every answer has a cap by its kind (`ledger.core.limits.ANSWERS`), checked while reading: a Content-Length
over it is refused before a byte of the body is read, and a body that streams past it is cut there. Every
request runs under a `Deadline` for the whole run, not per read: each read of the socket waits at most the
time left, and a peer that drip-feeds its answer (a byte every few seconds) is cut when the deadline passes;
so are the name's resolution (in a thread the caller stops waiting for) and each connect and send (given the
time left, not the whole: N blackholed addresses wait S in all, not N * S). Every failure to get a whole HTTP answer (no
connection, a reset, a bad status line, a short or badly chunked body, a redirect loop, a Location that is
not a URL) is `UnreachableError`: one line, exit 3. A URL the user gives is checked first (`check_url`).

It must never: read a body without a cap, wait past its deadline, decompress (it asks for `identity`), follow
more than MAX_REDIRECTS redirects or one to another scheme than http(s), nor print a URL's password (every
URL it names goes through `ledger.core.redact.redact_url`).
"""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
import time
from email.message import Message
from urllib.parse import SplitResult, urljoin, urlsplit

from ledger.core.errors import InputError, StoreError
from ledger.core.limits import ANSWERS, KiB
from ledger.core.redact import quoted, redact_url

MAX_REDIRECTS = 5
READ = 64 * KiB  # bytes asked of the socket per read: between reads the deadline is checked


class UnreachableError(StoreError):
    """The log or witness cannot be read: no answer, a refused connection, a server error, a broken HTTP
    answer, one over its cap or past the deadline, a folder without a checkpoint. Exit 3; nothing is saved."""


class DeadlineError(UnreachableError):
    """The deadline passed before the whole answer came."""


class Deadline:
    """A point in time every request of a run must be done by: `seconds` from now."""

    def __init__(self, seconds: float):
        self.seconds, self.end = seconds, time.monotonic() + seconds

    def left(self, what: str) -> float:
        """Seconds left before the deadline.
        Raises: DeadlineError, naming `what`, when none are."""
        left = self.end - time.monotonic()
        if left <= 0:
            raise DeadlineError(f"{what}: no whole answer within the run's deadline of {self.seconds:g} s (--timeout)")
        return left


def check_url(url: str, option: str) -> None:
    """That `url`, given by the user as `option`, is one this client can ask: http(s), a host, a port if any.
    Raises: InputError (one line, the URL quoted without its password) when it is not."""
    try:
        _parts(url)
    except ValueError as exc:
        raise InputError(f"{option} {quoted(url)}: {exc}") from None


def _parts(url: str) -> SplitResult:
    """`url` split, with its port read (so a bad one fails here, not in the connect).
    Raises: ValueError for what is not an http(s) URL with a host."""
    parts = urlsplit(url)  # ValueError for a bad IPv6 literal ("http://[x")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("not an http:// or https:// URL")
    parts.port  # noqa: B018 (read for its check) ValueError for a port out of range or not a number
    return parts


def get(url: str, kind: str, deadline: Deadline) -> bytes | None:
    """The body of a GET of `url` (a 200), at most ANSWERS[kind] bytes; None for a 404 or 410. Redirects are
    followed, at most MAX_REDIRECTS.
    Raises: UnreachableError (DeadlineError past the deadline) for any other answer or none."""
    for _ in range(MAX_REDIRECTS + 1):
        status, headers, body = _request("GET", url, None, kind, deadline)
        if status in (301, 302, 303, 307, 308) and headers.get("Location"):
            try:  # the peer's Location: urljoin raises ValueError for "http://[x", _parts for a bad port
                target = urljoin(url, headers["Location"])
                _parts(target)
            except ValueError as exc:
                raise UnreachableError(f"{redact_url(url)}: answered {status} to a URL it cannot be ({exc})") from None
            url = target
            continue
        if status in (404, 410):
            return None
        if status != 200:
            raise UnreachableError(f"{redact_url(url)}: answered {status}")
        return body
    raise UnreachableError(f"{redact_url(url)}: more than {MAX_REDIRECTS} redirects")


def post(url: str, body: bytes, kind: str, deadline: Deadline) -> tuple[int, str, bytes]:
    """(status, content type, body at most ANSWERS[kind] bytes) of a POST of `body` as text/plain: a refusal's
    status is an answer too; redirects are not followed.
    Raises: UnreachableError (DeadlineError past the deadline) when no whole answer comes."""
    status, headers, answer = post_answer(url, body, kind, deadline)
    return status, headers.get("Content-Type", ""), answer


def post_answer(url: str, body: bytes, kind: str, deadline: Deadline) -> tuple[int, Message, bytes]:
    """`post`, with every header of the answer (Retry-After, for a client that waits and asks again).
    Raises: UnreachableError (DeadlineError past the deadline) when no whole answer comes."""
    return _request("POST", url, body, kind, deadline)


class _Socket(socket.socket):
    """A socket whose every read and send waits at most the time left before the deadline."""

    deadline: Deadline
    what: str

    def recv_into(self, buffer, nbytes=0, flags=0):
        self.settimeout(self.deadline.left(self.what))
        return super().recv_into(buffer, nbytes, flags)

    def sendall(self, data, flags=0):  # a peer that never reads: its timeout is the whole send's (3.5+)
        self.settimeout(self.deadline.left(self.what))
        return super().sendall(data, flags)


class _TLSSocket(ssl.SSLSocket):
    """The same over TLS (its reads do not go through the plain socket's)."""

    deadline: Deadline
    what: str

    def recv_into(self, buffer, nbytes=None, flags=0):
        self.settimeout(self.deadline.left(self.what))
        return super().recv_into(buffer, nbytes, flags)

    def sendall(self, data, flags=0):
        self.settimeout(self.deadline.left(self.what))
        return super().sendall(data, flags)


class _Connection(http.client.HTTPConnection):
    """One request's connection, its socket reads bounded by the deadline."""

    def __init__(self, parts, deadline: Deadline, what: str):
        tls = parts.scheme == "https"
        super().__init__(parts.hostname, parts.port or (443 if tls else 80), timeout=deadline.left(what))
        self.tls, self.deadline, self.what = tls, deadline, what

    def connect(self) -> None:
        raw = _connect(self.host, self.port, self.deadline, self.what)
        sock = _Socket(raw.family, raw.type, raw.proto, fileno=raw.detach())
        sock.deadline, sock.what = self.deadline, self.what
        sock.settimeout(self.deadline.left(self.what))  # a new socket starts blocking; this bounds the handshake too
        if self.tls:
            context = ssl.create_default_context()
            context.sslsocket_class = _TLSSocket
            sock = context.wrap_socket(sock, server_hostname=self.host)
            sock.deadline, sock.what = self.deadline, self.what
        self.sock = sock


def _resolve(host: str, port: int, deadline: Deadline, what: str) -> list:
    """getaddrinfo's addresses for `host`, waited for at most the time left (getaddrinfo has no timeout: it
    runs in a daemon thread, left to finish on its own when the deadline passes).
    Raises: DeadlineError; OSError (or ValueError, a bad IDNA name) as getaddrinfo raises it."""
    found: list = []

    def resolve() -> None:
        try:
            found.append(socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM))
        except (OSError, ValueError) as exc:
            found.append(exc)

    left = deadline.left(what)  # past it, no thread is started
    thread = threading.Thread(target=resolve, name=f"resolve {host}", daemon=True)
    thread.start()
    thread.join(left)
    if not found:
        raise DeadlineError(f"{what}: no whole answer within the run's deadline of {deadline.seconds:g} s "
                            f"(--timeout)")
    if isinstance(found[0], Exception):
        raise found[0]
    return found[0]


def _connect(host: str, port: int, deadline: Deadline, what: str) -> socket.socket:
    """A socket connected to the first of `host`'s addresses that answers, each connect given the time left
    (not create_connection's one timeout for each address), stopping at the deadline.
    Raises: DeadlineError; OSError when no address could be connected to."""
    error: OSError = OSError(f"no address for {host}")
    for family, kind, proto, _, address in _resolve(host, port, deadline, what):
        sock = socket.socket(family, kind, proto)
        try:
            sock.settimeout(deadline.left(what))
            sock.connect(address)
            return sock
        except OSError as exc:  # socket.timeout too: the next address, if time is left
            error = exc
            sock.close()
        except BaseException:
            sock.close()
            raise
    raise error


def _request(method: str, url: str, body: bytes | None, kind: str, deadline: Deadline) -> tuple[int, Message, bytes]:
    """(status, headers (names in any case), body) of one request, the body read up to ANSWERS[kind] while the
    deadline holds.
    Raises: UnreachableError."""
    what, limit = redact_url(url), ANSWERS[kind].size
    try:
        parts = _parts(url)
    except ValueError as exc:
        raise UnreachableError(f"{what}: {exc}") from None
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
            raise UnreachableError(f"{what}: its answer of {int(length):,} bytes is over the {limit:,}-byte limit for "
                              f"a {kind}")
        chunks, size = [], 0
        while chunk := response.read1(min(READ, limit + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise UnreachableError(f"{what}: its answer is over the {limit:,}-byte limit for a {kind}")
            deadline.left(what)
        if response.length:  # what the Content-Length announced and the connection's end did not bring
            raise UnreachableError(f"{what}: the answer ended early ({size:,} bytes read, {size + response.length:,} "
                              f"expected)")
        return response.status, response.headers, b"".join(chunks)
    except UnreachableError:
        raise
    except TimeoutError:
        raise DeadlineError(f"{what}: no whole answer within the run's deadline of {deadline.seconds:g} s "
                   f"(--timeout)") from None
    except http.client.IncompleteRead as exc:
        told = f"{len(exc.partial) + exc.expected:,} expected" if exc.expected is not None else "more expected"
        raise UnreachableError(f"{what}: the answer ended early ({len(exc.partial):,} bytes read, {told})") from None
    except ssl.SSLError as exc:  # before ValueError: a certificate that does not verify is both
        raise UnreachableError(f"{what}: TLS failed ({getattr(exc, 'verify_message', None) or exc.reason or exc})") from None
    except (http.client.HTTPException, ValueError) as exc:
        raise UnreachableError(f"{what}: not an HTTP answer ({type(exc).__name__}: {str(exc)[:80]!r})") from None
    except OSError as exc:
        raise UnreachableError(f"{what}: {exc.strerror or exc}") from None
    finally:
        if connection is not None:
            connection.close()
