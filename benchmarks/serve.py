"""Serving and publishing, measured: records served per second and their latency over loopback HTTP, each
beside the in-process time of the same work, and `publish` of about 1,000 papers in files per second.

    .venv/bin/python -m benchmarks.serve                  # ~100k events, ~1,000 papers (a few minutes on 2 cores)
    .venv/bin/python -m benchmarks.serve --events 20000   # smaller and quicker

A deterministic ledger from benchmarks/generate.py (SQLite file). The record served is the probe paper's
(60 inbound, 40 outbound observations: the record benchmarks/run.py rebuilds), as of a fixed date given in
the URL, so every response has the same bytes. The load generator is bounded: a fixed number of requests
from a fixed number of threads, each with one keep-alive http.client connection, on the same 2 cores as
the server. Gates: every response is 200 and its body is the in-process bytes of the same page; publish
writes every file once, and a re-run writes none. The figures go to benchmarks/RESULTS.md, in a section of
their own that `benchmarks.run` keeps when it rewrites the file.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from benchmarks.common import AS_OF, HERE, Report, gate, import_batch, percentile, replace_section, run_main
from benchmarks.generate import PROBE, generate
from benchmarks.http_load import Nginx, Server, load, timed, wrk
from ledger.core.canonical import canonical
from ledger.core.times import when
from ledger.log.signed_notes import generate_signer
from ledger.projections.record import build_record
from ledger.storage.store import Store
from ledger.web.publish import publish
from ledger.web.site import Site

SECTION_BEGIN, SECTION_END = "<!-- benchmarks.serve: begin -->", "<!-- benchmarks.serve: end -->"


def write_section(path: Path, lines: list[str]) -> None:
    """This benchmark's section of the results file, in place of the last one (the rest of the file kept)."""
    replace_section(path, "\n".join([SECTION_BEGIN, *lines, SECTION_END]), SECTION_BEGIN, SECTION_END)


class Bench(NamedTuple):
    """The ledger served, its key, and the two pages asked for with their in-process bytes and work."""
    db: Path
    key: Path
    store: Store
    signer: object
    events: int
    paths: dict[str, tuple[str, bytes]]  # name: (URL path, the bytes every response must have)
    work: dict[str, Callable[[], object]]  # name: the same work in process, without HTTP
    rebuild: Callable[[], bytes]


def bench(events: int, folder: Path) -> Bench:
    """A ledger of `events` generated events in `folder`, a signing key beside it, and the probe's pages."""
    db = folder / "ledger.db"
    store = Store.create(str(db))
    generated = generate(events, seed=11)
    for start in range(0, len(generated), 5_000):
        import_batch(store, generated[start:start + 5_000])
    signer = generate_signer("bench.example/ledger")
    key = folder / "ledger.key"
    key.write_text(f"{signer}\n")
    at = when("as_of", AS_OF)
    site = Site(store, signer)

    def rebuild() -> bytes:
        return canonical(build_record(PROBE, store.paper_facts(PROBE), at))

    json_bytes, html_bytes = rebuild(), site.record_html(PROBE, at).content
    work = {"JSON": rebuild, "HTML": lambda: site.record_html(PROBE, at)}
    paths = {"JSON": (f"/paper/{PROBE}/citation-record.json?as_of={AS_OF}", json_bytes),
             "HTML": (f"/paper/{PROBE}/citation-record?as_of={AS_OF}", html_bytes)}
    for _ in range(20):  # warm
        rebuild()
    return Bench(db, key, store, signer, len(generated), paths, work, rebuild)


