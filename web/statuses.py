"""Where errors become HTTP answers: the one place an error family becomes a status code (as
`cli.main.LedgerGroup` makes it an exit code), and the one-line error body. By error family:

    InputError     400  a malformed id, date, tile path or query, a query too long
    NotFoundError  404  no such paper (as of that date), a tile the tree does not hold yet, no signing key
    StoreError     503  the database is unreachable or locked past its timeout (retry later)
    IntegrityError 500  the ledger's own data fails a check (a row that no longer re-computes): the
                        server's fault, never the client's, so it is never cached
    anything else  500  a bug: "internal error" in one line; the traceback goes to the server's log only

Every error is one line, as JSON (`{"error": ..., "status": ...}`) or as HTML when the client's Accept
prefers it. It never lets a client's text break the line.
"""

from __future__ import annotations

import logging

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from ledger.core.errors import InputError, IntegrityError, LedgerError, NotFoundError, StoreError
from ledger.core.redact import redact
from ledger.web.site import error_html, error_json

STATUS = ((NotFoundError, 404), (InputError, 400), (StoreError, 503), (IntegrityError, 500))
ERRORS = {400: {"description": "A malformed id, date, tile path or query (one line)."},
          404: {"description": "No such paper, record as of that date, or tile (one line)."},
          503: {"description": "The database is unreachable (one line)."}}


log = logging.getLogger("ledger.web")


def status_of(exc: BaseException) -> int:
    """The HTTP status of an exception, by its error family (500 for anything else)."""
    for family, status in STATUS:
        if isinstance(exc, family):
            return status
    return 500


def wants_html(accept: str) -> bool:
    """Whether the client's Accept prefers HTML to JSON (a browser's does; curl's `*/*` does not)."""
    best = {"html": 0.0, "json": 0.0}
    for part in accept.split(",")[:20]:
        media, *params = [p.strip() for p in part.split(";")]
        quality = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        kind = {"text/html": "html", "application/xhtml+xml": "html", "application/json": "json"}.get(media.lower())
        if kind:
            best[kind] = max(best[kind], quality)
    return best["html"] > best["json"]


def one_line(reason: str, limit: int = 300) -> str:
    """`reason` as one line of at most `limit` characters."""
    line = " ".join(reason.split())  # no newline or control whitespace from a client's path reaches the body
    return line if len(line) <= limit else line[:limit - 3] + "..."


def error_response(request: Request, status: int, reason: str, headers: dict | None = None) -> Response:
    """The one-line error answer, as JSON or as HTML when the client prefers it; never cached."""
    reason = one_line(reason)
    html = wants_html(request.headers.get("accept", ""))
    body = error_html(status, reason) if html else error_json(status, reason)
    return Response(body, status, media_type="text/html; charset=utf-8" if html else "application/json",
                    headers={"cache-control": "no-store", **(headers or {})})


async def ledger_error(request: Request, exc: LedgerError) -> Response:
    status = status_of(exc)
    if status >= 500:
        log.error("ledger: %s %s: %s", request.method, request.url.path, redact(str(exc)))
    return error_response(request, status, str(exc))


async def invalid(request: Request, exc: RequestValidationError) -> Response:
    first = (exc.errors() or [{}])[0]
    where = ".".join(str(part) for part in first.get("loc", ())[1:]) or "request"
    return error_response(request, 400, f"{where}: {first.get('msg', 'invalid')}")


async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
    reason = f"no such path: {request.url.path}" if exc.status_code == 404 else str(exc.detail)
    headers = {name.lower(): value for name, value in (exc.headers or {}).items()}
    if exc.status_code == 405:
        # Every path of the site answers GET and HEAD alone; Starlette would name the methods of the first route
        # whose path matched, which is the HEAD route registered before its GET.
        headers["allow"] = "GET, HEAD"
    return error_response(request, exc.status_code, reason, headers)


async def bug(request: Request, exc: Exception) -> Response:
    log.exception("ledger: internal error on %s %s", request.method, request.url.path)
    return error_response(request, 500, f"internal error: {type(exc).__name__}")


HANDLERS = {LedgerError: ledger_error, RequestValidationError: invalid, StarletteHTTPException: http_error,
            Exception: bug}
