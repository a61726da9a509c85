"""What a server tells the operator watching it: `/metrics` in Prometheus's text format, a line per request on
stderr (`web.logs`), and for the witness `/healthz` and `/readyz` (`serve` has them as rows of its route table).

`Observed` wraps an ASGI application: it times every request from the moment it is handed over to its last byte
sent, counts it by route pattern and status (`Metrics`), writes its line, and answers `/metrics` itself, on the
server's own port or, with `--metrics-port`, on that port only. The figures that are read rather than counted
(the log's size, the checkpoints' ages, the cache's bytes) are gathered when a scrape asks (`Figure`), so that a
request pays only for its count. `textfile` writes the same kind of figures for `monitor` and `checkpoint`, as
node_exporter's textfile collector reads them: a file renamed into place (`ledger.core.files`).

It must never put a client's bytes into a label (a route is its pattern, an origin one the witness follows or
"other": the series stay few whatever clients send), nor a key, a key's path or a database URL anywhere.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, disable_created_metrics, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

from ledger.core.files import write_file
from ledger.web.logs import Requests

# Seconds: the cached record path answers in well under a millisecond, a witness's cosignature in a few.
BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
TEXT = "text/plain; version=0.0.4; charset=utf-8"  # Prometheus's text exposition format
OTHER = "other"  # the route of a path no route matched
disable_created_metrics()  # no `_created` series: a process's start is not a figure anyone alerts on


@dataclass
class Figure:
    """One metric read now: its name, "gauge" or "counter", its help, and its samples (labels, value)."""

    name: str
    kind: str
    about: str
    samples: list[tuple[dict[str, str], float]] = field(default_factory=list)

    def add(self, value: float, **labels: str) -> Figure:
        self.samples.append((labels, float(value)))
        return self


def _family(figure: Figure):
    names = sorted({name for labels, _ in figure.samples for name in labels})
    kind = CounterMetricFamily if figure.kind == "counter" else GaugeMetricFamily
    family = kind(figure.name, figure.about, labels=names)
    for labels, value in figure.samples:
        family.add_metric([labels.get(name, "") for name in names], value)
    return family


class _Figures:
    """A collector of the figures a scrape gathered just before (`Metrics.scrape`), and of the requests'
    histogram (`Metrics.series`)."""

    def __init__(self, series: dict | None = None) -> None:
        self.figures: list[Figure] = []
        self.series = series

    def collect(self):
        families = [_family(figure) for figure in self.figures]
        if self.series is not None:
            latency = HistogramMetricFamily(LATENCY, LATENCY_ABOUT, labels=["route", "status"])
            for (route, status), (counts, total) in sorted(self.series.items()):
                cumulative, buckets = 0, []
                for bound, count in zip((*BUCKETS, float("inf")), counts):
                    cumulative += count
                    buckets.append(("+Inf" if bound == float("inf") else repr(bound), cumulative))
                latency.add_metric([route, str(status)], buckets, total)
            families.insert(0, latency)
        return families


LATENCY = "ledger_http_request_duration_seconds"
LATENCY_ABOUT = ("Requests answered, by route pattern and status: how long each took, from its head read to its "
                 "last byte sent.")


class Metrics:
    """The counts of one server process: requests by route and status with their latency, and the figures
    `gather` reads at each scrape (an awaitable: `serve` reads the store in its thread). A request's count is a
    bucket found by bisection and two additions, without a lock: every request is counted in the one event
    loop's thread (prometheus_client's Histogram takes a lock per observation, a measurable part of the cached
    path's time)."""

    def __init__(self, gather: Callable[[], Awaitable[list[Figure]]]):
        self.registry = CollectorRegistry(auto_describe=False)
        self.series: dict[tuple[str, int], list] = {}  # (route, status) -> [bucket counts, sum of seconds]
        self.gathered, self.gather = _Figures(self.series), gather
        self.registry.register(self.gathered)

    def observe(self, route: str, status: int, seconds: float) -> None:
        entry = self.series.get((route, status))
        if entry is None:
            entry = self.series[route, status] = [[0] * (len(BUCKETS) + 1), 0.0]
        entry[0][bisect_left(BUCKETS, seconds)] += 1
        entry[1] += seconds

    async def scrape(self) -> bytes:
        """The exposition: the counts, and the figures gathered now.
        Raises: nothing (a figure that cannot be read is for `gather` to report as a figure)."""
        self.gathered.figures = await self.gather()
        return generate_latest(self.registry)


