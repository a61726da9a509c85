"""The web application: FastAPI routes over one ledger, read-only, assembled here from the route table
(`web.routes`), the guard (`web.guard`), the query parameters (`web.parameters`), the error answers
(`web.statuses`) and the thread that owns the store (`web.store_thread`).

Routes are thin: parse the path and query, render in the store's thread (`web.site`, which calls `ledger/`
and `projections/`), send the bytes (`web.sending`). A GET of a URL answered before is sent from the cache
ahead of all of that (`App`), while fresh. `observed` wraps the app for its operator (`web.metrics`): each
request counted by its route's pattern and logged, /metrics answered.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from contextlib import asynccontextmanager
from functools import partial
from inspect import Parameter, Signature

from fastapi import FastAPI, Request
from fastapi.responses import Response

from ledger.log.signed_notes import Signer
from ledger.model import paths
from ledger.storage.store import Store
from ledger.web import health
from ledger.web.guard import Guard
from ledger.web.logs import Requests
from ledger.web.metrics import OTHER, Metrics, Observed
from ledger.web.parameters import OPTIONS, strict
from ledger.web.routes import PROBES, ROUTES, Render, Route, ask
from ledger.web.sending import answer_kept, respond
from ledger.web.statuses import ERRORS, HANDLERS
from ledger.web.store_thread import StoreThread


class App(FastAPI):
    """The FastAPI application, with one step before all of Starlette's middleware and routing: a GET of a URL
    answered before is sent from the cache while fresh (`answer_kept`). Every other request is routed."""

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "GET" or not await answer_kept(self.state.ledger, scope, send):
            await super().__call__(scope, receive, send)


def endpoint(ledger: StoreThread, route: Route, form: str, render: Render) -> Callable:
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


def create_app(source: Store | str, signer: Signer | None = None, max_checkpoint_age: float | None = None) -> App:
    """The site over a Store, or over the ledger a `--db` location names (opened in the store's thread): a
    GET route, answering HEAD too (as a static host does), for each form of each row of `routes.ROUTES`;
    `/readyz` answers 503 while the latest cosigned checkpoint is older than `max_checkpoint_age` seconds."""
    ledger = StoreThread(source, signer)

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
            if route.name == "readyz":
                render = partial(render, max_age=max_checkpoint_age)
            answer, path, checked = endpoint(ledger, route, form, render), route.served(form), [strict(*route.query)]
            app.api_route(path, methods=["HEAD"], include_in_schema=False, response_class=Response,
                          dependencies=checked)(answer)  # as a static host does; the schema lists the GET
            app.api_route(path, methods=["GET"], response_class=Response, responses=ERRORS,
                          dependencies=checked, include_in_schema=route.name not in PROBES)(answer)
    return app


def observed(app: App, requests: Requests | None, metrics: bool, metrics_port: int | None = None):
    """`app` counted and logged (`web.metrics.Observed`), or `app` itself with neither: a request's route is its row's pattern (`.json` for
    the JSON form), found from the route that answered it or, for an answer sent from the cache before any
    routing, from the URL the cache remembers; the figures of a scrape are read in the store's thread."""
    ledger = app.state.ledger
    labels = {route.served(form): route.pattern + (paths.JSON if form == "json" else "")
              for route in ROUTES for form, _ in route.forms()}
    named = {(route.name, form): labels[route.served(form)] for route in ROUTES for form, _ in route.forms()}

    def route_of(scope) -> str:
        route = scope.get("route")
        if route is not None:
            return labels.get(route.path, OTHER)
        found = ledger.answers.urls.get((scope["path"], scope.get("query_string", b"")))
        return OTHER if found is None else named.get((found[0].name, found[1][0][1]), OTHER)

    async def gather():
        try:
            return await ledger(health.serve_figures, ledger.errors, ledger.answers)
        except Exception:  # the store is down: say so, with what the process counted
            return health.cache_figures(ledger.answers, ledger.errors, up=False)

    if not metrics and requests is None:
        return app  # nothing to count or write: not wrapped at all
    return Observed(app, Metrics(gather) if metrics else None, requests, route_of, metrics_port)


def from_environment():
    """The app for `ledger serve --workers N`: each worker process builds it from the environment the
    command set (LEDGER_SERVE_DB, LEDGER_SERVE_KEY, LEDGER_SERVE_OBSERVE: the log's form and level, whether
    metrics are on, the metrics port, the checkpoint's largest age)."""
    from ledger.services.keys import load_signer
    from ledger.web.logs import configure

    key = os.environ.get("LEDGER_SERVE_KEY")
    with warnings.catch_warnings():  # `serve` warned of an exposed key once, before it started the workers
        warnings.simplefilter("ignore")
        signer = load_signer(key) if key else None
    form, level, metrics, port, age = os.environ.get("LEDGER_SERVE_OBSERVE", "plain normal 1 - -").split()
    app = create_app(os.environ["LEDGER_SERVE_DB"], signer, None if age == "-" else float(age))
    return observed(app, configure(form, level), metrics == "1", None if port == "-" else int(port))
