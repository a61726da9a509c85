"""The one place that runs an application on uvicorn, for `ledger serve` and `ledger witness serve`, with the
limits a server facing the network states (as Go's `http.Server{MaxHeaderBytes, ReadHeaderTimeout,
IdleTimeout}` and a listener's connection cap):

    header bytes   a request's head (request line and headers) over it is answered 431 and the connection closed,
                   as soon as that many bytes came without the blank line that ends a head: never buffered whole
    header timeout a request not received whole (head and body) within that many seconds of its first byte, or
                   of the connection's opening, is answered 408 and closed: a client that sends half a request
                   and stalls (or nothing at all) holds a connection for that long at most; and a client that
                   stops reading its answers (the send buffer full for that long) is cut off, its answers dropped
    idle timeout   a keep-alive connection with no new request for that long is closed
    connections    a connection over that many open at once is answered 503 and closed before anything is read

uvicorn's own options cover the idle timeout only; its httptools parser (kept: `benchmarks/serve.py` measured
it several times faster than h11 on the cached path) has no header limit, and nothing times out a connection
that never completes a request. `Protocol` adds both, counting bytes as they arrive. Floods from many machines
are out of scope: they belong to a reverse proxy. On SIGTERM (or Ctrl-C) `run` stops as uvicorn does, with a
bound: it stops listening, lets the requests in flight finish for up to the grace period, and returns (exit 0).
This module never reads a ledger and never decides what an application answers.
"""

from __future__ import annotations

import logging
import signal
from dataclasses import dataclass

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

log = logging.getLogger("ledger.server")


@dataclass(frozen=True)
class Limits:
    """What one server allows a client: see the module's docstring. The defaults are the command line's
    (`cli.publish_commands`), which says why."""

    header_bytes: int
    header_timeout: float
    idle_timeout: float
    connections: int


def _refusal(status: bytes, reason: str) -> bytes:
    """A whole response that closes the connection: the status line, a plain-text line, no more."""
    body = (reason + "\n").encode()
    return (b"HTTP/1.1 " + status + b"\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: "
            + str(len(body)).encode() + b"\r\nconnection: close\r\ncache-control: no-store\r\n\r\n" + body)


class Protocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, with the header limit, the header timeout and the connection cap of
    `config.limits`. `head` counts the bytes of the request being read, until its headers are complete (then
    None); the timer runs from a request's first byte (or the connection's opening) until it is read whole."""

    def __init__(self, config, server_state, app_state, _loop=None) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.limits: Limits = config.limits
        self.head: int | None = 0
        self.reading = None  # the header timeout's timer, while a request is being read
        self.stalled = None  # the same timeout's, while the client reads none of what is sent

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        if len(self.connections) > self.limits.connections:
            self._refuse(b"503 Service Unavailable", f"over {self.limits.connections} connections at once; retry later")
            return
        self._start_reading()

    def connection_lost(self, exc) -> None:
        self._stop_reading()
        if self.stalled is not None:
            self.stalled.cancel()
            self.stalled = None
        super().connection_lost(exc)

    def pause_writing(self) -> None:
        super().pause_writing()
        if self.stalled is None:
            self.stalled = self.loop.call_later(self.limits.header_timeout, self._not_reading)

    def resume_writing(self) -> None:
        super().resume_writing()
        if self.stalled is not None:
            self.stalled.cancel()
            self.stalled = None

    def _not_reading(self) -> None:
        # abort, not close: close would wait for the buffer to drain, which is what never happens.
        self.stalled = None
        log.info("server: %s: reads none of its answers for %g s", self.client[0] if self.client else "?",
                 self.limits.header_timeout)
        self.transport.abort()

    def data_received(self, data: bytes) -> None:
        if self.transport.is_closing():
            return
        if self.reading is None:  # the first byte of a request after an idle keep-alive wait
            self._start_reading()
        # Feed the parser no more of a head than the limit allows, so that a head over it is never buffered.
        while self.head is not None and data:
            room = self.limits.header_bytes - self.head
            if room <= 0:
                self._refuse(b"431 Request Header Fields Too Large",
                             f"the request's head is over {self.limits.header_bytes} bytes")
                return
            part, data = data[:room], data[room:]
            self.head += len(part)
            super().data_received(part)
            if self.transport.is_closing():
                return
        if data:
            super().data_received(data)

    def on_headers_complete(self) -> None:
        self.head = None
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self.head = 0  # the next request's head starts here
        self._stop_reading()

    def _start_reading(self) -> None:
        self.reading = self.loop.call_later(self.limits.header_timeout, self._too_slow)

    def _stop_reading(self) -> None:
        if self.reading is not None:
            self.reading.cancel()
            self.reading = None

    def _too_slow(self) -> None:
        self.reading = None
        if self.transport.is_closing():
            return
        if self.head is not None and self.cycle is not None and not self.cycle.response_complete:
            self._start_reading()  # a pipelined head, behind an answer still being sent: its time starts after
        elif self.head is not None:  # still in the head: nothing was handed to the application
            self._refuse(b"408 Request Timeout",
                         f"the request was not received within {self.limits.header_timeout:g} s")
        else:  # the body is late: the application sees the client leave
            self.transport.close()

    def _refuse(self, status: bytes, reason: str) -> None:
        self._stop_reading()
        # Not a warning: each costs its sender a connection, and a flood of them must not flood the log too.
        log.info("server: %s: %s", self.client[0] if self.client else "?", reason)
        self.transport.write(_refusal(status, reason))
        self.transport.close()


def _stopped(signum, frame) -> None:
    """SIGTERM after uvicorn's graceful stop: uvicorn raises the signal it caught again once it has stopped,
    and the default action would end the process by the signal, not with exit 0."""


def run(app, host: str, port: int, limits: Limits, workers: int = 1, grace: float = 10.0,
        metrics_port: int | None = None) -> None:
    """Serve `app` (an application, or with `workers` > 1 the import string of a factory) on host:port until
    interrupted, with `limits`; also on `metrics_port` when given (the app answers /metrics there only).
    On SIGTERM or Ctrl-C it stops listening, lets the requests in flight finish for up to `grace` seconds
    (then cancels them), and returns.
    Raises: SystemExit when uvicorn cannot start (as `uvicorn.run` does)."""
    import uvicorn

    # The idle timeout is uvicorn's own. No route takes a WebSocket: an upgrade is answered as plain HTTP, never
    # handed to another protocol without these limits. Logging is `web.logs`'s (log_config None).
    config = uvicorn.Config(app, host=host, port=port, http=Protocol, ws="none", timeout_keep_alive=limits.idle_timeout,
                            workers=workers, factory=workers > 1, log_config=None, access_log=False,
                            timeout_graceful_shutdown=grace)
    config.limits = limits  # read by each connection's Protocol; pickled with the config into each worker
    sockets = [config.bind_socket()]
    if metrics_port is not None:
        config.port = metrics_port
        sockets.append(config.bind_socket())
        config.port = port
    signal.signal(signal.SIGTERM, _stopped)
    if workers > 1:
        from uvicorn.supervisors import Multiprocess

        Multiprocess(config, sockets=sockets).run()
        return
    server = uvicorn.Server(config)
    try:
        server.run(sockets=sockets)
    except KeyboardInterrupt:
        pass
    if not server.started:
        raise SystemExit(3)