def textfile(path: str, figures: list[Figure]) -> None:
    """Write `figures` to `path` in node_exporter's textfile form: a temporary file in the same folder, renamed.
    Raises: InputError naming the file when it cannot be written."""
    registry = CollectorRegistry(auto_describe=False)
    gathered = _Figures()
    gathered.figures = figures
    registry.register(gathered)
    write_file(path, generate_latest(registry))


async def answer_text(send, status: int, body: bytes, media: str = "text/plain; charset=utf-8") -> None:
    """Send a whole answer of `body`, never cached.
    Raises: what `send` raises (the client left)."""
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", media.encode()), (b"content-length", str(len(body)).encode()),
                            (b"cache-control", b"no-store")]})
    await send({"type": "http.response.body", "body": body})


@dataclass
class Observed:
    """`app` with its requests timed, counted (`metrics`, None: not counted, no /metrics) and logged
    (`requests`, None: no lines). `route_of` names a request's route from its scope once the app answered it;
    `metrics_port`: answer /metrics there only. `extra` answers paths of its own before the app (the
    witness's health), given (scope, send) and returning whether it did; `done` hears (scope, body, status) of
    each request whose body `keep` asks to be kept (the witness counts its cosignatures)."""

    app: Callable
    metrics: Metrics | None
    requests: Requests | None
    route_of: Callable[[dict], str]
    metrics_port: int | None = None
    extra: Callable[[dict, Callable], Awaitable[bool]] | None = None
    keep: Callable[[dict], bool] | None = None
    done: Callable[[dict, bytes, int], None] | None = None

    def __post_init__(self) -> None:
        # The paths this wrapper may answer itself; any path on a metrics port. Every other request goes
        # straight to the app: the cached path pays two clock reads, a status kept, a count and a line.
        self.own = ({"/metrics"} if self.metrics is not None else set()) | ({"/healthz", "/readyz"} if self.extra else set())

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        start, status = time.perf_counter(), 500

        async def sending(message):
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            if (scope["path"] in self.own or self.metrics_port is not None) and await self._own(scope, sending):
                pass
            elif self.keep is not None and self.keep(scope):
                await self._kept(scope, receive, sending)
            else:
                await self.app(scope, receive, sending)
        finally:
            seconds = time.perf_counter() - start
            route = scope.get("ledger.route") or self.route_of(scope)
            if self.metrics is not None:
                self.metrics.observe(route, status, seconds)
            if self.requests is not None:
                client = scope.get("client")
                self.requests.line(client[0] if client else "-", scope["method"], route, status, seconds)

    async def _kept(self, scope, receive, send) -> None:
        """The app's answer to a request whose body `done` hears, with the status sent."""
        body, sent = bytearray(), {}

        async def receiving():
            message = await receive()
            if message["type"] == "http.request" and len(body) < 1 << 20:
                body.extend(message.get("body", b""))
            return message

        async def sending(message):
            if message["type"] == "http.response.start":
                sent["status"] = message["status"]
            await send(message)

        await self.app(scope, receiving, sending)
        if self.done is not None:
            self.done(scope, bytes(body), sent.get("status", 500))

    async def _own(self, scope, send) -> bool:
        """Answer what this wrapper answers itself: /metrics, another path on the metrics port, `extra`'s."""
        path, port = scope["path"], (scope.get("server") or ("", None))[1]
        on_metrics_port = self.metrics_port is not None and port == self.metrics_port
        if self.metrics is not None and path == "/metrics" and (self.metrics_port is None or on_metrics_port):
            scope["ledger.route"] = "/metrics"
            await answer_text(send, 200, await self.metrics.scrape(), TEXT)
            return True
        if on_metrics_port:
            scope["ledger.route"] = OTHER
            await answer_text(send, 404, b"no such path: this port answers /metrics only\n")
            return True
        return self.extra is not None and await self.extra(scope, send)
