"""The guard before routing (plain ASGI middleware): the limits of a request's path and query, checked before
anything parses them; the redirects a static host would answer (a trailing slash, a paper's guessed paths);
and the security headers every answer carries. It never reads the ledger.
"""

from __future__ import annotations

from urllib.parse import quote

from fastapi import Request
from fastapi.responses import Response
from starlette.datastructures import MutableHeaders

from ledger.web.routes import guessed
from ledger.web.site import CSP
from ledger.web.statuses import error_response

MAX_QUERY = 1024  # bytes of query string; a longer one is refused (400), not parsed
MAX_PATH = 1024  # bytes of path
SECURITY_HEADERS = {
    "content-security-policy": CSP + "; frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "access-control-allow-origin": "*",  # public, read-only, no credentials: auditors' tools may fetch it
}


class Guard:
    """Plain ASGI middleware: refuses overlong paths and queries before anything parses them, redirects a
    trailing slash (as static hosts serve `citation-record/`) and a paper's guessed paths (`routes.guessed`),
    and adds the security headers."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        raw_path = scope.get("raw_path") or scope["path"].encode()
        refusal = None
        if len(scope.get("query_string", b"")) > MAX_QUERY:
            refusal = f"query too long: {len(scope['query_string'])} bytes, at most {MAX_QUERY}"
        elif len(raw_path) > MAX_PATH:
            refusal = f"path too long: {len(raw_path)} bytes, at most {MAX_PATH}"

        async def send_secured(message):
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers.setdefault(name, value)
            await send(message)

        if refusal is not None:
            return await error_response(Request(scope), 400, refusal)(scope, receive, send_secured)
        path = scope["path"]
        if path != "/" and path.endswith("/") and path.rstrip("/"):
            query = scope.get("query_string", b"").decode("latin-1")
            # One leading slash: `//host/` must not become a redirect to another host.
            location = quote("/" + path.strip("/")) + (f"?{query}" if query else "")
            return await Response(status_code=308, headers={"location": location})(scope, receive, send_secured)
        if (meant := guessed(path)) is not None:  # `/paper/<id>.json` and kin: where it is, not a 400
            query = scope.get("query_string", b"").decode("latin-1")
            location = quote(meant) + (f"?{query}" if query else "")
            return await Response(status_code=308, headers={"location": location})(scope, receive, send_secured)
        await self.app(scope, receive, send_secured)
