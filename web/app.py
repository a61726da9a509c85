"""The web application: FastAPI routes over one ledger, read-only, and the one place where errors become
HTTP status codes (as `cli.main.LedgerGroup` makes them exit codes).

Routes are thin, and all of them come from the route table (`web.routes`): parse the path and query, render
in the store's thread (`web.site`, which calls `ledger/` and `projections/`), send the bytes. Status codes, by
error family:

    InputError     400  a malformed id, date, tile path or query, a query too long
    NotFoundError  404  no such paper (as of that date), a tile the tree does not hold yet, no signing key
    StoreError     503  the database is unreachable or locked past its timeout (retry later)
    IntegrityError 500  the ledger's own data fails a check (a row that no longer re-computes): the
                        server's fault, never the client's, so it is never cached
    anything else  500  a bug: "internal error" in one line; the traceback goes to the server's log only

Every error is one line, as JSON (`{"error": ..., "status": ...}`) or as HTML when the client's Accept
prefers it. A Store is not thread-safe, and an exported `.jsonl` log lives in an in-memory SQLite
connection bound to its thread, so one thread per process owns the store and runs every request's ledger
work (`Ledger`); serve several processes (`ledger serve --workers N`) to use several cores.
"""

from __future__ import annotations

import asyncio
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from inspect import Parameter, Signature
from typing import Annotated, Callable
from urllib.parse import quote

from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException as StarletteHTTPException

from ledger.core.errors import InputError, IntegrityError, LedgerError, NotFoundError, StoreError
from ledger.importing.logfile import open_ledger
from ledger.log.signed_notes import Signer
from ledger.storage.store import Store


from ledger.web.answers import Answers
from ledger.web.routes import ROUTES, Render, Route, ask
from ledger.web.site import CSP, Body, Site, error_html, error_json

MAX_QUERY = 1024  # bytes of query string; a longer one is refused (400), not parsed
MAX_PATH = 1024  # bytes of path
MAX_PARAMETER = 200  # characters of one query parameter
STATUS = ((NotFoundError, 404), (InputError, 400), (StoreError, 503), (IntegrityError, 500))
SECURITY_HEADERS = {
    "content-security-policy": CSP + "; frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "access-control-allow-origin": "*",  # public, read-only, no credentials: auditors' tools may fetch it
}
log = logging.getLogger("ledger.web")


def status_of(exc: BaseException) -> int:
    for family, status in STATUS:
        if isinstance(exc, family):
            return status
    return 500


class Ledger:
    """The store and its pages, owned by one thread: every call runs there, in order. Closing it (the app's
    shutdown) closes a store it opened and ends the thread; a later call opens both again."""

    def __init__(self, source: Store | str, signer: Signer | None = None):
        self.source, self.signer = source, signer
        self.site: Site | None = None
        self.answers = Answers()  # pages already rendered, kept while what they depend on is unchanged
        self.thread: ThreadPoolExecutor | None = None
        try:  # a path that is not a ledger fails now; a database that is down answers 503 until it is back
            self._executor().submit(self._open).result()
        except StoreError as exc:
            log.warning("ledger: %s (serving 503 until it can be opened)", exc)

    def _executor(self) -> ThreadPoolExecutor:
        if self.thread is None:
            self.thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ledger-store")
        return self.thread

    def _open(self) -> Site:
        if self.site is None:
            store = self.source if isinstance(self.source, Store) else open_ledger(self.source)
            self.site = Site(store, self.signer)
        return self.site

    def _run(self, work: Callable, args: tuple):
        try:
            site = self._open()
        except StoreError:
            raise
        except LedgerError as exc:  # it opened once; now it does not: the server's problem, not the client's
            raise StoreError(f"the ledger cannot be opened: {exc}") from None
        return work(site, *args)

    async def __call__(self, work: Callable, *args):
        return await asyncio.get_running_loop().run_in_executor(self._executor(), self._run, work, args)

    def close(self) -> None:
        if self.thread is None:
            return

        def shut() -> None:
            if self.site is not None and not isinstance(self.source, Store):
                self.site.store.close()
                self.site = None

        thread, self.thread = self.thread, None
        thread.submit(shut).result()
        thread.shutdown()


