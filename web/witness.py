"""The witness over HTTP: C2SP tlog-witness `POST /add-checkpoint`, and the one place where a witness's refusals
become responses. Every answer is plain text: cosignature lines (200), the size held (409, text/x.tlog.size),
or one line saying why (400, 403, 404, 413, 422). The checks and the state are `ledger.services.witness`.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from ledger.services.witness import MAX_BODY, SIZE_TYPE, Refused, Witness

log = logging.getLogger("ledger.witness")
TEXT = "text/plain; charset=utf-8"


async def _body(request: Request) -> bytes:
    """The request body, refused (413) as soon as it is over MAX_BODY, before the rest is read."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY:
        raise Refused(413, f"the request is over {MAX_BODY} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY:
            raise Refused(413, f"the request is over {MAX_BODY} bytes")
    return bytes(body)


def create_witness_app(witness: Witness) -> FastAPI:
    """The witness's application: one route."""
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)

    @app.post("/add-checkpoint")
    async def add_checkpoint(request: Request) -> Response:
        try:
            lines = await run_in_threadpool(witness.add_checkpoint, await _body(request))
        except Refused as refused:
            if refused.status == 409:
                return Response(f"{refused.size}\n".encode(), 409, headers={"content-type": SIZE_TYPE})  # no charset
            if refused.status == 422:
                log.warning("witness: refused a log-signed checkpoint (kept): %s", refused.reason)
            return Response(refused.reason + "\n", refused.status, media_type=TEXT)
        return Response(lines, 200, media_type=TEXT)

    return app
