"""Whole commands, as a user runs them, against the in-process append path and against the peers.

Every contender here is timed from process start to exit when it is a command (a subprocess), and on the
same events, in the same run, interleaved with the others. What each row includes is said in its name:
decoding (JSON to events), checks (shapes, timestamps, digests, the record's byte-for-byte rebuild),
append (chain, fact index, paper links, guards), tree (the RFC 9162 Merkle tree).

The peers (benchmarks/peers.py) run beside them on the same events and the same leaves.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import NamedTuple

from benchmarks.common import AS_OF, HERE, command, compiled, gate, new_ledger, paired, remove
from benchmarks.corpus import write_corpus
from benchmarks.peers import peer_job, peer_pair, proof_rates
from ledger.importing.importer import Parsed, import_inputs, parse_input
from ledger.log.chain import entry_bytes, verify_entries
from ledger.model.events import Event
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


def whole_figures(c: Corpus, leaves: list[bytes], leaves_ledger: Path, reps: int, papers: int,
                  folder: Path) -> tuple[dict[str, list[float]], dict[str, int]]:
    """Every whole-command contender's rate, `reps` times each, interleaved so a slow moment hurts every
    contender alike; and the peak RSS of those that report one."""
    lines, records = len(c.line_events), len(c.record_events)
    figures: dict[str, list[float]] = {}
    rss: dict[str, int] = {}

    def add(key: str, value) -> None:
        if isinstance(value, tuple):
            value, rss[key] = value[0], value[-1]
        figures.setdefault(key, []).append(value)

    for _ in range(reps):
        add("inproc lines", in_process(c.line_events, folder))
        add("import lines 1", import_command([c.lines], 1, lines, folder))
        add("import lines 2", import_command([c.lines], 2, lines, folder))
        add("inproc records", in_process(c.record_events, folder))
        add("import records 1", import_command(c.records, 1, records, folder))
        add("import records 2", import_command(c.records, 2, records, folder))
        add("peer pair", peer_pair(c.line_events, leaves, folder))
        add("peer job", peer_job(c.lines, lines, folder))
        add("replay 1", replay_command(c.ledger, 1, folder, papers))
        add("replay 2", replay_command(c.ledger, 2, folder, papers))
        for name, rate in proof_rates(leaves_ledger, leaves, folder).items():
            add(name, rate)
        add("startup", startup(folder))
        add("ceiling", ceiling())
    return figures, rss


def whole_rows(c: Corpus, papers: int, leaves: int) -> tuple[tuple[str, str, str], ...]:
    """(figure, what it includes, unit) of each row of the whole-commands table."""
    lines, records = len(c.line_events), len(c.record_events)
    return (
        ("inproc lines", f"in-process append path, the {lines:,} events decoded beforehand, one transaction (append, tree; "
                         "no start-up, no decoding, no checks)", "events/s"),
        ("import lines 1", "`ledger import events.jsonl`, 1 job (start-up, decoding, checks, append, tree)", "events/s"),
        ("import lines 2", "the same, `--jobs 2`", "events/s"),
        ("inproc records", f"in-process append path, the records' {records:,} events decoded beforehand (append, tree; "
                           "no decoding, no checks, no rebuild)", "events/s"),
        ("import records 1", f"`ledger import` of the {len(c.records):,} records, 1 job (start-up, decoding, checks, "
                             "every digest, the byte-for-byte rebuild, append, tree)", "events/s"),
        ("import records 2", "the same, `--jobs 2`", "events/s"),
        ("peer pair", "eventsourcing recorder + pymerkle SQLite tree, the same events and leaves encoded beforehand, "
                      "one transaction each (append, tree; no start-up, no decoding, no checks)", "events/s"),
        ("peer job", "the peer's whole job: the same event lines decoded with orjson, appended by the eventsourcing "
                     "recorder, process start to exit (start-up, decoding, append; no checks, no tree)", "events/s"),
        ("replay 1", f"`ledger replay --as-of D --out DIR`, every paper ({papers:,}), 1 job (start-up, rebuild, "
                     "digests, files)", "records/s"),
        ("replay 2", "the same, `--jobs 2`", "records/s"),
        ("ours inclusion", f"inclusion proofs, ours, from the store (tree of {leaves:,} leaves and two smaller sizes)",
         "proofs/s"),
        ("pymerkle inclusion", "inclusion proofs, pymerkle's SQLite tree, the same leaves and sizes", "proofs/s"),
        ("ours consistency", "consistency proofs, ours, the same sizes", "proofs/s"),
        ("pymerkle consistency", "consistency proofs, pymerkle", "proofs/s"),
    )


def whole_commands(args, folder: Path, say, target) -> None:
    """`ledger import` and `ledger replay` as a user runs them, against the in-process append path on the same
    events and against the peers (benchmarks/peers.py), interleaved, paired ratios of medians."""
    compiled()
    c = corpus(folder / "corpus", args.papers, args.records)
    leaves, leaves_ledger = leaves_of(c.line_events, folder)
    figures, rss = whole_figures(c, leaves, leaves_ledger, args.reps, args.papers, folder)
    say(f"## Whole commands (SQLite file, process start to exit) against the append path and the peers\n\n"
        f"Corpus: the generator's first {args.papers:,} papers. Event lines: their ledger's export with the hashes "
        f"stripped, {len(c.line_events):,} lines (every fact with its history). Records: {len(c.records):,} of their "
        f"published records as of {AS_OF} ({len(c.record_events):,} events), one file each.\n")
    say("| what (includes) | rate (median) | largest process, max RSS MB |\n|---|---|---|")
    for key, name, unit in whole_rows(c, args.papers, len(leaves)):
        say(f"| {name} | {statistics.median(figures[key]):,.0f} {unit} | {f'{rss[key] / 1e6:,.0f}' if key in rss else ''} |")
    say()
    for what, files in (("event lines", [c.lines]), (f"{len(c.records):,} records", c.records)):
        say(f"Where `ledger import` of the {what} spends its time (cProfile, one job; own time, top 12):\n")
        say("| function | calls | own s | with callees s | share of own time |\n|---|---|---|---|---|")
        for row in profile_import(files, folder):
            say(row)
        say()
    whole_targets(figures, c, args.papers, say, target)
    runs = growing_imports(c.lines, len(c.line_events), folder)
    say("\nMemory of `ledger import` as its input grows (one run each; the larger corpus is the event lines with "
        "each further copy's papers renamed, every fact new; start-up, decoding, checks, append, tree):\n")
    say("| import | seconds | lines/s | largest process, max RSS MB |\n|---|---|---|---|")
    for what, read, elapsed, peak in runs:
        say(f"| {what} | {elapsed:.1f} | {read / elapsed:,.0f} | {peak / 1e6:,.0f} |")
    say()
    target("import memory, the corpus 4 times as large vs as it is, one job (reported)", None,
           f"{runs[1][3] / runs[0][3]:.2f}")


def whole_targets(figures: dict[str, list[float]], c: Corpus, papers: int, say, target) -> None:
    """The whole commands' verdicts, and the start-up's share of a one-job import beside the most two jobs allow."""
    records = len(c.record_events)
    for name, ours, theirs, least in (
            ("import of event lines, whole command, vs the in-process append path", "import lines 1", "inproc lines", 0.5),
            ("import of published records, whole command (digests, rebuild), vs the in-process append path",
             "import records 1", "inproc records", 0.4),
            (f"import --jobs 2 vs --jobs 1, {len(c.records):,} records", "import records 2", "import records 1", 1.6),
            ("in-process append path vs eventsourcing recorder + pymerkle", "inproc lines", "peer pair", 1.0),
            ("inclusion proofs vs pymerkle", "ours inclusion", "pymerkle inclusion", 10.0),
            ("consistency proofs vs pymerkle", "ours consistency", "pymerkle consistency", 10.0)):
        ratio = paired(figures, ours, theirs)
        target(f"{name} (>= {least:g})", ratio >= least, f"{ratio:.2f}")
    for name, ours, theirs in (("import --jobs 2 vs --jobs 1, event lines", "import lines 2", "import lines 1"),
                               (f"replay --out --jobs 2 vs --jobs 1, {papers:,} papers (start-up "
                                f"{statistics.median(figures['startup']) * statistics.median(figures['replay 1']) / papers:.0%} "
                                "of the one-job command; the target is judged at corpus scale, with the ledger sizes)",
                                "replay 2", "replay 1"),
                               ("import of event lines, whole command, vs the peer's whole job", "import lines 1",
                                "peer job")):
        target(f"{name} (reported)", None, f"{paired(figures, ours, theirs):.2f}")
    # What one writer allows: start-up and the append path run in the writer alone, whatever the jobs; of one
    # job's time they are the share s. The workers decode while the writer appends, so 2 jobs take at least
    # s of one job's time, and at least 1 / c of it on a machine whose ceiling is c: at best min(1 / s, c).
    shares = [(start + records / inproc) / (records / whole) for start, inproc, whole in
              zip(figures["startup"], figures["inproc records"], figures["import records 1"])]
    bounds = [min(1 / share, top) for share, top in zip(shares, figures["ceiling"])]
    say(f"Start-up (`ledger head` on an empty ledger, process start to exit): {statistics.median(figures['startup']):.2f} s "
        f"(median). Of the one-job import of the {len(c.records):,} records, start-up and the append path (which one "
        f"writer runs, whatever the jobs) take {statistics.median(shares):.0%} (median; each repetition "
        f"{', '.join(f'{x:.0%}' for x in shares)}).\n")
    target(f"import --jobs 2 vs --jobs 1, {len(c.records):,} records: the most one writer allows beside workers "
           "that decode while it appends, min(1 / s, the machine's ceiling), with s that share (reported)", None,
           f"{statistics.median(bounds):.2f} ({', '.join(f'{x:.2f}' for x in bounds)})")
    target("the machine's own ceiling: 2 processes of pure Python arithmetic vs 1, nothing shared (reported)", None,
           f"{statistics.median(figures['ceiling']):.2f} ({', '.join(f'{x:.2f}' for x in figures['ceiling'])})")
