"""The peers a Python user would pick instead, fed the same events and leaves as the ledger: the `eventsourcing`
SQLite recorder (appends) and `pymerkle`'s SQLite tree (leaves, inclusion and consistency proofs), both with the
ledger's journal mode and `synchronous` setting.

Both are optional installs (docs/benchmarks.md), imported where they are used.
"""

from __future__ import annotations

import random
import subprocess
import sys
import time
import uuid
from pathlib import Path

from benchmarks.common import HERE, gate, remove
from ledger.log.merkle import root
from ledger.model.events import Event
from ledger.services.proofs import prove_consistency, prove_inclusion
from ledger.storage.store import Store


def peer_recorder(folder: Path):
    from eventsourcing.sqlite import SQLiteApplicationRecorder, SQLiteDatastore

    path = folder / f"peer-{uuid.uuid4().hex}.db"
    datastore = SQLiteDatastore(str(path))
    recorder = SQLiteApplicationRecorder(datastore)
    recorder.create_table()
    with datastore.transaction(commit=False) as cursor:
        cursor.execute("PRAGMA synchronous")
        gate(cursor.fetchone()[0] == 2, "peer: synchronous is not FULL")
    return datastore, recorder, path


def stored_events(events: list[Event]) -> list:
    from eventsourcing.persistence import StoredEvent

    versions: dict[str, int] = {}
    stored = []
    for e in events:  # the same pre-encoded payloads; one aggregate per subject
        versions[e.subject] = versions.get(e.subject, 0) + 1
        stored.append(StoredEvent(originator_id=uuid.uuid5(uuid.NAMESPACE_URL, e.subject),
                                  originator_version=versions[e.subject], topic=e.kind, state=e.payload))
    return stored


def _tree(folder: Path):
    from pymerkle import SqliteTree

    tree = SqliteTree(str(folder / f"pymerkle-{uuid.uuid4().hex}.db"))
    tree.con.execute("PRAGMA journal_mode=WAL")  # the ledger's setting
    tree.con.execute("PRAGMA synchronous=FULL")
    return tree


def peer_pair(events: list[Event], leaves: list[bytes], folder: Path) -> float:
    """Events/s of what a Python user would assemble instead: the eventsourcing recorder appending the events
    and pymerkle's SQLite tree appending their leaves, each in one transaction (encoded beforehand, as ours)."""
    datastore, recorder, path = peer_recorder(folder)
    stored = stored_events(events)
    tree = _tree(folder)
    started = time.perf_counter()
    recorder.insert_events(stored)
    tree.append_entries(leaves)
    elapsed = time.perf_counter() - started
    gate(tree.get_size() == len(leaves), "pymerkle: leaves missing")
    count = len(recorder.select_notifications(start=1, limit=len(events) + 1))
    gate(count == len(events), f"peer: {count} rows, expected {len(events)}")
    tree.close()
    datastore.close()
    remove(Path(tree.dbfile))
    remove(path)
    return len(events) / elapsed


PEER_JOB = """
import sys, time, uuid, orjson
from eventsourcing.persistence import StoredEvent
from eventsourcing.sqlite import SQLiteApplicationRecorder, SQLiteDatastore
datastore = SQLiteDatastore(sys.argv[2])
recorder = SQLiteApplicationRecorder(datastore)
recorder.create_table()
versions, stored = {}, []
for line in open(sys.argv[1], "rb"):
    event = orjson.loads(line)
    subject = orjson.dumps(event["payload"].get("observation_id") or event["payload"].get("arxiv_id")
                           or [event["payload"].get("paper"), event["payload"].get("source")])
    versions[subject] = versions.get(subject, 0) + 1
    stored.append(StoredEvent(originator_id=uuid.uuid5(uuid.NAMESPACE_URL, subject.decode()),
                              originator_version=versions[subject], topic=event["kind"],
                              state=orjson.dumps(event["payload"], option=orjson.OPT_SORT_KEYS)))
recorder.insert_events(stored)
print(len(recorder.select_notifications(start=1, limit=len(stored) + 1)))
"""


def peer_job(lines: Path, expected: int, folder: Path) -> float:
    """Events/s of the peer's whole job, process start to exit: the same file decoded with orjson (no checks)
    and appended by the eventsourcing recorder in one transaction."""
    db = folder / f"job-{uuid.uuid4().hex}.db"
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", PEER_JOB, str(lines), str(db)], capture_output=True, cwd=HERE.parent)
    elapsed = time.perf_counter() - started
    remove(db)
    gate(done.returncode == 0 and done.stdout.split() == [str(expected).encode()], f"peer job: {done.stderr!r}")
    return expected / elapsed


def _rate(prove, asked: list[tuple[int, int]]) -> float:
    started = time.perf_counter()
    for first, second in asked:
        prove(first, second)
    return len(asked) / (time.perf_counter() - started)


def proof_rates(ledger: Path, leaves: list[bytes], folder: Path, count: int = 200, seed: int = 5) -> dict[str, float]:
    """Proofs/s of ours (read from the store, as `ledger prove` builds them) and pymerkle's (its SQLite tree of
    the same leaves, a fresh tree object each time so its cache starts cold as ours does), inclusion and
    consistency, at the same tree sizes. Gate: both trees have the same root at every size asked."""
    rng = random.Random(seed)
    n = len(leaves)
    sizes = [n, n // 2 + 1, n // 3 + 7]
    inclusion = [(rng.randrange(1, size + 1), size) for size in sizes for _ in range(count // len(sizes))]
    consistency = [(rng.randrange(1, size), size) for size in sizes for _ in range(count // len(sizes))]
    store = Store.open(str(ledger))
    tree = _tree(folder)
    tree.append_entries(leaves)
    tree_path = tree.dbfile
    tree.close()
    from pymerkle import SqliteTree

    peer = SqliteTree(tree_path)
    with store.reading() as cursor:
        nodes = cursor.node_source(n)  # every size asked is at most n
        for size in sizes:
            gate(root(nodes, size) == peer.get_root(size), f"pymerkle's root differs from ours at size {size}")
    peer.close()
    rates = {"ours inclusion": _rate(lambda seq, size: prove_inclusion(store, seq, size), inclusion),
             "ours consistency": _rate(lambda old, new: prove_consistency(store, old, new), consistency)}
    for kind, asked in (("inclusion", inclusion), ("consistency", consistency)):
        peer = SqliteTree(tree_path)  # a fresh tree object: its cache starts cold, as ours does
        prove = peer.prove_inclusion if kind == "inclusion" else peer.prove_consistency
        rates[f"pymerkle {kind}"] = _rate(prove, asked)
        peer.close()
    store.close()
    remove(Path(tree_path))
    return rates

