"""The steps `benchmarks/scale.py` measures, each a whole command in a fresh process run from a small wrapper that
reports its seconds and max RSS (alone, or several started at once), and each step's correctness gate.

A corpus is never held in memory here: events stream from the event-lines file, commands write their output to
files, and a record is compared by its digest. Nothing is written outside the run's folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

from benchmarks.common import AS_OF, HERE, gate

# The wrapper's RUSAGE_CHILDREN is the command's own peak (and its workers'), not this process's: Linux carries
# ru_maxrss over fork and exec, so the wrapper is kept small. Its last stderr line is "seconds rss code".
WRAPPER = ("import resource, subprocess, sys, time\n"
           "started = time.perf_counter()\n"
           "done = subprocess.run(sys.argv[1:], stderr=subprocess.PIPE)\n"
           "elapsed = time.perf_counter() - started\n"
           "sys.stderr.buffer.write(done.stderr)\n"
           "print(elapsed, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024, done.returncode,\n"
           "      file=sys.stderr)\n")
LEDGER = [sys.executable, "-m", "ledger.cli"]


class Ran(NamedTuple):
    seconds: float  # process start to exit (several at once: the first start to the last exit)
    rss: int  # bytes: the largest process's peak (several at once: the largest of them)
    stdout: bytes  # empty when it went to a file


class Row(NamedTuple):
    key: str  # the same at every size: rows are compared by it
    what: str  # what the row includes
    seconds: float
    rss: int
    units: int  # events, records, papers or entries the command handled
    unit: str  # "events", "records", ...
    p50: float | None = None  # ms, for latency rows
    p99: float | None = None


def row(key: str, what: str, ran: Ran, units: int, unit: str) -> Row:
    return Row(key, what, ran.seconds, ran.rss, units, unit)


def _started(argv: list[str], stdout: Path | None, stdin: Path | None) -> subprocess.Popen:
    given_in = open(stdin or "/dev/null", "rb")
    given_out = open(stdout, "wb") if stdout else subprocess.PIPE
    try:
        return subprocess.Popen([sys.executable, "-c", WRAPPER, *argv], stdin=given_in, stdout=given_out,
                                stderr=subprocess.PIPE, cwd=HERE.parent)
    finally:
        given_in.close()
        if stdout:
            given_out.close()


def _finished(process: subprocess.Popen, what: str) -> tuple[int, bytes]:
    out, err = process.communicate()
    *errors, summary = err.decode(errors="replace").strip().splitlines() or ["0 0 -1"]
    _, rss, code = summary.split()
    gate(process.returncode == 0 and code == "0" and not errors, f"{what}: exit {code}: {errors[-3:]}")
    return int(rss), out or b""


def run(argv: list[str], what: str, stdout: Path | None = None, stdin: Path | None = None) -> Ran:
    """One command from the wrapper (`stdout`, `stdin`: files); its exit 0 and an empty stderr are gated.

    Raises:
        GateError: when it exits other than 0 or writes to stderr.
    """
    return together([argv], what, [stdout])


def together(argvs: list[list[str]], what: str, stdouts: list[Path | None] | None = None) -> Ran:
    """Several commands started at once: the wall clock from the first start to the last exit, the largest peak
    RSS, their stdouts one after the other.

    Raises:
        GateError: when one exits other than 0 or writes to stderr.
    """
    started = time.perf_counter()
    running = [_started(argv, out, None) for argv, out in zip(argvs, stdouts or [None] * len(argvs))]
    outcomes = [_finished(p, what) for p in running]
    return Ran(time.perf_counter() - started, max(rss for rss, _ in outcomes), b"".join(out for _, out in outcomes))


def ledger(db: str, *args: str, what: str | None = None, stdout: Path | None = None) -> Ran:
    """`ledger --db DB ARGS...` from the wrapper.

    Raises:
        GateError: when it exits other than 0 or writes to stderr.
    """
    return run([*LEDGER, "--db", db, *args], what or f"ledger {' '.join(args[:2])}", stdout)


def digests(folder: Path) -> dict[str, str]:
    """Every file's SHA-256 under `folder`, by its path there: what two runs must agree on, byte for byte."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def imported(db: str, lines: Path, jobs: int, events: int) -> Ran:
    """`ledger import --jobs N EVENTS.jsonl` into the new ledger `db`; every event appended, the chain verified.

    Raises:
        GateError: when the count or the chain is wrong.
    """
    ran = ledger(db, "import", "--jobs", str(jobs), str(lines))
    gate(ran.stdout.startswith(f"appended {events} events (0 already present)".encode()), f"import: {ran.stdout!r}")
    return ran