# -- responses ------------------------------------------------------------------------------------------
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
    line = " ".join(reason.split())  # no newline or control whitespace from a client's path reaches the body
    return line if len(line) <= limit else line[:limit - 3] + "..."


def error_response(request: Request, status: int, reason: str, headers: dict | None = None) -> Response:
    reason = one_line(reason)
    html = wants_html(request.headers.get("accept", ""))
    body = error_html(status, reason) if html else error_json(status, reason)
    return Response(body, status, media_type="text/html; charset=utf-8" if html else "application/json",
                    headers={"cache-control": "no-store", **(headers or {})})


def _etag_matches(header: str, etag: str) -> bool:
    """If-None-Match, weak comparison (RFC 9110 13.1.2)."""
    plain = etag.removeprefix("W/")
    return any(tag.strip() == "*" or tag.strip().removeprefix("W/") == plain for tag in header.split(","))


def respond(request: Request, body: Body, headers: dict | None = None) -> Response:
    extra = {"cache-control": body.cache, **(headers or {})}
    if body.etag:
        extra["etag"] = body.etag
        match = request.headers.get("if-none-match")
        if match and _etag_matches(match, body.etag):
            return Response(status_code=304, headers=extra)
    return Response(body.content, media_type=body.media_type, headers=extra)


class Guard:
    """Plain ASGI middleware: refuses overlong paths and queries before anything parses them, redirects a
    trailing slash (as static hosts serve `citation-record/`), and adds the security headers."""

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
        if scope["method"] == "GET":  # a URL answered before: from the cache, without routing, while fresh
            ledger = scope["app"].state.ledger
            url = (path, scope.get("query_string", b""))
            if ledger.answers.knows(url):
                try:
                    body = await ledger(ledger.answers.fresh, url)
                except LedgerError:
                    body = None  # the full route says what is wrong, as it always does
                if body is not None:
                    return await respond(Request(scope), body)(scope, receive, send_secured)
        await self.app(scope, receive, send_secured)


def strict(*names: str):
    """A dependency: refuse a query parameter the route does not take, or one given twice (a typo such as
    `?asof=` must not silently give today's record)."""

    def check(request: Request) -> None:
        for name in request.query_params.keys():
            if name not in names:
                allowed = ", ".join(names) or "none"
                raise InputError(f"unknown query parameter {name[:40]!r} (this path takes: {allowed})")
            if len(request.query_params.getlist(name)) > 1:
                raise InputError(f"query parameter {name} given more than once")

    return Depends(check)


AsOf = Annotated[str | None, Query(max_length=MAX_PARAMETER, description="Effective time: a date (the end of that "
                                   "UTC day) or an RFC 3339 timestamp; default: the request instant.")]
KnownAt = Annotated[str | None, Query(max_length=MAX_PARAMETER, description="Only events the ledger had recorded by then.")]
From = Annotated[str, Query(alias="from", max_length=MAX_PARAMETER, description="Earlier date or timestamp.")]
To = Annotated[str, Query(alias="to", max_length=MAX_PARAMETER, description="Later date or timestamp.")]
# A query option of the route table: its Python name, its type and its default (`from` is a keyword).
OPTIONS = {"as_of": ("as_of", AsOf, None), "known_at": ("known_at", KnownAt, None),
           "from": ("start", From, Parameter.empty), "to": ("end", To, Parameter.empty)}
ERRORS = {400: {"description": "A malformed id, date, tile path or query (one line)."},
          404: {"description": "No such paper, record as of that date, or tile (one line)."},
          503: {"description": "The database is unreachable (one line)."}}


# -- errors ---------------------------------------------------------------------------------------------
async def ledger_error(request: Request, exc: LedgerError) -> Response:
    status = status_of(exc)
    if status >= 500:
        log.error("ledger: %s %s: %s", request.method, request.url.path, exc)
    return error_response(request, status, str(exc))


