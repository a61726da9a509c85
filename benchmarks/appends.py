"""Appends, ours against what a Python user would pick instead: the ledger's import path (with and without
the Merkle tree, a first import and the same batches again), the eventsourcing recorder, plain
`sqlite3.executemany` of the same rows, and our transactions' SQL alone; and the bytes on disk per event.

Written by `python -m benchmarks.run` as the section "Appends" of benchmarks/RESULTS.md. Each contender
checks its own result (a correctness gate) before its rate counts.
"""

from __future__ import annotations

import sqlite3
import statistics
import time
import uuid
from pathlib import Path

from benchmarks.common import SYNCHRONOUS, gate, import_batch, paired
from benchmarks.generate import generate
from benchmarks.peers import peer_recorder, stored_events
from ledger.log.chain import verify_entries
from ledger.storage.store import Store


def ours_append(events, batch: int, folder: Path, again: bool = False) -> float:
    """Events/s of the import path. `again`: of importing the same batches a second time, every fact present
    (each transaction is refused by the unique fact key, then runs again looking its facts up)."""
    store = Store.create(str(folder / f"ours-{uuid.uuid4().hex}.db"))
    for _ in range(2 if again else 1):  # only the last round is timed
        started, appended = time.perf_counter(), 0
        for i in range(0, len(events), batch):
            appended += import_batch(store, events[i:i + batch])
        elapsed = time.perf_counter() - started
    gate(appended == (0 if again else len(events)), f"ours: {appended} events appended")
    entries = list(store.entries())
    gate([e.seq for e in entries] == list(range(1, len(events) + 1)), "ours: sequence numbers not contiguous")
    gate(verify_entries(entries)[0] == len(events), "ours: chain does not verify")
    store.close()
    return len(events) / elapsed


class without_tree:
    """The same append path with the Merkle tree switched off, to price keeping the tree (benchmark only)."""

    def __enter__(self):
        import ledger.storage.writer as store_module

        self.saved = (store_module.grow, store_module.leaf_hash, store_module.frontier_nodes)
        store_module.grow = lambda *args: None
        store_module.leaf_hash = lambda data: b""
        store_module.frontier_nodes = lambda size: []

    def __exit__(self, *exc):
        import ledger.storage.writer as store_module

        store_module.grow, store_module.leaf_hash, store_module.frontier_nodes = self.saved


def peer_append(events, batch: int, folder: Path) -> float:
    datastore, recorder, _ = peer_recorder(folder)  # the same synchronous setting as ours (a gate)
    stored = stored_events(events)  # the same pre-encoded payloads; one aggregate per subject
    started = time.perf_counter()
    for i in range(0, len(stored), batch):
        recorder.insert_events(stored[i:i + batch])
    elapsed = time.perf_counter() - started
    count = len(recorder.select_notifications(start=1, limit=len(events) + 1))
    gate(count == len(events), f"peer: {count} rows, expected {len(events)}")
    datastore.close()
    return len(events) / elapsed


