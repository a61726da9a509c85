"""Sending a rendered body: its cache headers and ETag, a 304 for a matching If-None-Match, and the kept answer
to a GET of a URL answered before, sent while fresh ahead of all routing (`answer_kept`) with the same
headers the full route would send.
"""

from __future__ import annotations

import logging

from fastapi import Request
from fastapi.responses import Response

from ledger.core.errors import LedgerError
from ledger.web.guard import SECURITY_HEADERS
from ledger.web.site import Body
from ledger.web.store_thread import StoreThread

log = logging.getLogger("ledger.web")


def etag_matches(header: str, etag: str) -> bool:
    """If-None-Match, weak comparison (RFC 9110 13.1.2)."""
    plain = etag.removeprefix("W/")
    return any(tag.strip() == "*" or tag.strip().removeprefix("W/") == plain for tag in header.split(","))


def headers_of(body: Body, headers: dict | None = None) -> dict:
    """The headers `body` is sent with: its cache-control and ETag, then `headers`."""
    extra = {"cache-control": body.cache, **(headers or {})}
    if body.etag:
        extra["etag"] = body.etag
    return extra


def respond(request: Request, body: Body, headers: dict | None = None) -> Response:
    """`body` as a 200, or a 304 when the request's If-None-Match names its ETag."""
    extra = headers_of(body, headers)
    if body.etag:
        match = request.headers.get("if-none-match")
        if match and etag_matches(match, body.etag):
            return Response(status_code=304, headers=extra)
    return Response(body.content, media_type=body.media_type, headers=extra)


def secured(raw: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """Raw headers with each security header they lack, as `Guard` adds them."""
    names = {name for name, _ in raw}
    return raw + [(name.encode(), value.encode()) for name, value in SECURITY_HEADERS.items()
                  if name.encode() not in names]


def sent(body: Body) -> tuple[list, list]:
    """The raw headers of a 200 and of a 304 of `body`, as the full route and `Guard` send them."""
    extra = headers_of(body)
    return (secured(Response(body.content, media_type=body.media_type, headers=extra).raw_headers),
            secured(Response(status_code=304, headers=extra).raw_headers))


async def answer_kept(ledger: StoreThread, scope, send) -> bool:
    """Send what is kept for the GET of a URL answered before, when it is fresh; False when there is none or it
    is not (the request is routed then). While the store's commit counter reads as it did when the body was
    last found current, no commit came since, and nothing is read from the store."""
    answers = ledger.answers
    url = (scope["path"], scope.get("query_string", b""))
    if not answers.knows(url):
        return False
    stamp = ledger.stamp()  # read before any check: a commit after it is seen at the next request
    kept = answers.ready(url, stamp)
    if kept is None:
        try:
            kept = await ledger(answers.fresh, url, stamp)
        except LedgerError:
            return False  # the full route says what is wrong, as it always does
        except Exception:  # a bug here must not cost the request: the full route answers it
            log.exception("ledger: the cache failed on %s", scope["path"])
            return False
        if kept is None:
            return False
    if kept.sent is None:
        kept.sent = sent(kept.body)
    answers.fast += 1
    etag = kept.body.etag
    match = next((value for name, value in scope["headers"] if name == b"if-none-match"), None) if etag else None
    if match is not None and etag_matches(match.decode("latin-1"), etag):
        await send({"type": "http.response.start", "status": 304, "headers": kept.sent[1]})
        await send({"type": "http.response.body", "body": b""})
    else:
        await send({"type": "http.response.start", "status": 200, "headers": kept.sent[0]})
        await send({"type": "http.response.body", "body": kept.body.content})
    return True
