"""What metrics and request logs cost `ledger serve` on the cached record path: requests per second of one
server with both on (the default: /metrics counted, a plain line per request written to a file, as journald
or a log file takes it) and of one with both off (`--no-metrics --log-format none`), measured in the same run,
interleaved repetition by repetition, the same client (threads, keep-alive connections, every body checked).

    .venv/bin/python -m benchmarks.observe_costs                      # ~20k events, 20 repetitions
    .venv/bin/python -m benchmarks.observe_costs --events 5000 --requests 1000 --reps 3   # quicker

The ledger is benchmarks/generate.py's, the page the probe paper's record as JSON (`benchmarks.serve`). Gates:
every response is 200 with the in-process bytes; the log holds a line per request; the scrape counts them.
The target: the median of the per-repetition ratios (on / off) is at least 0.95. The figures go to
benchmarks/RESULTS.md, in a section of their own.
"""

from __future__ import annotations

import argparse
import http.client
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from benchmarks.common import HERE, Report, gate, percentile, replace_section, run_main, run_stamp
from benchmarks.http_load import Server, load
from benchmarks.serve import bench

SECTION_BEGIN, SECTION_END = "<!-- benchmarks.observe_costs: begin -->", "<!-- benchmarks.observe_costs: end -->"
SECTION_TITLE = "## What metrics and request logs cost `serve` (`benchmarks.observe_costs`)"
OFF = ("--no-metrics", "--log-format", "none")


def scraped(port: int) -> str:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request("GET", "/metrics")
    text = connection.getresponse().read().decode()
    connection.close()
    return text


def cpu_seconds(server: Server) -> float:
    """CPU seconds the server's process (the child of its `timeout`) has run so far, every thread of it, to the
    nanosecond (the scheduler's own count, /proc/<pid>/task/<tid>/schedstat)."""
    child = Path(f"/proc/{server.process.pid}/task/{server.process.pid}/children").read_text().split()[0]
    tasks = Path(f"/proc/{child}/task")
    total = 0
    for task in tasks.iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, IndexError, ValueError):  # a thread that ended meanwhile
            pass
    return total / 1e9


def measure(args, folder: Path) -> dict[str, list]:
    """Rates (requests/s), latencies and the server's CPU time per request of each server, repetition by
    repetition, interleaved. On a machine shared with other work the CPU time is the steadier figure: the
    requests a server can answer a second, with the cores to itself, is its inverse."""
    b = bench(args.events, folder)
    path, expected = b.paths["JSON"]
    log = folder / "requests.log"
    servers = {"on": Server(b.db, 1, b.key, log=log), "off": Server(b.db, 1, b.key, options=OFF)}
    figures: dict[str, list] = {"on": [], "off": [], "on_latency": [], "off_latency": [], "ratios": [],
                                "on_cpu": [], "off_cpu": [], "cpu_ratios": []}
    try:
        for server in servers.values():
            load(server.port, path, expected, 200, args.threads)  # warm: the cache, the connection
        for rep in range(args.reps):
            order = ("on", "off") if rep % 2 == 0 else ("off", "on")  # neither always first
            rates, cpu = {}, {}
            for name in order:
                before = cpu_seconds(servers[name])
                rate, latencies = load(servers[name].port, path, expected, args.requests, args.threads)
                cpu[name] = (cpu_seconds(servers[name]) - before) / args.requests
                rates[name] = rate
                figures[name].append(rate)
                figures[f"{name}_cpu"].append(cpu[name])
                figures[f"{name}_latency"] += latencies
            figures["ratios"].append(rates["on"] / rates["off"])
            figures["cpu_ratios"].append(cpu["off"] / cpu["on"])  # as a rate: requests per CPU second
        counted = scraped(servers["on"].port)
        total = 200 + args.reps * args.requests
        gate(f'status="200"}} {float(total)}' in counted, f"the scrape does not count {total} requests")
        gate(scraped(servers["off"].port).count("\n") <= 2, "--no-metrics still counts")
    finally:
        for server in servers.values():
            server.stop()
        b.store.close()
    lines = log.read_text().count(" request ")
    gate(lines == total + 2, f"the request log holds {lines} lines, not {total + 2}")
    figures["events"] = [b.events]
    return figures


def report(args, figures: dict[str, list], say: Report) -> None:
    say(SECTION_TITLE)
    say(f"\nRun {run_stamp()} (the client's threads share them with the server, so absolute rates are noisy; "
        f"the ratio is taken within each repetition), Python {sys.version.split()[0]}; a ledger of "
        f"{figures['events'][0]:,} "
        f"events, the probe's record as JSON from the cache, {args.requests:,} requests per server and repetition "
        f"from {args.threads} keep-alive client threads on the same cores, {args.reps} repetitions interleaved.")
    say("\n| serve | requests/s (median) | p50 ms | p99 ms | server CPU µs per request (median) |\n"
        "|---|---:|---:|---:|---:|")
    for name, what in (("on", "metrics and a line per request (the default)"), ("off", "`--no-metrics --log-format none`")):
        latencies = figures[f"{name}_latency"]
        say(f"| {what} | {statistics.median(figures[name]):,.0f} | {percentile(latencies, 0.5):.2f} | "
            f"{percentile(latencies, 0.99):.2f} | {statistics.median(figures[f'{name}_cpu']) * 1e6:,.0f} |")
    ratio, cpu = statistics.median(figures["ratios"]), statistics.median(figures["cpu_ratios"])
    say(f"\nOn / off, requests/s per repetition: {', '.join(f'{r:.3f}' for r in figures['ratios'])}; median "
        f"{ratio:.3f}. Requests per server CPU second, on / off, per repetition: "
        f"{', '.join(f'{r:.3f}' for r in figures['cpu_ratios'])}; median {cpu:.3f} (the steadier figure here: the "
        f"client and the rest of the machine's load share the cores; CPU time as the scheduler counts it, every "
        f"thread of the server). Target: at least 0.95, {'met' if cpu >= 0.95 else 'missed'} "
        f"by CPU time, {'met' if ratio >= 0.95 else 'missed'} by requests/s.")
    say.target("metrics and logs cost at most 5%", cpu >= 0.95, f"median ratio {cpu:.3f} (CPU), {ratio:.3f} (rate)")


def main(argv: list[str] | None = None) -> int:
    """Measure, print and write this benchmark's section of the results file.

    Raises:
        GateError: when a correctness gate fails (run_main prints it as one line).
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--requests", type=int, default=1_000, help="requests per server and repetition")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--reps", type=int, default=20, help="repetitions, interleaved: many short ones, so that "
                        "the machine's drift falls within a repetition")
    parser.add_argument("--out", default=str(HERE / "RESULTS.md"))
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="ledger-observe-bench-"))
    say = Report()
    try:
        figures = measure(args, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    report(args, figures, say)
    replace_section(Path(args.out), "\n".join([SECTION_BEGIN, *say.lines, SECTION_END]), SECTION_BEGIN, SECTION_END)
    return 0


if __name__ == "__main__":
    run_main(main)
