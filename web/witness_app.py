"""The witness over HTTP: C2SP tlog-witness `POST /add-checkpoint`, and the one place where a witness's refusals
become responses. Every answer is plain text: cosignature lines (200), the size held (409, text/x.tlog.size),
or one line saying why (400, 403, 404, 413, 422, 429; for an auditing witness 424, 502, and 503 with
Retry-After while the audit of the tree is not done; 404 and 405 with `Allow: POST` for another path or
method, never FastAPI's JSON). The server in front of it (`web.server`, as for `serve`) answers 408 to a request
not received in time, 431 to a head over its limit and 503 to a connection over its limit, and closes the
connection. The checks and the state are `ledger.services.cosigning_witness`. An auditing witness also answers
`POST /paper-index` with its cosignature of the paper index note it audited.

It must never let one client's requests cost more than its share: each client address (an IPv6 client by its
/64, which one host usually holds whole) has a token bucket, and a request past it is answered 429 with
Retry-After before its body is read.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import time
from collections import OrderedDict
from collections.abc import Callable

from fastapi import FastAPI, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException

from ledger.services.cosigning_witness import MAX_BODY, RATE, SIZE_TYPE, CosignRefusedError, Witness

log = logging.getLogger("ledger.witness")
TEXT = "text/plain; charset=utf-8"
TRACKED = 4096  # client addresses remembered; the least recent is forgotten first (so it gets a full bucket)


class RateLimit:
    """A token bucket per client address: `rate` requests a second, bursts of twice that. Bounded: it tracks at
    most `tracked` addresses, so a flood of addresses costs it no more memory."""

    def __init__(self, rate: float, tracked: int = TRACKED, clock: Callable[[], float] = time.monotonic):
        self.rate, self.burst, self.tracked, self.clock = rate, max(1.0, 2 * rate), tracked, clock
        self.buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # client -> (tokens, when)

    def wait(self, address: str) -> float:
        """0 when the client at `address` may send a request now (and it is counted), else the seconds until it
        may."""
        client = _client(address)
        now = self.clock()
        tokens, then = self.buckets.pop(client, (self.burst, now))
        tokens = min(self.burst, tokens + (now - then) * self.rate)
        self.buckets[client] = (tokens - 1, now) if tokens >= 1 else (tokens, now)
        if len(self.buckets) > self.tracked:
            self.buckets.popitem(last=False)
        return 0.0 if tokens >= 1 else (1 - tokens) / self.rate


def _client(address: str) -> str:
    """The key of a client address: itself, or for IPv6 its /64."""
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.ip_network(f"{parsed}/64", strict=False))
    return str(parsed)


async def _body(request: Request) -> bytes:
    """The request body, refused (413) as soon as it is over MAX_BODY, before the rest is read."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY:
        raise CosignRefusedError(413, f"the request is over {MAX_BODY} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY:
            raise CosignRefusedError(413, f"the request is over {MAX_BODY} bytes")
    return bytes(body)


async def _routing(request: Request, exc: HTTPException) -> Response:
    """What routing refuses, in one text line as every other answer: another path (404) or another method than
    POST (405, `Allow: POST`). Neither quotes the request: its path may hold anything."""
    if exc.status_code == 405:
        return Response("method not allowed: the witness answers POST /add-checkpoint\n", 405, media_type=TEXT,
                        headers={"allow": "POST"})
    reason = "no such path: the witness answers POST /add-checkpoint" if exc.status_code == 404 else str(exc.detail)
    return Response(reason + "\n", exc.status_code, media_type=TEXT)


def create_witness_app(witness: Witness, rate: float = RATE) -> FastAPI:
    """The witness's application: one route, each client held to `rate` requests a second (0: no limit)."""
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None, exception_handlers={HTTPException: _routing})
    limit = RateLimit(rate) if rate > 0 else None

    @app.post("/add-checkpoint")
    async def add_checkpoint(request: Request) -> Response:
        if (slowed := _too_many(limit, request)) is not None:
            return slowed
        try:
            lines = await run_in_threadpool(witness.add_checkpoint, await _body(request))
        except CosignRefusedError as refused:
            if refused.status == 409:
                return Response(f"{refused.size}\n".encode(), 409, headers={"content-type": SIZE_TYPE})  # no charset
            if refused.evidence == "kept":
                log.warning("witness: kept a checkpoint %s signed as evidence: %s", refused.origin, refused.reason)
            elif refused.evidence == "full":
                log.warning("witness: the evidence kept for %s is at its cap; no more is kept: %s", refused.origin,
                            refused.reason)
            return Response(refused.reason + "\n", refused.status, media_type=TEXT, headers=_retry(refused))
        return Response(lines, 200, media_type=TEXT)

    if witness.audits:  # a plain witness answers add-checkpoint alone, as before
        _paper_index_route(app, witness, limit)
    return app


def _too_many(limit: RateLimit | None, request: Request) -> Response | None:
    """429 with Retry-After when this client's address is over `--rate`, before the body is read; else None."""
    wait = limit.wait(request.client.host if request.client else "") if limit else 0.0
    if not wait:
        return None
    return Response(f"too many requests from this address; retry in {math.ceil(wait)} s\n", 429,
                    media_type=TEXT, headers={"retry-after": str(math.ceil(wait))})


def _retry(refused: CosignRefusedError) -> dict[str, str] | None:
    """Retry-After for a refusal that says when to ask again (503: the audit of the tree is not done yet)."""
    return None if refused.retry is None else {"retry-after": str(refused.retry)}


def _paper_index_route(app: FastAPI, witness: Witness, limit: RateLimit | None) -> None:
    """`POST /paper-index`: the body a log-signed paper index note; 200 and this witness's cosignature line when
    it audited that tree and cosigned that note (`witness serve --audit`), else 404; 403, 400 and 413 as for
    add-checkpoint. The log's client asks it once the checkpoint is cosigned."""

    @app.post("/paper-index")
    async def paper_index(request: Request) -> Response:
        if (slowed := _too_many(limit, request)) is not None:
            return slowed
        try:
            body = (await _body(request)).decode("utf-8")
            line = await run_in_threadpool(witness.index_note, body)
        except UnicodeDecodeError:
            return Response("the request is not UTF-8\n", 400, media_type=TEXT)
        except CosignRefusedError as refused:
            return Response(refused.reason + "\n", refused.status, media_type=TEXT)
        return Response(line, 200, media_type=TEXT)
