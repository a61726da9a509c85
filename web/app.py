"""The web application: FastAPI routes over one ledger, read-only, and the one place where errors become
HTTP status codes (as `cli.main.LedgerGroup` makes them exit codes).

Routes are thin, and all of them come from the route table (`web.routes`): parse the path and query, render
in the store's thread (`web.site`, which calls `ledger/` and `projections/`), send the bytes. A GET of a URL
answered before is sent from the cache ahead of all of that (`App`), while fresh. Status codes, by error family:

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
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from inspect import Parameter, Signature
from typing import Annotated
from urllib.parse import quote

from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException as StarletteHTTPException

from ledger.core.errors import InputError, IntegrityError, LedgerError, NotFoundError, StoreError
from ledger.core.redact import redact
from ledger.importing.logfile import open_ledger
from ledger.log.signed_notes import Signer
from ledger.storage.store import Store
from ledger.web.answers import Answers
from ledger.web.routes import ROUTES, Render, Route, ask, guessed
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
        self.commits = None  # the database's commit counter (`Backend.watch`), read in the event loop; or None
        self.thread: ThreadPoolExecutor | None = None
        try:  # a path that is not a ledger fails now; a database that is down answers 503 until it is back
            self._executor().submit(self._open).result()
        except StoreError as exc:
            log.warning("ledger: %s (serving 503 until it can be opened)", redact(str(exc)))

    def _executor(self) -> ThreadPoolExecutor:
        if self.thread is None:
            self.thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ledger-store")
        return self.thread

    def _open(self) -> Site:
        if self.site is None:
            store = self.source if isinstance(self.source, Store) else open_ledger(self.source)
            self.site = Site(store, self.signer)
            self.answers.unstamp()  # stamps of a counter closed before, if any, mean nothing to this one
            self.commits = store.backend.watch(store.url)
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

    def stamp(self) -> int | None:
        """The commit counter, read now in the caller's thread (the event loop); None without one."""
        commits = self.commits
        return commits() if commits is not None else None

    def close(self) -> None:
        if self.thread is None:
            return

        def shut() -> None:
            commits, self.commits = self.commits, None
            if commits is not None:
                commits.close()
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


def _headers(body: Body, headers: dict | None = None) -> dict:
    extra = {"cache-control": body.cache, **(headers or {})}
    if body.etag:
        extra["etag"] = body.etag
    return extra


def respond(request: Request, body: Body, headers: dict | None = None) -> Response:
    extra = _headers(body, headers)
    if body.etag:
        match = request.headers.get("if-none-match")
        if match and _etag_matches(match, body.etag):
            return Response(status_code=304, headers=extra)
    return Response(body.content, media_type=body.media_type, headers=extra)


def _secured(raw: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """Raw headers with each security header they lack, as `Guard` adds them."""
    names = {name for name, _ in raw}
    return raw + [(name.encode(), value.encode()) for name, value in SECURITY_HEADERS.items()
                  if name.encode() not in names]


def _sent(body: Body) -> tuple[list, list]:
    """The raw headers of a 200 and of a 304 of `body`, as the full route and `Guard` send them."""
    extra = _headers(body)
    return (_secured(Response(body.content, media_type=body.media_type, headers=extra).raw_headers),
            _secured(Response(status_code=304, headers=extra).raw_headers))


async def answer_kept(ledger: Ledger, scope, send) -> bool:
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
        kept.sent = _sent(kept.body)
    answers.fast += 1
    etag = kept.body.etag
    match = next((value for name, value in scope["headers"] if name == b"if-none-match"), None) if etag else None
    if match is not None and _etag_matches(match.decode("latin-1"), etag):
        await send({"type": "http.response.start", "status": 304, "headers": kept.sent[1]})
        await send({"type": "http.response.body", "body": b""})
    else:
        await send({"type": "http.response.start", "status": 200, "headers": kept.sent[0]})
        await send({"type": "http.response.body", "body": kept.body.content})
    return True


class App(FastAPI):
    """The FastAPI application, with one step before all of Starlette's middleware and routing: a GET of a URL
    answered before is sent from the cache while fresh (`answer_kept`). Every other request is routed."""

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "GET" or not await answer_kept(self.state.ledger, scope, send):
            await super().__call__(scope, receive, send)


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


# -- the application ------------------------------------------------------------------------------------
def endpoint(ledger: Ledger, route: Route, form: str, render: Render) -> Callable:
    """The FastAPI endpoint of one form of a route: parse (`routes.ask`), render in the store's thread, send.
    Its signature, built from the row, is what FastAPI validates and the OpenAPI schema lists."""
    names = {OPTIONS[option][0]: option for option in route.query}

    async def answer(request: Request, **values):
        question = ask(route, {names.get(name, name): value for name, value in values.items()})
        if route.store:
            url = (request.scope["path"], request.scope.get("query_string", b"")) if request.method == "GET" else None
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


def create_app(source: Store | str, signer: Signer | None = None) -> App:
    """The site over a Store, or over the ledger a `--db` location names (opened in the store's thread): a
    GET route, answering HEAD too (as a static host does), for each form of each row of `routes.ROUTES`."""
    ledger = Ledger(source, signer)

    @asynccontextmanager
    async def lifespan(_app):
        yield
        ledger.close()

    app = App(title="ledger", version="1", lifespan=lifespan, docs_url=None, redoc_url=None,
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
    with warnings.catch_warnings():  # `serve` warned of an exposed key once, before it started the workers
        warnings.simplefilter("ignore")
        signer = load_signer(key) if key else None
    return create_app(os.environ["LEDGER_SERVE_DB"], signer)