def one_at_a_time(b: Bench, reps: int, requests: int, servers: list) -> dict[str, dict[str, list[float]]]:
    """Latency, one request at a time, interleaved with the same work in process: these machines drift, so
    each repetition compares the two within itself, and the figure is the median of those."""
    server = Server(b.db, 1, b.key)
    servers.append(server)
    figures: dict[str, dict[str, list[float]]] = {
        kind: {"JSON": [], "HTML": []} for kind in ("inside", "served", "rates", "overheads", "ratios")}
    for path, expected in b.paths.values():
        load(server.port, path, expected, 100, 1)  # warm: imports, caches, the connection
    for _ in range(reps):
        rebuilt = statistics.median(timed(b.rebuild, 20))
        for name, (path, expected) in b.paths.items():
            here = timed(b.work[name], requests // (4 * reps))
            rate, latencies = load(server.port, path, expected, requests // reps, 1)
            figures["inside"][name] += here
            figures["served"][name] += latencies
            figures["rates"][name].append(rate)
            overhead = statistics.median(latencies) - statistics.median(here)
            figures["overheads"][name].append(overhead)
            figures["ratios"][name].append(overhead / rebuilt)
    server.stop()
    return figures


def throughput(b: Bench, requests: int, servers: list) -> list[tuple]:
    """Several client threads at once, one and two worker processes: a row per path and worker count."""
    rows = []
    for workers in (1, 2):
        server = Server(b.db, workers, b.key)
        servers.append(server)
        for name, (path, expected) in b.paths.items():
            load(server.port, path, expected, 200, 4)  # warm
            rate, latencies = load(server.port, path, expected, requests, 4)
            rows.append((name, workers, 4, rate, percentile(latencies, 0.5), percentile(latencies, 0.99)))
        server.stop()
    return rows


def publish_twice(b: Bench, out: Path) -> tuple:
    """`publish` into an empty folder and again: (first's result, its seconds, again's result, its seconds)."""
    publish_at = when("as_of", AS_OF)
    started = time.perf_counter()
    first = publish(b.store, out, publish_at, b.signer)
    first_s = time.perf_counter() - started
    started = time.perf_counter()
    again = publish(b.store, out, publish_at, b.signer)
    again_s = time.perf_counter() - started
    gate(first.unchanged == 0 and first.written > 0, f"publish: {first}")
    gate(again.written == 0 and again.unchanged == first.written, f"publish again: {again}")
    return first, first_s, again, again_s


def beside_nginx(b: Bench, folder: Path, out: Path, reps: int, requests: int, servers: list) -> tuple[dict, dict]:
    """Side by side, in one run: `ledger serve` (one worker, answering from its cache) and nginx serving the
    files publish wrote for the same paths, the same client (4 threads, keep-alive), the same bytes checked;
    and the same under wrk where it is installed."""
    static = Nginx(folder, out)
    servers.append(static)
    server = Server(b.db, 1, b.key)
    servers.append(server)
    who_port = (("ledger serve", server.port), ("nginx", static.port))
    anchored, fast = {}, {}
    for name, (path, expected) in b.paths.items():
        for _who, port in who_port:
            load(port, path, expected, 200, 4)  # warm
        measured: dict[str, list] = {"ledger serve": [], "nginx": []}
        for _ in range(reps):  # interleaved: these machines drift
            for who, port in who_port:
                measured[who].append(load(port, path, expected, requests // reps, 4))
        anchored[name] = {who: (statistics.median(rate for rate, _ in runs),
                                [latency for _, latencies in runs for latency in latencies])
                          for who, runs in measured.items()}
        fast[name] = {who: [wrk(port, path) for _ in range(3)] for who, port in who_port}
    server.stop()
    static.stop()
    return anchored, fast


def main(argv: list[str] | None = None) -> int:
    """Measure, print and write this benchmark's section of the results file.

    Raises:
        GateError: when a correctness gate fails (run_main prints it as one line).
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=2_000, help="requests per path and measurement")
    parser.add_argument("--reps", type=int, default=5, help="repetitions of the one-at-a-time comparison")
    parser.add_argument("--out", default=str(HERE / "RESULTS.md"))
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="ledger-serve-bench-"))
    say = Report()
    servers: list = []
    try:
        b = bench(args.events, folder)
        latency = one_at_a_time(b, args.reps, args.requests, servers)
        rows = throughput(b, args.requests, servers)
        papers = sum(1 for _ in b.store.papers(when("as_of", "2100-01-01").key))
        published = publish_twice(b, folder / "site")
        anchored, fast = beside_nginx(b, folder, folder / "site", args.reps, args.requests, servers)
        report_latency(args, b, papers, latency, say)
        report_throughput(args, rows, published, say)
        report_nginx(args, anchored, fast, say)
    finally:
        for server in servers:
            server.stop()
        shutil.rmtree(folder, ignore_errors=True)
    write_section(Path(args.out), say.lines)
    return 0


def report_latency(args, b: Bench, papers: int, figures: dict[str, dict[str, list[float]]], say) -> None:
    """The section's title, what was served, and the one-at-a-time table with its target."""
    json_bytes, html_bytes = b.paths["JSON"][1], b.paths["HTML"][1]
    say(SECTION_TITLE)
    say(f"\nRun {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {os.cpu_count()} cores, Python "
        f"{sys.version.split()[0]}. Command: `python -m benchmarks.serve --events {args.events} --requests "
        f"{args.requests} --reps {args.reps}`. A ledger of {b.events:,} events and {papers:,} papers (SQLite file); the record "
        f"is the probe paper's (60 inbound, 40 outbound observations, {len(json_bytes):,} bytes of JSON, "
        f"{len(html_bytes):,} of HTML) as of {AS_OF}, given in the URL.\n")
    say(f"One request at a time, {args.reps} repetitions, each timing the work in process (no HTTP) and then the "
        f"same page served by `ledger serve` (one worker, uvicorn, the store's own thread) on loopback, over one "
        f"keep-alive connection; {args.requests:,} requests per path in all, every body checked against the "
        "in-process bytes. Latency runs from sending the request to reading the whole body. The server answers a "
        "page asked before at the same as-of from its cache (`web.answers`), so after the first request it does "
        "less than the in-process rebuild:\n")
    say("| path | in process: includes | in process p50 / p99 ms | served p50 / p99 ms | requests/s | "
        "server's overhead at p50 (median of repetitions) | overhead / rebuild p50 |\n|---|---|---|---|---|---|---|")
    includes = {"JSON": "reading the paper's events (1 SQL statement), the fold, the digests, the canonical bytes",
                "HTML": "the same, and rendering the page form (Jinja2)"}
    inside, served = figures["inside"], figures["served"]
    for name in b.paths:
        say(f"| {name} | {includes[name]} | {statistics.median(inside[name]):.2f} / {percentile(inside[name], 0.99):.2f} "
            f"| {statistics.median(served[name]):.2f} / {percentile(served[name], 0.99):.2f} "
            f"| {statistics.median(figures['rates'][name]):,.0f} | {statistics.median(figures['overheads'][name]):.2f} ms "
            f"| {statistics.median(figures['ratios'][name]):.2f} |")
    say("\nTarget: the server adds at most 1x the rebuild's own p50 (HTTP, routing, the hop to the store's thread; "
        "for HTML, over the in-process rebuild and render):")
    for name in b.paths:
        ratio = statistics.median(figures["ratios"][name])
        say(f"- {name}: {ratio:.2f}x, {'met' if ratio <= 1.0 else 'NOT met'}")


def report_throughput(args, rows: list[tuple], published: tuple, say) -> None:
    """The throughput table and the two publish runs."""
    first, first_s, again, again_s = published
    say(f"\nThroughput: {args.requests:,} requests per row from 4 client threads (each with its own keep-alive "
        "connection) after 200 to warm up; the client's threads share the 2 cores with the server, so latency here "
        "is mostly queueing:\n")
    say("| path | worker processes | client threads | records served/s | p50 ms | p99 ms |\n|---|---|---|---|---|---|")
    for name, workers, threads, rate, p50, p99 in rows:
        say(f"| {name} | {workers} | {threads} | {rate:,.0f} | {p50:.2f} | {p99:.2f} |")
    say(f"\n`publish` of {first.papers:,} papers as of {AS_OF}, with a signing key (so each paper's integrity "
        "page carries a compact evidence bundle at the paper's own size), into an empty folder and again:\n")
    say("| run | includes | files written | files left alone | seconds | files/s |\n|---|---|---|---|---|---|")
    say(f"| first | every record (JSON, HTML, one per day something changed), integrity, paper page, history, "
        f"every tile and entry bundle of {first.tree_size:,} events, checkpoint | {first.written:,} | 0 | "
        f"{first_s:.1f} | {first.written / first_s:,.0f} |")
    say(f"| again, nothing changed | the state read, every file's size and time checked, no paper rendered | 0 | {again.unchanged:,} | "
        f"{again_s:.1f} | {again.unchanged / again_s:,.0f} |")


def report_nginx(args, anchored: dict, fast: dict, say) -> None:
    """`ledger serve` beside nginx: the Python client's table, wrk's where it ran, and the target."""
    say("\nServed beside a static host, in one run: `ledger serve` (one worker; a page asked before at the same "
        "as-of is answered from its cache before any routing, checked against SQLite's commit counter, and against "
        "the paper's facts only after a commit) and nginx "
        "(one worker) serving the files `publish` wrote for the same paths; the same client, 4 threads with a "
        f"keep-alive connection each, {args.requests:,} requests per row in {args.reps} interleaved repetitions "
        "(requests/s: their median), every body checked against the in-process bytes:\n")
    say("| path | server | includes | requests/s | p50 ms | p99 ms | of nginx's requests/s |\n"
        "|---|---|---|---|---|---|---|")
    serving = {"ledger serve": "HTTP (uvicorn with httptools and uvloop), SQLite's commit counter "
                               "(`PRAGMA data_version`, no thread hop), the cached bytes and headers",
               "nginx": "HTTP, reading the published file"}
    for name, by in anchored.items():
        for who, (rate, latencies) in by.items():
            say(f"| {name} | {who} | {serving[who]} | {rate:,.0f} | {percentile(latencies, 0.5):.2f} | "
                f"{percentile(latencies, 0.99):.2f} | {rate / by['nginx'][0]:.3f} |")
    judged = anchored
    if all(run is not None for by in fast.values() for runs in by.values() for run in runs):
        say("\nThe Python client above bounds nginx (its threads share the GIL and the 2 cores). The same paths "
            "under wrk (C; 2 threads, 4 connections, 5 s; the median of 3 runs per row, interleaved with the "
            "rows above; bodies checked above):\n")
        say("| path | server | requests/s | p50 ms | p99 ms | of nginx's requests/s |\n|---|---|---|---|---|---|")
        judged = {}
        for name, by in fast.items():
            medians = {who: tuple(statistics.median(run[i] for run in runs) for i in range(3))
                       for who, runs in by.items()}
            judged[name] = {who: (m[0], None) for who, m in medians.items()}
            for who, (rate, p50, p99) in medians.items():
                say(f"| {name} | {who} | {rate:,.0f} | {p50:.2f} | {p99:.2f} | {rate / medians['nginx'][0]:.3f} |")
    say("\nTarget (issue 29): the served record JSON at least 0.2 of nginx's requests/s"
        + (" (under wrk)" if judged is not anchored else " (wrk missing: the Python client's figure)") + ":")
    for name in judged:
        ratio = judged[name]["ledger serve"][0] / judged[name]["nginx"][0]
        say(f"- {name}: {ratio:.3f}, {'met' if ratio >= 0.2 else 'NOT met'}")
    say("\nCorrectness gates passed: every response 200 with the in-process bytes; publish wrote every file "
        "once, and a re-run wrote none.")


SECTION_TITLE = "## Serving and publishing (`benchmarks.serve`)"

if __name__ == "__main__":
    run_main(main)