def verified(db: str, events: int, *options: str) -> Ran:
    """`ledger verify [--full]`: it must say ok for every event.

    Raises:
        GateError: when it does not.
    """
    ran = ledger(db, "verify", *options)
    gate(ran.stdout.startswith(f"ok: {events} events".encode()), f"verify {' '.join(options)}: {ran.stdout[:200]!r}")
    return ran


def replayed(db: str, out: Path, jobs: int, papers: int, *options: str) -> Ran:
    """`ledger replay --as-of D --out DIR --jobs N` (one command); `papers` records written.

    Raises:
        GateError: when another number of records is written.
    """
    ran = ledger(db, "replay", "--as-of", AS_OF, "--out", str(out), "--jobs", str(jobs), *options)
    written = sum(1 for _ in out.iterdir())
    gate(written == papers, f"replay --jobs {jobs}: {written} records, {papers} expected")
    return ran


def sharded(db: str, folder: Path, shards: int, expected: dict[str, str]) -> Ran:
    """`replay --out` with `--shard k/N`, the N shards as concurrent processes, each into a folder of its own: their
    records must not overlap, and their union must be the unsharded records, byte for byte.

    Raises:
        GateError: when a shard fails, two shards write one paper, or the union differs.
    """
    out = folder / f"shards-{shards}"
    ran = together([[*LEDGER, "--db", db, "replay", "--as-of", AS_OF, "--out", str(out / str(k)), "--shard",
                     f"{k}/{shards}"] for k in range(1, shards + 1)], f"replay --shard k/{shards}")
    parts = [digests(out / str(k)) for k in range(1, shards + 1)]
    union = {name: digest for part in parts for name, digest in part.items()}
    gate(sum(map(len, parts)) == len(union), f"replay with {shards} shards: a paper written by two shards")
    gate(union == expected, f"replay with {shards} shards: the union is not the unsharded records")
    return ran


def has_shard() -> bool:
    """Whether this build's `ledger replay` takes `--shard`."""
    shown = subprocess.run([*LEDGER, "replay", "--help"], capture_output=True, text=True, cwd=HERE.parent,
                           env={**os.environ, "COLUMNS": "200"})
    return "--shard" in shown.stdout


REBUILD = """
import json, random, sys, time
from ledger import canonical, open_ledger, replay
db, folder, as_of, count, seed = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
with open(folder + "/digests.json") as given:
    expected = json.load(given)
import hashlib
papers = sorted(name[:-5] for name in expected)
chosen = [random.Random(seed).choice(papers) for _ in range(count)]
times, wrong = [], []
with open_ledger(db) as book:
    replay(book, chosen[0], as_of)  # the first opens the store: every later one is a rebuild alone
    for paper in chosen:
        started = time.perf_counter()
        data = canonical(replay(book, paper, as_of))
        times.append((time.perf_counter() - started) * 1000)
        if hashlib.sha256(data).hexdigest() != expected[paper + ".json"]:
            wrong.append(paper)
print(json.dumps({"times": times, "wrong": wrong[:3]}))
"""


def rebuilds(db: str, folder: Path, expected: dict[str, str], count: int, seed: int) -> tuple[Ran, list[float]]:
    """One fresh process rebuilding `count` random papers' records through the public API (`ledger.replay`, what
    `replay --paper` runs), each timed alone (ms) and each compared with `replay --out`'s bytes.

    Raises:
        GateError: when a rebuild differs from the record `replay --out` wrote.
    """
    (folder / "digests.json").write_text(json.dumps(expected))
    ran = run([sys.executable, "-c", REBUILD, db, str(folder), AS_OF, str(count), str(seed)], "rebuilds")
    answer = json.loads(ran.stdout)
    gate(not answer["wrong"], f"rebuild differs from replay --out: {answer['wrong']}")
    return ran, answer["times"]