def floor_append(events, batch: int, folder: Path) -> float:
    """The same rows into the same table with plain sqlite3.executemany: no hashing, no dedupe, no guards."""
    path = folder / f"floor-{uuid.uuid4().hex}.db"
    Store.create(str(path)).close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(f"PRAGMA synchronous={SYNCHRONOUS}")
    conn.execute("DROP TRIGGER events_gap_free")
    rows = [(n, e.kind, e.subject, e.paper, e.effective_at, e.effective_key, "2026-11-29T00:00:00.000000Z",
             e.payload, b"\0" * 32, b"\0" * 32) for n, e in enumerate(events, start=1)]
    started = time.perf_counter()
    for i in range(0, len(rows), batch):
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany("INSERT INTO events (seq, kind, subject, paper, effective_at, effective_key, recorded_at, "
                         "payload, entry_hash, chain_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows[i:i + batch])
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - started
    gate(conn.execute("SELECT COUNT(*) FROM events").fetchone()[0] == len(events), "floor: rows missing")
    conn.close()
    return len(events) / elapsed


class _Recording:
    """A cursor that keeps every executemany (statement, rows) sent through it."""

    def __init__(self, cursor):
        self.cursor, self.calls = cursor, []

    def executemany(self, sql, rows):
        self.calls.append((sql, list(rows)))
        return self.cursor.executemany(sql, rows)

    def __getattr__(self, name):
        return getattr(self.cursor, name)


def sql_alone(events, batch: int, folder: Path) -> float:
    """Events/s of our transactions' SQL alone: the inserts an import sends (recorded from a real one) replayed
    into a new ledger with every row precomputed, guards on: no hashing, no tree, no Python building rows.
    What the database work of an append costs, against the peer's whole append."""
    source = Store.create(str(folder / f"recorded-{uuid.uuid4().hex}.db"))
    source.head()  # opens the connection the imports use
    source._cursor.raw = recording = _Recording(source._cursor.raw)
    transactions = []
    for i in range(0, len(events), batch):
        import_batch(source, events[i:i + batch])
        transactions.append(recording.calls)
        recording.calls = []
    source.close()
    path = folder / f"sql-{uuid.uuid4().hex}.db"
    Store.create(str(path)).close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(f"PRAGMA synchronous={SYNCHRONOUS}")
    started = time.perf_counter()
    for calls in transactions:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("SELECT seq, chain_hash, recorded_at FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        for sql, rows in calls:
            conn.executemany(sql, rows)
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - started
    conn.close()
    store = Store.open(str(path))
    entries = list(store.entries())
    gate(verify_entries(entries)[0] == len(events), "SQL alone: the replayed rows are not the chain")
    store.close()
    return len(events) / elapsed


def footprint(events, folder: Path) -> dict[str, float]:
    """Bytes on disk per event after 100-event transactions (the file after its last connection closed)."""
    sizes = {}
    for name, append in (("ours", ours_append), ("peer", peer_append), ("floor", floor_append)):
        where = folder / f"footprint-{name}"
        where.mkdir()
        append(events, 100, where)
        sizes[name] = sum(path.stat().st_size for path in where.iterdir()) / len(events)
    return sizes



NAMES = {"ours100": "ledger import path, 100 events/transaction (dedupe + chain + Merkle tree + guards)",
         "notree100": "the same without keeping the Merkle tree",
         "peer100": "eventsourcing SQLiteApplicationRecorder, 100 events/transaction",
         "floor100": "plain sqlite3.executemany, same rows and table, no hashing, 100/transaction",
         "sql100": "our transactions' SQL alone: an import's inserts replayed, rows precomputed, guards on",
         "again100": "ledger, the same batches imported again (every fact present: refused, then looked up)",
         "ours1": "ledger, 1 event/transaction (durable commit each)",
         "peer1": "eventsourcing, 1 event/transaction"}


def contenders(workload, reps: int, folder: Path) -> dict[str, list[float]]:
    """Events/s of every contender in NAMES, `reps` times each, interleaved: a slow moment hurts all alike."""
    single = workload[:1_000]
    figures: dict[str, list[float]] = {k: [] for k in NAMES}
    for _ in range(reps):
        figures["ours100"].append(ours_append(workload, 100, folder))
        with without_tree():
            figures["notree100"].append(ours_append(workload, 100, folder))
        figures["peer100"].append(peer_append(workload, 100, folder))
        figures["floor100"].append(floor_append(workload, 100, folder))
        figures["sql100"].append(sql_alone(workload, 100, folder))
        figures["again100"].append(ours_append(workload, 100, folder, again=True))
        figures["ours1"].append(ours_append(single, 1, folder))
        figures["peer1"].append(peer_append(single, 1, folder))
    return figures


def appends_section(reps: int, folder: Path, say, target, events: int = 10_000) -> None:
    """The appends table, the bytes on disk per event, and the appends' targets, on `events` generated events."""
    workload = generate(events, seed=11)
    say("## Appends (SQLite file, same file system, same synchronous setting)\n")
    say("| path | events/s (median) |\n|---|---|")
    figures = contenders(workload, reps, folder)
    for key, name in NAMES.items():
        say(f"| {name} | {statistics.median(figures[key]):,.0f} |")
    disk = footprint(workload, folder)
    say(f"\nOn disk, per event: ledger {disk['ours']:,.0f} bytes (events, fact index, paper links, Merkle "
        f"nodes), eventsourcing {disk['peer']:,.0f}, plain rows {disk['floor']:,.0f}. Importing batches whose "
        f"facts are all present runs at {paired(figures, 'again100', 'ours100'):.2f} of a first import's speed. The "
        f"database work of our appends alone (an import's inserts replayed with every row precomputed, the gap-free "
        f"guard on) runs at {paired(figures, 'sql100', 'peer100'):.2f} of the peer's whole append; our import path at "
        f"{paired(figures, 'ours100', 'sql100'):.2f} of its own SQL.")
    say()
    ratio = paired(figures, "ours100", "peer100")
    target("batched import vs the eventsourcing recorder alone (target retired by issue 16: reported)", None,
           f"{ratio:.2f}")
    for name, ours, theirs, least in (("single-event appends vs peer", "ours1", "peer1", 0.9),
                                       ("import vs executemany floor", "ours100", "floor100", 0.5),
                                       ("appends keeping the Merkle tree vs without it (reported)", "ours100",
                                        "notree100", 0.8)):
        ratio = paired(figures, ours, theirs)
        target(f"{name} (>= {least})", ratio >= least, f"{ratio:.2f}")
