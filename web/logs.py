"""The log a server writes on stderr: one line per request (`Requests`), and the lines of the `ledger` and
`uvicorn` loggers, in plain text or JSON (`--log-format`), at the level `-v` / `--quiet` set (`configure`).

A request's line names the time, the client's address, the method, the route's pattern (as the route table
spells it), the status and the duration. It must never quote the path or the query a client sent: a query
value may hold anything, a key someone pasted included, and a path may hold control characters that would
forge a line. Nothing here reads a ledger.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import sys
import time
from typing import TextIO

import orjson

FORMATS = ("plain", "json", "none")  # none: no request lines (warnings and errors still, in plain text)
LEVELS = {"quiet": logging.WARNING, "normal": logging.INFO, "verbose": logging.DEBUG}


class Clock:
    """UTC timestamps to the millisecond, the second's part formatted once a second: a line per request must
    cost next to nothing."""

    def __init__(self) -> None:
        self.second, self.text = -1, ""

    def __call__(self, now: float) -> str:
        second = int(now)
        if second != self.second:
            self.second, self.text = second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        return f"{self.text}.{int((now - second) * 1000):03d}Z"


class Requests:
    """One line per request on `stream`, plain (`time client method route status duration`) or JSON. Lines
    are written together, at most `DELAY` seconds after the first of them or every `BATCH` lines, and at exit:
    a write per request would be a system call per request, a measurable part of the cached path's time."""

    DELAY, BATCH = 0.25, 256

    def __init__(self, form: str, stream: TextIO | None = None):
        self.form, self.stream, self.clock = form, stream, Clock()
        self.pending: list[str] = []
        atexit.register(self.flush)

    def line(self, client: str, method: str, route: str, status: int, seconds: float) -> None:
        """Write the line of one request answered (`route`: its pattern, never the path asked)."""
        now = time.time()
        second, clock = int(now), self.clock
        if second != clock.second:
            clock(now)
        at = f"{clock.text}.{int((now - second) * 1000):03d}Z"
        if self.form == "json":
            self.pending.append(orjson.dumps({"time": at, "level": "info", "msg": "request", "client": client,
                                              "method": method, "route": route, "status": status,
                                              "duration_ms": round(seconds * 1000, 3)}).decode() + "\n")
        else:
            self.pending.append(f"{at} request {client} {method} {route} {status} {seconds * 1000:.2f}ms\n")
        if len(self.pending) == 1:
            try:
                asyncio.get_running_loop().call_later(self.DELAY, self.flush)
            except RuntimeError:  # no event loop: at once
                self.flush()
        elif len(self.pending) >= self.BATCH:
            self.flush()

    def flush(self) -> None:
        """Write the lines not written yet. Raises: nothing (a closed stderr loses them)."""
        lines, self.pending = self.pending, []
        if lines:
            stream = self.stream or sys.stderr
            try:
                stream.write("".join(lines))
                stream.flush()
            except (OSError, ValueError):
                pass


class Lines(logging.Formatter):
    """A logger's record as one line, plain (`time level logger: message`) or JSON; a traceback (`-v`) is kept
    in the JSON object's `traceback`, or after the plain line."""

    def __init__(self, form: str):
        super().__init__()
        self.form, self.clock = form, Clock()

    def format(self, record: logging.LogRecord) -> str:
        at, message = self.clock(record.created), " ".join(record.getMessage().split())
        trace = self.formatException(record.exc_info) if record.exc_info else None
        if self.form == "json":
            fields = {"time": at, "level": record.levelname.lower(), "logger": record.name, "msg": message}
            if trace:
                fields["traceback"] = trace
            return orjson.dumps(fields).decode()
        return f"{at} {record.levelname.lower()} {record.name}: {message}" + (f"\n{trace}" if trace else "")


def configure(form: str, level: str) -> Requests | None:
    """Send the `ledger` and `uvicorn` loggers to stderr in `form` at `level` ("quiet", "normal", "verbose");
    the request lines' writer, or None when there are none (`--log-format none`, or `--quiet`).
    Raises: nothing."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(Lines("json" if form == "json" else "plain"))
    for name in ("ledger", "uvicorn"):
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        # uvicorn's start-up and shutdown lines are its INFO: shown with -v only.
        logger.setLevel(LEVELS[level] if name == "ledger" or level == "verbose" else logging.WARNING)
        logger.propagate = False
    return Requests(form) if form != "none" and level != "quiet" else None