def published(db: str, out: Path, key: Path, first: bool) -> Ran:
    """`ledger publish OUT --as-of D --key K --json`; a first one leaves nothing alone, a later one writes.

    Raises:
        GateError: when it wrote nothing, or a first one left files alone.
    """
    ran = ledger(db, "publish", str(out), "--as-of", AS_OF, "--key", str(key), "--json")
    printed = json.loads(ran.stdout)
    gate(printed.get("written", 0) > 0 and (not first or printed.get("unchanged") == 0), f"publish: {printed}")
    return ran


def monitored(site: Path, vkey: Path, state: Path, entries: int, records: int | None) -> Ran:
    """`ledger monitor SITE --verifier-key V --state S --json`: consistent, `entries` new entries, and `records`
    records compared (None: at least one).

    Raises:
        GateError: when it is not consistent or the counts differ.
    """
    ran = run([*LEDGER, "monitor", str(site), "--verifier-key", str(vkey), "--state", str(state), "--json",
               "--timeout", "36000"], "monitor")
    answer = json.loads(ran.stdout)
    gate(answer.get("status") == "consistent" and answer.get("new_entries") == entries and
         (answer.get("records", 0) >= 1 if records is None else answer.get("records") == records), f"monitor: {answer}")
    return ran


# -- serving ---------------------------------------------------------------------------------------------------
def peak_of_tree(pid: int) -> int:
    """The largest peak RSS (VmHWM, bytes) among a process and its descendants, read while they run."""
    peak, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            status = Path(f"/proc/{current}/status").read_text()
            peak = max(peak, next(int(line.split()[1]) * 1024 for line in status.splitlines() if line.startswith("VmHWM:")))
            for task in Path(f"/proc/{current}/task").iterdir():
                todo += [int(child) for child in (task / "children").read_text().split()]
        except (OSError, StopIteration):
            continue  # it ended meanwhile
    return peak


def spread(port: int, paths: list[tuple[str, str]], threads: int) -> list[float]:
    """Each (path, SHA-256 of the body it must answer) asked once, by `threads` clients at once (each its own
    connection and share of the paths): every request's latency (ms).

    Raises:
        GateError: when a status or a body is not the expected one.
    """
    import http.client
    import threading

    latencies: list[float] = []
    failures: list[str] = []

    def client(mine: list[tuple[str, str]]) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        for path, digest in mine:
            started = time.perf_counter()
            connection.request("GET", path)
            response = connection.getresponse()
            body = response.read()
            latencies.append((time.perf_counter() - started) * 1000)  # list.append: atomic under the GIL
            if response.status != 200 or hashlib.sha256(body).hexdigest() != digest:
                failures.append(f"{path}: status {response.status}, {len(body)} bytes")
        connection.close()

    pool = [threading.Thread(target=client, args=(paths[i::threads],)) for i in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    gate(not failures, failures[0] if failures else "")
    return latencies


def serving(db: str, key: Path, expected: dict[str, str], probe: str, requests: int, workers: int) -> list[Row]:
    """`ledger serve --workers W` under 4 concurrent clients: one record asked `requests` times (its page cached
    after the first), and as many other records (at most every other paper) each asked once (none cached); p50,
    p99 and the server's peak RSS.

    Raises:
        GateError: when the server does not start or a body is not the record `replay --out` wrote.
    """
    from benchmarks.common import percentile
    from benchmarks.http_load import Server

    def path(paper: str) -> str:
        return f"/paper/{paper}/citation-record.json?as_of={AS_OF}"

    papers = sorted(name[:-5] for name in expected if name[:-5] != probe)
    cold = [(path(p), expected[p + ".json"]) for p in papers[:requests]]
    hot = [(path(probe), expected[probe + ".json"])]
    server = Server(Path(db), workers, key, limit=3600)
    try:
        spread(server.port, hot * 40, 4)  # warm: the modules, the connection, the probe's page
        cached = spread(server.port, hot * requests, 4)
        uncached = spread(server.port, cold, 4)
        peak = peak_of_tree(server.process.pid)
    finally:
        server.stop()
    where = f"`ledger serve --workers {workers}`, 4 concurrent clients (threads, keep-alive), every body checked"
    return [Row("serve cached", f"{where}: the probe's record JSON {requests:,} times, its page cached after the first",
                0.0, peak, len(cached), "requests", percentile(cached, 0.5), percentile(cached, 0.99)),
            Row("serve uncached", f"{where}: {len(cold):,} records' JSON, each asked once (none cached)", 0.0, peak,
                len(uncached), "requests", percentile(uncached, 0.5), percentile(uncached, 0.99))]
