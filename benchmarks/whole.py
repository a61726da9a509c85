"""Whole commands, as a user runs them, against the in-process append path and against the peers.

Every contender here is timed from process start to exit when it is a command (a subprocess), and on the
same events, in the same run, interleaved with the others. What each row includes is said in its name:
decoding (JSON to events), checks (shapes, timestamps, digests, the record's byte-for-byte rebuild),
append (chain, fact index, paper links, guards), tree (the RFC 9162 Merkle tree).

The peers (benchmarks/peers.py) run beside them on the same events and the same leaves.
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import NamedTuple

from benchmarks.common import HERE, command, gate, new_ledger, remove
from benchmarks.corpus import AS_OF, write_corpus
from ledger.log.chain import entry_bytes, verify_entries
from ledger.model.events import Event
from ledger.importing.importer import Parsed, import_inputs, parse_input
from ledger.storage.store import Store


class Corpus(NamedTuple):
    lines: Path  # event lines: an export with the hashes stripped
    records: list[Path]  # published records, one file each
    ledger: Path  # the ledger they came from (for replay)
    line_events: list[Event]  # the same facts, decoded beforehand (the in-process path's input)
    record_events: list[Event]


def corpus(folder: Path, papers: int, records: int) -> Corpus:
    lines, record_dir, ledger, _, written = write_corpus(folder, papers)
    gate(written >= records, f"corpus: {written} records, {records} wanted")
    files = sorted(record_dir.iterdir())[:records]
    line_events = [e for _, e in parse_input(str(lines), lines.read_bytes()).events]
    record_events = [e for f in files for _, e in parse_input(str(f), f.read_bytes()).events]
    return Corpus(lines, files, ledger, line_events, record_events)


def in_process(events: list[Event], folder: Path) -> float:
    """Events/s of the append path alone (dedupe, chain, tree, SQL), in one transaction as a command runs it,
    from events already decoded and checked in memory."""
    path = new_ledger(folder)
    store = Store.open(str(path))
    started = time.perf_counter()
    appended = import_inputs(store, [Parsed("bench", events=[(0, e) for e in events])]).appended
    elapsed = time.perf_counter() - started
    store.close()
    remove(path)
    gate(appended == len(events), f"in process: {appended} of {len(events)} appended")
    return len(events) / elapsed


def startup(folder: Path) -> float:
    """Seconds of `ledger head` on a new, empty ledger, process start to exit: what every command pays
    before its own work (the interpreter, the modules, the file opened)."""
    db = new_ledger(folder)
    elapsed, _, _ = command(["--db", str(db), "head"])
    remove(db)
    return elapsed


CEILING_LOOP = "x = 0\nfor i in range(12_000_000):\n    x += i * i\n"


def ceiling(jobs: int = 2) -> float:
    """The machine's own speed-up for `jobs` processes over one, each running the same pure Python arithmetic
    (nothing shared, no I/O): what no `--jobs` can beat on this machine at this moment (the two cores of this
    shared host gave from 1.3 to 2.6 within one run)."""
    def run(n: int) -> float:
        started = time.perf_counter()
        running = [subprocess.Popen([sys.executable, "-c", CEILING_LOOP]) for _ in range(n)]
        gate(all(p.wait() == 0 for p in running), "ceiling: a loop failed")
        return time.perf_counter() - started

    return jobs * run(1) / run(jobs)


def import_command(files: list[Path], jobs: int, expected: int, folder: Path) -> tuple[float, int]:
    """Events/s and peak RSS of `ledger import --jobs N FILES` into a new ledger, process start to exit."""
    db = new_ledger(folder)
    elapsed, out, rss = command(["--db", str(db), "import", "--jobs", str(jobs), *map(str, files)])
    gate(out.startswith(f"appended {expected} events (0 already present)".encode()), f"import: {out!r}")
    store = Store.open(str(db))
    gate(verify_entries(store.entries())[0] == expected, "import: the chain does not verify")
    store.close()
    remove(db)
    return expected / elapsed, rss


def grown(lines: Path, times: int, folder: Path) -> Path:
    """The event lines `times` over, each further copy's papers renamed (2000.* to 2001.*, 2002.*, ..., and the
    probe 2999.* to 2998.*, ...): a corpus `times` as large, of the same shape, every fact new."""
    data = lines.read_bytes()
    path = folder / f"events-x{times}.jsonl"
    with path.open("wb") as out:
        out.write(data)
        for copy in range(1, times):
            out.write(data.replace(b"2000.", f"{2000 + copy}.".encode()).replace(b"2999.", f"{2999 - copy}.".encode()))
    return path


def growing_imports(lines: Path, count: int, folder: Path, times: int = 4) -> list[tuple[str, int, float, int]]:
    """(what, lines read, seconds, peak RSS bytes) of `ledger import` of the event lines and of the same corpus `times`
    as large (`grown`): from a file, piped into stdin, with two jobs, and imported over a ledger that holds
    the first `count` lines already (an export that has grown since it was last imported). One run each."""
    large = grown(lines, times, folder)
    size = f"{large.stat().st_size / 1e6:,.0f} MB"
    runs = []

    def run(what: str, args: list[str], appended: int, present: int, db: Path | None = None,
            stdin: Path | None = None) -> None:
        db = db or new_ledger(folder)
        elapsed, out, rss = command(["--db", str(db), "import", *args], stdin)
        gate(out.startswith(f"appended {appended} events ({present} already present)".encode()), f"{what}: {out!r}")
        remove(db)
        runs.append((what, appended + present, elapsed, rss))

    run(f"`ledger import events.jsonl` ({count:,} lines, {lines.stat().st_size / 1e6:,.0f} MB), 1 job", [str(lines)],
        count, 0)
    run(f"the same corpus {times} times as large ({times * count:,} lines, {size}), 1 job", [str(large)],
        times * count, 0)
    run("the same, `--jobs 2`", ["--jobs", "2", str(large)], times * count, 0)
    run("the same, piped into `ledger import -`, 1 job", ["-"], times * count, 0, stdin=large)
    holding = new_ledger(folder)
    command(["--db", str(holding), "import", str(lines)])
    run(f"the same, into a ledger holding its first {count:,} lines already, 1 job", [str(large)],
        (times - 1) * count, count, db=holding)
    large.unlink()
    return runs


def replay_command(ledger: Path, jobs: int, folder: Path, papers: int | None = None) -> tuple[float, int, int]:
    """Records/s, records written and peak RSS of `ledger replay --as-of D --out DIR --jobs N`."""
    out = folder / f"replay-{uuid.uuid4().hex}"
    elapsed, _, rss = command(["--db", str(ledger), "replay", "--as-of", AS_OF, "--out", str(out), "--jobs", str(jobs)])
    written = sum(1 for _ in out.iterdir())
    gate(papers is None or written == papers, f"replay: {written} records, {papers} expected")
    for path in out.iterdir():
        path.unlink()
    out.rmdir()
    return written / elapsed, written, rss


def leaves_of(events: list[Event], folder: Path) -> tuple[list[bytes], Path]:
    """The Merkle leaves (entry bytes) of these events as the ledger appends them, and that ledger."""
    path = new_ledger(folder)
    store = Store.open(str(path))
    import_inputs(store, [Parsed("leaves", events=[(0, e) for e in events])])
    leaves = [entry_bytes(e.seq, e.kind, e.effective_at, e.recorded_at, e.payload) for e in store.entries()]
    store.close()
    return leaves, path


def profile_import(files: list[Path], folder: Path, top: int = 12) -> list[str]:
    """The top functions (own time) of a whole `ledger import` under cProfile, as table rows: what the
    command spends its time on (cProfile inflates small Python functions; the order is what it is for)."""
    import pstats

    db, out = new_ledger(folder), folder / f"profile-{uuid.uuid4().hex}.prof"
    done = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(out), "-m", "ledger.cli", "--db", str(db), "import",
                           *map(str, files)], capture_output=True, cwd=HERE.parent)
    gate(done.returncode == 0, f"profiled import: {done.stderr!r}")
    stats = pstats.Stats(str(out))
    total = stats.total_tt
    rows = []
    for (path, line, name), (_, calls, own, cumulative, _) in sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:top]:
        where = f"{Path(path).name}:{line}({name})" if path != "~" else name
        rows.append(f"| `{where}` | {calls:,} | {own:.2f} | {cumulative:.2f} | {100 * own / total:.0f}% |")
    out.unlink()
    remove(db)
    return rows