async def invalid(request: Request, exc: RequestValidationError) -> Response:
    first = (exc.errors() or [{}])[0]
    where = ".".join(str(part) for part in first.get("loc", ())[1:]) or "request"
    return error_response(request, 400, f"{where}: {first.get('msg', 'invalid')}")


async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
    reason = f"no such path: {request.url.path}" if exc.status_code == 404 else str(exc.detail)
    return error_response(request, exc.status_code, reason, dict(exc.headers or {}))


async def bug(request: Request, exc: Exception) -> Response:
    log.exception("ledger: internal error on %s %s", request.method, request.url.path)
    return error_response(request, 500, f"internal error: {type(exc).__name__}")


HANDLERS = {LedgerError: ledger_error, RequestValidationError: invalid, StarletteHTTPException: http_error,
            Exception: bug}


# -- the application ------------------------------------------------------------------------------------
def endpoint(ledger: Ledger, route: Route, form: str, render: Render) -> Callable:
    """The FastAPI endpoint of one form of a route: parse (`routes.ask`), render in the store's thread, send.
    Its signature, built from the row, is what FastAPI validates and the OpenAPI schema lists."""
    names = {OPTIONS[option][0]: option for option in route.query}

    async def answer(request: Request, **values):
        question = ask(route, {names.get(name, name): value for name, value in values.items()})
        if route.store:
            url = (request.url.path, request.scope.get("query_string", b"")) if request.method == "GET" else None
            body = await ledger(ledger.answers.answer, route, form, render, question, url)
        else:
            body = render(None, question)
        headers = None
        if route.encode is not None:
            body, headers = route.encode(request.headers.get("accept-encoding", ""), body, question)
        return respond(request, body, headers)

    answer.__signature__ = Signature(
        [Parameter("request", Parameter.KEYWORD_ONLY, annotation=Request)]
        + [Parameter(name, Parameter.KEYWORD_ONLY, annotation=str) for name in route.parameters]
        + [Parameter(OPTIONS[o][0], Parameter.KEYWORD_ONLY, annotation=OPTIONS[o][1], default=OPTIONS[o][2])
           for o in route.query])
    answer.__name__ = answer.__qualname__ = f"{route.name}_{form}"  # the OpenAPI operation id
    answer.__doc__ = route.about if form == "json" else None
    return answer


def create_app(source: Store | str, signer: Signer | None = None) -> FastAPI:
    """The site over a Store, or over the ledger a `--db` location names (opened in the store's thread): a
    GET route, answering HEAD too (as a static host does), for each form of each row of `routes.ROUTES`."""
    ledger = Ledger(source, signer)

    @asynccontextmanager
    async def lifespan(_app):
        yield
        ledger.close()

    app = FastAPI(title="ledger", version="1", lifespan=lifespan, docs_url=None, redoc_url=None,
                  exception_handlers=HANDLERS, description="Paper Citation Records and the log behind them, read-only.")
    app.state.ledger = ledger
    app.add_middleware(Guard)
    for route in ROUTES:
        for form, render in route.forms():
            answer, path, checked = endpoint(ledger, route, form, render), route.served(form), [strict(*route.query)]
            app.api_route(path, methods=["HEAD"], include_in_schema=False, response_class=Response,
                          dependencies=checked)(answer)  # as a static host does; the schema lists the GET
            app.api_route(path, methods=["GET"], response_class=Response, responses=ERRORS,
                          dependencies=checked)(answer)
    return app


def from_environment() -> FastAPI:
    """The app for `ledger serve --workers N`: each worker process builds it from the environment the
    command set (LEDGER_SERVE_DB, LEDGER_SERVE_KEY)."""
    from ledger.services.keys import load_signer

    key = os.environ.get("LEDGER_SERVE_KEY")
    signer = load_signer(key) if key else None
    return create_app(os.environ["LEDGER_SERVE_DB"], signer)
